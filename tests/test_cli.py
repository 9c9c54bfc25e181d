"""``python -m zoo.profile`` end to end, and every bad input of the core issue."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import zoo
from cli_runner import run_main
from zoo.tools.job import run_profile
from zoo.tools.profile import main
from zoo.tools.composition import check_overrides, compose_config

ROOT = Path(__file__).resolve().parents[1]
FAST = ["model=faster_rcnn", "model.min_size=64", "model.max_size=64", "input.size=[64,64]",
        "run.warmup=0", "run.repeats=2"]


def _cli(*args, cwd=ROOT):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "zoo.profile", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


@pytest.mark.slow
def test_cli_writes_the_contract_files(tmp_path):
    run_dir = tmp_path / "run"
    done = _cli(*FAST, f"hydra.run.dir={run_dir}")
    assert done.returncode == 0, done.stderr
    assert f"run directory: {run_dir}" in done.stdout
    assert "backbonefpn_body" in done.stdout
    assert {p.name for p in run_dir.iterdir()} == {".stagezoo", "stages.csv", "payload.log",
                                                   "meta.json", "layers.csv", "layers.txt",
                                                   "modules.csv", "modules.txt", "times.csv",
                                                   "operators.csv"}
    stages = pd.read_csv(run_dir / "stages.csv")
    body = stages[stages.stage == "backbonefpn_body"].iloc[0]
    # 64x64 stays 64x64: body levels at strides 4..32 with 256..2048 channels
    assert body.out_bytes == 4 * (256 * 16 * 16 + 512 * 8 * 8 + 1024 * 4 * 4 + 2048 * 2 * 2)
    assert body.cpu_time_ms_median > 0
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["config"]["model"]["name"] == "faster_rcnn"
    assert meta["versions"]["torch"] and meta["host"] and meta["device"] == "cpu"
    assert len(meta["forward_ms"]) == 2
    log = (run_dir / "payload.log").read_text()
    assert "transform_out([images]) :: torch.Size([1, 3, 64, 64]) 0.049152 Mb" in log
    assert "Average Time of Each Layer" in log and "mem_cpu |" in log


def test_run_profile_from_python(tmp_path):
    cfg = compose_config(FAST + ["run.repeats=1", "summary=false"])
    run = run_profile(cfg, tmp_path)
    assert sorted(p.name for p in run.files) == [
        "layers.csv", "layers.txt", "meta.json", "modules.csv", "modules.txt", "operators.csv",
        "payload.log", "stages.csv", "times.csv"]
    stages = run.result.stages
    body = stages[stages.stage == "backbonefpn_body"].iloc[0]
    layer_totals = pd.read_csv(tmp_path / "layers.csv")
    assert body.macs > 0 and body.flops >= 2 * body.macs
    assert "MAdd" in layer_totals.columns
    assert run.result.stages.stage.iloc[0] == "get_original_images_sizes"


@pytest.mark.parametrize("override, message", [
    ("model=nope", "unknown model 'nope'; choose one of: .*faster_rcnn"),
    ("model.nope=1", r"unknown option 'model.nope' \(did you mean model.name\?\); "
                         r"accepted in model: .*num_classes"),
    ("nope=1", "unknown option 'nope'; accepted: model, device, input, run"),
    ("device=tpu", "unknown device 'tpu'; choose one of: cpu, cuda, meta"),
])
def test_bad_overrides_are_one_line(override, message):
    import re
    problem = check_overrides([override])
    assert problem is not None and re.search(message, problem), problem
    assert "\n" not in problem


@pytest.mark.parametrize("args, message", [
    (["model=nope"], "unknown model 'nope'"),
    (["run.repeats=0"], "run.repeats=0 is not accepted; accepted: an integer >= 1"),
    (["input.size=[8,8]"], "too small for Faster R-CNN"),
    (["input.size=[a,b]"], "input.size=['a', 'b'] is not accepted; accepted: null or "
                              "[height, width] with integers >= 1"),
    (["model.num_classes=0"], "num_classes=0 is not accepted; accepted: an integer >= 1"),
    (["model.checkpoint=/does/not/exist.pth"], "checkpoint file not found"),
    pytest.param(["device=cuda"], "no CUDA GPU", marks=pytest.mark.skipif(
        __import__("torch").cuda.is_available(), reason="this machine has a GPU")),
])
def test_bad_input_exits_nonzero_with_one_line_and_no_run_dir(tmp_path, args, message, capsys,
                                                             monkeypatch):
    """Through the tool's ``main`` in this process, as the shell would call it (a real
    process: tests/test_checkpoint_pickle.py::test_cli_never_runs_the_pickle)."""
    run_dir = tmp_path / "run"
    outcome = run_main(main, [*args, f"hydra.run.dir={run_dir}"], capsys, monkeypatch)
    assert outcome.code == 2
    assert message in outcome.line and "Traceback" not in outcome.stderr
    assert not run_dir.exists()


def test_mismatched_checkpoint_file(tmp_path):
    import torch
    path = tmp_path / "wrong.pth"
    torch.save({"conv.weight": torch.zeros(1)}, path)
    with pytest.raises(zoo.ConfigError, match="does not match.*missing.*unexpected"):
        zoo.create_model("faster_rcnn", checkpoint=str(path))


def test_help_lists_models_and_main_options():
    done = _cli("--help")
    assert done.returncode == 0
    assert "faster_rcnn" in done.stdout and "run.repeats" in done.stdout
    assert "input.size" in done.stdout and "device=cpu|cuda|meta" in done.stdout


def test_registry_lists_and_rejects():
    assert "faster_rcnn" in zoo.list_models()
    assert zoo.list_models("faster*") == ["faster_rcnn"]
    with pytest.raises(zoo.ConfigError, match="unknown option.*wings.*accepted: .*num_classes"):
        zoo.create_model("faster_rcnn", wings=2)
