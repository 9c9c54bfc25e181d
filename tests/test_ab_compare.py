"""``zoo.compare --run A --run B``: two configurations timed in alternation and compared round
by round, with one significance rule for the marks and the legend."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from profiling.reports.comparison import FORWARD
from profiling.reports.comparison_text import format_comparison
from profiling.statistics.paired import is_change, paired_significance
from zoo.tools.ab_compare import run_ab
from zoo.options import ConfigError

A_TIMES = [10.0, 11.0, 9.0, 10.0, 12.0, 10.0, 11.0, 9.0, 10.0, 10.0]


def _times(stages: dict) -> pd.DataFrame:
    return pd.DataFrame([{"stage": name, "call_index": 0, "repeat": r, "cpu_time_ms": value}
                         for name, values in stages.items() for r, value in enumerate(values)])


def test_paired_rounds_find_a_change_that_drifting_rounds_would_hide():
    # the machine drifts by 20% between rounds; within a round B is 10% slower in "slow",
    # 3% in "slight", equal in "same"
    a = _times({"slow": A_TIMES, "slight": A_TIMES, "same": A_TIMES})
    b = _times({"slow": [1.1 * t for t in A_TIMES], "slight": [1.03 * t for t in A_TIMES],
                "same": A_TIMES})
    keys = [("slow", 0), ("slight", 0), ("same", 0)]
    table = paired_significance(keys, a, b, "cpu_time_ms", (A_TIMES, A_TIMES))
    assert table.attrs["confidence"] == pytest.approx(1 - 0.05 / 4)  # 3 stages + forward
    assert list(table["time_ratio"]) == pytest.approx([1.0, 1.1, 1.03, 1.0])
    assert list(table["significant"]) == [False, True, False, False]  # 3% is under 5%
    assert table.loc[1, "time_ratio_ci95_low"] == pytest.approx(1.1)


def test_a_noisy_stage_is_not_called_changed():
    generator = np.random.default_rng(0)
    noisy = list(10 * generator.lognormal(0, 0.3, 10))
    table = paired_significance([("x", 0)], _times({"x": A_TIMES}), _times({"x": noisy}),
                                "cpu_time_ms", None)
    low, high = table.loc[0, ["time_ratio_ci95_low", "time_ratio_ci95_high"]]
    assert low < 1 < high and not table.loc[0, "significant"]


def test_one_rule_for_the_mark_and_the_legend():
    assert not is_change(0.761, 0.70, 0.80, 0.25)  # -23.9% is not "at least 25%"
    assert is_change(0.75, 0.70, 0.80, 0.25) and is_change(1.25, 1.2, 1.3, 0.25)
    assert not is_change(1.3, 0.9, 1.6, 0.05)  # the interval holds 1


def test_too_few_rounds_give_no_interval():
    # 5 rounds: the range covers 1 - 2**-4 = 93.75%, less than the 95% asked
    table = paired_significance([("x", 0)], _times({"x": A_TIMES[:5]}),
                                _times({"x": [2 * t for t in A_TIMES[:5]]}), "cpu_time_ms", None)
    assert table.loc[0, "time_ratio"] == 2.0 and not table.loc[0, "significant"]
    assert np.isnan(table.loc[0, "time_ratio_ci95_low"])


FAST = "model=torchvision model.arch=resnet18 input.size=[32,32] run.warmup=0"


@pytest.fixture(scope="module")
def ab(tmp_path_factory):
    out = tmp_path_factory.mktemp("ab") / "cmp"
    return run_ab([FAST, FAST + " model.in_channels=1"], out, rounds=10)


def test_both_runs_and_the_table_are_written_round_by_round(ab):
    table, a, b, out = ab
    assert sorted(p.name for p in out.iterdir()) == [".stagezoo", "a", "b", "compare.csv"]
    for record in (a, b):
        times = pd.read_csv(record.directory / "times.csv")
        assert sorted(times[times["stage"] == "conv1"]["repeat"]) == list(range(10))
        assert len(record.meta["forward_ms"]) == 10
    assert record.meta["config"]["model"]["in_channels"] == 1
    saved = pd.read_csv(out / "compare.csv")
    assert saved["stage"].iloc[0] == FORWARD and "significant" in saved
    rows = saved.set_index("stage")
    # conv1 reads a 3-channel image in A, a 1-channel one in B: exact payload
    assert rows.loc["conv1", "in_bytes_a"] == 3 * rows.loc["conv1", "in_bytes_b"] == 3 * 4 * 32 * 32
    assert saved["confidence"].iloc[0] == pytest.approx(1 - 0.05 / len(saved))
    lines = format_comparison(table, a, b).splitlines()
    assert any("out MB B" in line and "CI" in line for line in lines)
    assert max(len(line) for line in lines if not line.startswith(("A: ", "B: "))) <= 120
    assert f"{saved['confidence'].iloc[0]:.1%} CI" in "\n".join(lines)


def test_a_folder_in_use_and_an_untimed_side_are_refused(ab, tmp_path):
    _, _, _, out = ab
    with pytest.raises(ConfigError, match="already holds files; choose another --out"):
        run_ab([FAST, FAST], out, rounds=10)
    with pytest.raises(ConfigError, match="--run B measures no time"):
        run_ab([FAST, FAST + " device=meta"], tmp_path / "x", rounds=10)
    with pytest.raises(ConfigError, match="--run A: unknown option"):
        run_ab(["inptu.size=[3,3]", FAST], tmp_path / "x", rounds=10)
    assert not (tmp_path / "x").exists()
