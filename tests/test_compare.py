"""zoo.compare: two real runs, and the comparison table's arithmetic."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from profiling.reports.comparison import compare_stages, config_differences
from zoo.tools.job import run_profile
from zoo.tools.composition import compose_config

FAST = ["model=torchvision", "model.arch=resnet18", "input.size=[32,32]", "run.warmup=0",
        "run.repeats=1"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for name, channels in (("rgb", 3), ("gray", 1)):
        cfg = compose_config(FAST + [f"model.in_channels={channels}"])
        run_profile(cfg, root / name, print_summary=False)
    return root / "rgb", root / "gray"


@pytest.mark.slow
def test_compare_two_real_runs(runs, tmp_path, capsys):
    from zoo.tools.compare import main

    main([str(runs[0]), str(runs[1]), "--out", str(tmp_path / "cmp.csv")])
    printed = capsys.readouterr().out
    assert "model.in_channels: 3 -> 1" in printed
    # conv1 of resnet18 has 64 x C x 7 x 7 weights: 9408 for RGB, 3136 for gray.
    assert "parameters: 11689512 -> 11683240" in printed
    table = pd.read_csv(tmp_path / "cmp.csv").set_index("stage")
    assert table.loc["conv1", "in_bytes_a"] == 3 * 32 * 32 * 4
    assert table.loc["conv1", "in_bytes_b"] == 32 * 32 * 4
    assert table.loc["conv1", "in_bytes_ratio"] == pytest.approx(1 / 3)
    assert table.loc["conv1", "in_bytes_diff"] == -2 * 32 * 32 * 4
    assert table.loc["layer1", "out_bytes_ratio"] == 1.0
    assert (table["present"] == "both").all()
    assert "cpu_time_ms_median_diff" in table


def test_stages_are_matched_by_name_and_call():
    a = pd.DataFrame({"stage": ["x", "y", "y"], "call_index": [0, 0, 1], "kind": "stage",
                      "depth": 0, "order": [0, 1, 2], "out_bytes": [10, 20, 30],
                      "flops": [100, 0, 50]})
    b = pd.DataFrame({"stage": ["y", "z"], "call_index": [0, 0], "kind": "stage", "depth": 0,
                      "order": [0, 1], "out_bytes": [40, 5]})
    table = compare_stages(a, b)
    assert list(zip(table["stage"], table["call_index"])) == [("x", 0), ("y", 0), ("y", 1),
                                                               ("z", 0)]
    assert list(table["present"]) == ["a only", "both", "a only", "b only"]
    assert table.loc[1, "out_bytes_ratio"] == 2.0
    assert table.loc[1, "out_bytes_diff"] == 20
    # FLOPs only in A: B's side is empty, not zero.
    assert table["flops_b"].isna().all() and table.loc[0, "flops_a"] == 100
    assert pd.isna(table.loc[1, "flops_ratio"])


def test_other_rows_are_compared_under_their_parents():
    """``encoder/other`` follows encoder's last stage, not the last stage of the forward, in
    the terminal's comparison and on the page alike (both print compare_stages' rows)."""
    stages = pd.DataFrame({
        "stage": ["encoder", "conv", "encoder/other", "head", "other"],
        "kind": ["stage", "stage", "other", "stage", "other"],
        "parent": ["", "encoder", "encoder", "", ""], "depth": [0, 1, 1, 0, 0],
        "call_index": 0, "order": [0, 1, 3, 2, 4], "out_bytes": [8, 8, 0, 4, 0]})
    table = compare_stages(stages, stages.iloc[[0, 1, 3, 2, 4]])
    assert list(table["stage"]) == ["encoder", "conv", "encoder/other", "head", "other"]
    assert (table["present"] == "both").all()


def test_config_differences_name_the_changed_keys():
    a = {"model": {"name": "gmflow", "in_channels": 3}, "input": {"size": [8, 8]}}
    b = {"model": {"name": "gmflow", "in_channels": 1}, "input": {"size": [8, 8]}}
    assert config_differences(a, b) == {"model.in_channels": (3, 1)}


def _run_folder(root, name, times_ms: dict, forward_ms: list, noise=None):
    """A run directory with stages.csv, times.csv and meta.json from synthetic repeats."""
    from profiling.reports import read_run
    from profiling.statistics.intervals import median_interval

    folder = root / name
    folder.mkdir()
    rows, repeats = [], []
    for order, (stage_name, values) in enumerate(times_ms.items()):
        low, high = median_interval(values)
        rows.append({"stage": stage_name, "call_index": 0, "kind": "stage", "depth": 0,
                     "order": order, "in_bytes": 0, "out_bytes": 1000 * (order + 1),
                     "cpu_time_ms_median": float(pd.Series(values).median()),
                     "cpu_time_ms_median_ci95_low": low, "cpu_time_ms_median_ci95_high": high})
        repeats += [{"stage": stage_name, "call_index": 0, "repeat": i, "cpu_time_ms": v}
                    for i, v in enumerate(values)]
    pd.DataFrame(rows).to_csv(folder / "stages.csv", index=False)
    pd.DataFrame(repeats).to_csv(folder / "times.csv", index=False)
    (folder / "meta.json").write_text(json.dumps(
        {"config": {"model": {"name": name}}, "forward_ms": forward_ms, "parameters": 10,
         "noise": noise or {}}))
    return read_run(folder)


def test_significance_per_stage_and_forward_from_the_raw_repeats(tmp_path):
    from profiling.reports.comparison import FORWARD, compare_runs
    from profiling.reports.comparison_text import format_comparison

    steady = [10.0, 10.2, 9.8, 10.1, 9.9, 10.0, 10.3, 9.7]
    a = _run_folder(tmp_path, "a", {"encoder": steady, "head": [4.0] * 8},
                    [20.0] * 8, {"forward_cv": 0.01, "load_average_before": [0.5, 0.5, 0.5],
                                 "cores": 2, "repeats": 8})
    b = _run_folder(tmp_path, "b", {"encoder": list(reversed(steady)),
                                    "head": [5.2] * 8}, [14.0] * 8)
    table = compare_runs(a, b).set_index("stage")
    # the same values in another order: ratio 1, never significant
    assert table.loc["encoder", "time_ratio"] == 1.0
    assert not table.loc["encoder", "significant"]
    assert table.loc["encoder", "time_ratio_ci95_low"] < 1.0 < \
        table.loc["encoder", "time_ratio_ci95_high"]
    # constant 4.0 against constant 5.2: every resample gives 1.3
    assert tuple(table.loc["head", ["time_ratio", "time_ratio_ci95_low",
                                    "time_ratio_ci95_high"]]) == pytest.approx((1.3,) * 3)
    assert table.loc["head", "significant"]
    assert table.loc[FORWARD, "time_ratio"] == 0.7 and table.loc[FORWARD, "significant"]
    assert table.loc[FORWARD, "cpu_time_ms_median_a"] == 20.0
    # payload is exact: a ratio, no interval
    assert table.loc["head", "out_bytes_ratio"] == 1.0
    lines = format_comparison(compare_runs(a, b), a, b).splitlines()
    assert "noise A: forward CV 1.0%, load 0.50 on 2 cores, 8 repeats" in lines
    assert "noise B: noise not recorded" in lines
    assert "forward median (ms): 20.0 -> 14.0 -30.0% *, 95% CI -30..-30%" in lines
    head = next(line for line in lines if line.startswith("head"))
    assert head.split()[:6] == ["head", "4.00", "5.20", "+30.0%", "*", "+30..+30%"]
    encoder = next(line for line in lines if line.startswith("encoder"))
    assert encoder.split()[3] == "(+0.0%)"


def test_a_small_change_is_not_significant_below_the_minimum(tmp_path):
    from profiling.reports.comparison import compare_runs

    a = _run_folder(tmp_path, "a", {"x": [10.0] * 6, "tiny": [0.2] * 6}, [10.0] * 6)
    b = _run_folder(tmp_path, "b", {"x": [12.0] * 6, "tiny": [0.4] * 6}, [12.0] * 6)
    table = compare_runs(a, b).set_index("stage")
    assert table.loc["x", "time_ratio"] == pytest.approx(1.2)
    assert not table.loc["x", "significant"]  # excludes 1, but 20% < 25%
    assert compare_runs(a, b, min_change=0.1).set_index("stage").loc["x", "significant"]
    # twice as slow, but 0.2 ms apart: below the CPU's 1 ms floor of scheduling jitter
    assert table.loc["tiny", "time_ratio"] == 2.0 and not table.loc["tiny", "significant"]


def test_a_noisy_run_raises_the_smallest_significant_change(tmp_path):
    from profiling.reports.comparison import change_threshold, compare_runs

    assert change_threshold({"noise": {"forward_cv": 0.4}}, {"forward_ms": [9.0, 11.0]}) == 0.4
    # without a noise record, the CV of forward_ms: sqrt(2) * 2 / 10
    assert change_threshold({}, {"forward_ms": [8.0, 12.0]}) == pytest.approx(0.282843, 1e-5)
    assert change_threshold({"noise": {"forward_cv": 0.01}}, {}) == 0.25
    a = _run_folder(tmp_path, "a", {"x": [10.0] * 6}, [10.0] * 6, {"forward_cv": 0.4})
    b = _run_folder(tmp_path, "b", {"x": [13.0] * 6}, [13.0] * 6)
    table = compare_runs(a, b).set_index("stage")
    assert table.loc["x", "time_ratio"] == 1.3 and table.loc["x", "time_ratio_ci95_low"] == 1.3
    assert not table.loc["x", "significant"] and (table["min_change"] == 0.4).all()


def test_significance_is_withheld_when_a_machine_was_loaded(tmp_path):
    from profiling.reports.comparison import compare_runs
    from profiling.reports.comparison_text import format_comparison

    loaded = {"load_average_before": [5.0, 4.0, 3.0], "load_average_after": [1.0, 1.0, 1.0],
              "cores": 2, "forward_cv": 0.01, "repeats": 6}
    a = _run_folder(tmp_path, "a", {"x": [10.0] * 6}, [10.0] * 6, loaded)
    b = _run_folder(tmp_path, "b", {"x": [20.0] * 6}, [20.0] * 6)
    table = compare_runs(a, b)
    assert not table["significant"].any()
    assert (table["withheld"] == "run A: the machine was loaded (load average 5.00 before, "
                                 "above its 2 cores)").all()
    assert table.set_index("stage").loc["x", "time_ratio_ci95_low"] == 2.0  # still computed
    assert any(line.startswith("significance withheld") for line in
               format_comparison(table, a, b).splitlines())
    assert compare_runs(a, b, loaded=True)["significant"].all()


@pytest.mark.parametrize("time, floor", [("cpu_time_ms_median", True),
                                         ("cuda_time_ms_median", False), ("", False)])
def test_the_legends_say_the_rule_the_marks_use(time, floor):
    """A CPU change under 1 ms is never marked (a -43% change of a 1.7 ms stage was 'no'
    while the legend named only the interval and the 25%): the rule says so."""
    from profiling.reports import significance_rule

    table = pd.DataFrame({"min_change": [0.3]})
    rule = significance_rule(table, time)
    assert rule.startswith("the ") and "excludes 1" in rule and "at least 30%" in rule
    assert ("1 ms of CPU time" in rule) == floor


def test_other_rows_stay_under_their_parents():
    # stages.csv rows as a table of another order could hold them: the other rows' 'order' is
    # a pseudo index after the last stage
    stages = pd.DataFrame({
        "stage": ["encoder", "conv", "encoder/other", "head", "other"],
        "kind": ["stage", "stage", "other", "stage", "other"],
        "parent": ["", "encoder", "encoder", "", ""], "depth": [0, 1, 1, 0, 0],
        "call_index": 0, "order": [0, 1, 3, 2, 4], "out_bytes": [8, 8, 0, 4, 0]})
    table = compare_stages(stages, stages.sample(frac=1, random_state=0))
    assert list(table["stage"]) == ["encoder", "conv", "encoder/other", "head", "other"]
    assert (table["out_bytes_diff"] == 0).all()
