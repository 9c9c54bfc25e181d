"""zoo.compare: two real runs, and the comparison table's arithmetic."""

from __future__ import annotations

import pandas as pd
import pytest

from profiling.reports.compare import compare_stages, config_differences
from zoo.app import run_profile
from zoo.cli import compose_config

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
    from zoo.compare import main

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


def test_config_differences_name_the_changed_keys():
    a = {"model": {"name": "gmflow", "in_channels": 3}, "input": {"size": [8, 8]}}
    b = {"model": {"name": "gmflow", "in_channels": 1}, "input": {"size": [8, 8]}}
    assert config_differences(a, b) == {"model.in_channels": (3, 1)}
