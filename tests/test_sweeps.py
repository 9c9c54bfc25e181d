"""Sweeps: summary.csv from a multirun, failed jobs recorded, and zoo.collect."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from profiling.reports import collect_runs, find_runs, write_failure

ROOT = Path(__file__).resolve().parents[1]
#: A tiny, fast job: resnet18 on one 32x32 image, one timed forward.
FAST = ["model=torchvision", "model.arch=resnet18", "input.size=[32,32]", "run.warmup=0",
        "run.repeats=1", "summary=false"]
IMAGE_BYTES = 3 * 32 * 32 * 4


def _sweep(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zoo.profile", "-m", *FAST, *overrides,
                           f"hydra.sweep.dir={tmp_path}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def test_two_point_joblib_sweep_writes_the_summary(tmp_path):
    result = _sweep(tmp_path, "hydra/launcher=local", "input.batch=1,2")
    assert result.returncode == 0, result.stderr
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert set(summary["run"]) == {"0_torchvision-resnet18", "1_torchvision-resnet18"}
    assert (summary["status"] == "ok").all()
    first = summary[summary["stage"] == "conv1"].set_index("input.batch")
    assert first.loc[1, "in_bytes"] == IMAGE_BYTES
    assert first.loc[2, "in_bytes"] == 2 * IMAGE_BYTES
    assert list(summary[summary["run"] == "0_torchvision-resnet18"]["stage"]) == [
        "conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool",
        "fc", "other"]  # 'other': the forward outside the stages (issue 25)
    assert (summary["parameters"] == 11_689_512).all()
    assert "summary.csv (2 runs)" in result.stdout


@pytest.mark.slow
def test_a_failing_job_is_recorded_and_the_others_finish(tmp_path):
    # submitit's local executor runs each job in its own process, as on a SLURM cluster.
    result = _sweep(tmp_path, "hydra/launcher=submitit_local", "hydra.launcher.timeout_min=5",
                    "model.in_channels=0,3")  # passes the option check, fails to build
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: 1 of 2 runs failed")
    failure = json.loads((tmp_path / "0_torchvision-resnet18" / "error.json").read_text())
    assert failure["error_type"] == "ConfigError"
    assert "model.in_channels=0" in failure["overrides"]
    summary = pd.read_csv(tmp_path / "summary.csv")
    failed = summary[summary["status"] == "failed"]
    assert list(failed["run"]) == ["0_torchvision-resnet18"]
    assert failed["error"].iloc[0] == ("ConfigError: in_channels=0 is not accepted; accepted: an "
                                       "integer >= 1")
    assert failed["stage"].isna().all()
    finished = summary[summary["run"] == "1_torchvision-resnet18"]
    assert len(finished) == 11 and (finished["status"] == "ok").all()  # 10 stages and 'other'


def _fake_run(directory: Path, batch: int) -> None:
    directory.mkdir(parents=True)
    (directory / "meta.json").write_text(json.dumps({
        "config": {"model": {"name": "toy"}, "device": {"name": "cpu"},
                   "input": {"batch": batch, "size": [8, 8]}},
        "overrides": [f"input.batch={batch}"], "parameters": 7, "forward_ms": [1.0, 3.0, 2.0]}))
    pd.DataFrame({"stage": ["a", "b"], "kind": "stage", "depth": [0, 0], "call_index": [0, 0],
                  "order": [0, 1], "in_bytes": 0, "out_bytes": [10 * batch, 20 * batch]}
                 ).to_csv(directory / "stages.csv", index=False)


def test_collect_runs_puts_options_first_and_failures_as_rows(tmp_path):
    _fake_run(tmp_path / "2_toy", 2)
    _fake_run(tmp_path / "10_toy", 4)
    write_failure(tmp_path / "3_toy", MemoryError("out of memory"), overrides=["input.batch=8"],
                  config={"model": {"name": "toy"}})
    runs = find_runs(tmp_path)
    assert [r.name for r in runs] == ["2_toy", "3_toy", "10_toy"]
    table = collect_runs(runs, root=tmp_path)
    assert list(table.columns[:4]) == ["run", "status", "error", "input.batch"]
    assert list(table["run"]) == ["2_toy", "2_toy", "3_toy", "10_toy", "10_toy"]
    assert list(table["input.batch"]) == ["2", "2", "8", "4", "4"]
    assert list(table["out_bytes"].astype("Float64").fillna(-1)) == [20, 40, -1, 40, 80]
    assert table.loc[2, "error"] == "MemoryError: out of memory"
    assert table.loc[0, "forward_ms_median"] == 2.0
    assert str(table["depth"].dtype) == "Int64"


def test_collect_command_writes_one_table(tmp_path):
    from zoo.tools.collect import main

    _fake_run(tmp_path / "runs" / "a", 1)
    _fake_run(tmp_path / "runs" / "b", 3)
    main([str(tmp_path / "runs"), "--out", str(tmp_path / "all.csv")])
    table = pd.read_csv(tmp_path / "all.csv")
    assert len(table) == 4
    assert list(table["input.batch"]) == [1, 1, 3, 3]


def test_collect_refuses_a_folder_without_runs(tmp_path, capsys):
    from zoo.tools.collect import main

    with pytest.raises(SystemExit) as exit_info:
        main([str(tmp_path)])
    assert exit_info.value.code == 2
    assert "holds no run" in capsys.readouterr().err
