"""``zoo.compare --run A --run B`` when a side names a runtime: each side prepared once, plain
forwards interleaved round by round, compared with the paired statistics of torch vs torch;
and the interleaving and the ratio entry that the runtime's own speed figures use."""

from __future__ import annotations

import re
import sys

import numpy as np
import pandas as pd
import pytest

from cli_runner import run_main
from profiling.reports.comparison import FORWARD, executed_as
from profiling.reports.comparison_text import format_comparison
from profiling.statistics.paired import interleaved_ms, ratio_entry, ratio_value
from zoo.tools import compare

FAST = "model=torchvision model.arch=resnet18 input.size=[32,32] run.warmup=0"
INT8 = FAST + " run.runtime=onnxruntime run.dtype=int8"


def test_interleaved_rounds_rotate_the_order_and_skip_the_warmup():
    calls = []

    def timer(side):
        def timed():
            calls.append(side)
            return float(len(calls))  # the call's position: which ones were kept shows
        return timed

    times = interleaved_ms([timer("a"), timer("b")], rounds=3, warmup=1)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert times == [[4.0, 5.0, 8.0], [3.0, 6.0, 7.0]]  # the warm-up round (1, 2) dropped


def test_a_ratio_entry_is_the_median_per_round_ratio_with_its_interval():
    a = [10.0, 20.0, 10.0, 40.0, 10.0, 10.0, 20.0, 10.0, 10.0, 10.0]
    b = [2 * v for v in a[:9]] + [30.0]  # B twice A in 9 rounds, 3x in the last
    entry = ratio_entry(a, b)
    assert entry["ratio"] == 2.0 and entry["rounds"] == 10 and entry["confidence"] == 0.95
    # 95% order-statistics interval of the median of 10: the 2nd and 9th smallest ratios
    assert (entry["low"], entry["high"]) == (2.0, 2.0)
    few = ratio_entry(a[:3], b[:3])  # 3 rounds: even [min, max] covers only 75%
    assert few == {"ratio": 2.0, "low": None, "high": None, "confidence": 0.95, "rounds": 3}
    assert ratio_value(entry) == 2.0 and ratio_value(1.25) == 1.25 and ratio_value(None) is None


def test_a_comparison_says_what_each_side_executed():
    assert executed_as({"deployment": {"runtime": "torch", "dtype": "bfloat16"}}) == \
        "torch bfloat16"
    assert executed_as({"deployment": {"runtime": "onnxruntime", "dtype": "int8",
                                       "executed_precision": {"int8": 0.7,
                                                              "float32": 0.3}}}) == \
        "onnxruntime int8 70% + float32 30% of node time"
    assert executed_as({"deployment": {"runtime": "openvino", "dtype": "float32",
                                       "executed_precision": {"bfloat16": 1.0}}}) == \
        "openvino bfloat16"
    assert executed_as({}) == "torch float32"  # an older run without a deployment entry


@pytest.mark.parametrize("side, line", [
    ("run.runtime=tensorrt", "error: --run B: run.runtime='tensorrt' is not accepted; "
                             "accepted: one of torch, onnxruntime, openvino"),
    ("run.runtime=onnxruntime", "error: --run B: run.runtime=onnxruntime needs onnx, "
                                "which is not installed; install it with pip install "
                                "'stagezoo[runtimes]'"),
])
def test_an_unknown_runtime_or_a_missing_extra_is_one_line_and_exit_2(side, line, tmp_path,
                                                                       capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for package in ("onnx", "onnxscript", "onnxruntime"):  # as if the extra were not installed
        monkeypatch.setitem(sys.modules, package, None)
    outcome = run_main(compare.main, ["--run", FAST, "--run", f"{FAST} {side}",
                                      "--out", str(tmp_path / "ab")], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line == line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.runtimes
def test_torch_against_onnxruntime_int8_is_one_paired_comparison(tmp_path, monkeypatch):
    from profiling.runtimes import backends, paired_speed, profile  # noqa: F401  (bound first)
    from zoo.tools.ab_compare import run_ab

    opened = []
    make_backend = backends.make_backend

    def counted(*args, **kwargs):  # the sessions the rounds open (the profiled run's apart)
        opened.append(args[4])
        return make_backend(*args, **kwargs)

    monkeypatch.setattr(backends, "make_backend", counted)
    table, a, b, out = run_ab([FAST, INT8], tmp_path / "cmp", rounds=10)
    assert opened == [False]  # one session, its profiler off, kept open for every round
    forward_a, forward_b = (np.array(r.meta["forward_ms"]) for r in (a, b))
    assert len(forward_a) == len(forward_b) == 10
    saved = pd.read_csv(out / "compare.csv")
    head = saved.iloc[0]
    assert head["stage"] == FORWARD
    assert head["time_ratio"] == pytest.approx(np.median(forward_b / forward_a))
    ratios = np.sort(forward_b / forward_a)
    assert ratios[0] <= head["time_ratio_ci95_low"] <= head["time_ratio"] \
        <= head["time_ratio_ci95_high"] <= ratios[-1]
    executed = re.compile(r"onnxruntime int8( \d+% \+ float32 \d+% of node time)?")
    assert head["executed_a"] == "torch float32" and executed.fullmatch(head["executed_b"])
    assert b.meta["deployment"]["ab_session_settings"] == {
        "session.intra_op.allow_spinning": "0"}
    assert "ab_session_settings" not in a.meta["deployment"]
    for record in (a, b):  # stage times: the one profiled forward; the rounds time no stage
        assert set(pd.read_csv(record.directory / "times.csv")["repeat"]) == {0}
    lines = format_comparison(table, a, b).splitlines()
    assert lines[:2] == [f"A: {out / 'a'} (torch float32)",
                         f"B: {out / 'b'} ({head['executed_b']})"]
