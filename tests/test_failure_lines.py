"""The line a failure ends with (zoo/tools/cli.py, ``describe_failure``): exit 1, the stage it
happened in and the input shape, for an out-of-memory error, a forward that raises, a failure
inside a torchvision or timm network; an I/O error is one line; the traceback goes to a log."""

import contextlib
import json
from pathlib import Path

import pytest
import torch

from cli_runner import run_main
from profiling import stage
from zoo.models import ZooModel
from zoo.tools import job_inputs
from zoo.tools.cli import describe_failure
from zoo.tools.profile import main


class _Raising(ZooModel):
    """A model whose forward raises ``error`` inside the nested ``stages``."""

    def __init__(self, error: Exception, *stages: str) -> None:
        super().__init__()
        self.error, self.nested = error, stages

    def forward(self, x):
        with contextlib.ExitStack() as opened:
            for name in self.nested:
                opened.enter_context(stage(name, x))
            raise self.error


def _run_raising(model, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ZOO_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(job_inputs, "build_model", lambda *a, **k: model)
    outcome = run_main(main, ["model=swiftnet", "device=cpu", "input.size=[64,64]",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 1 and not (tmp_path / "run").exists()
    log = Path(outcome.line.split("(traceback in ")[1].rstrip(")"))
    assert log.parent == tmp_path / "logs" and "Traceback" in log.read_text()
    assert "Traceback" not in outcome.stderr
    return outcome


def test_out_of_memory_names_the_stage_and_the_size(tmp_path, capsys, monkeypatch):
    oom = RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                       "274877906944 bytes. Error code 12")
    outcome = _run_raising(_Raising(oom, "encoder", "layer3"), tmp_path, capsys, monkeypatch)
    assert outcome.line.startswith("error: out of memory in stage 'encoder/layer3' at input "
                                   "1x3x64x64 (tried to allocate 274877906944 bytes)")


def test_a_forward_that_raises_names_its_stage(tmp_path, capsys, monkeypatch):
    error = ValueError("shapes do not match\nsecond line")
    outcome = _run_raising(_Raising(error, "decoder"), tmp_path, capsys, monkeypatch)
    assert outcome.line.startswith("error: ValueError in stage 'decoder' at input 1x3x64x64: "
                                   "shapes do not match (traceback in ")


def test_io_errors_are_one_line():
    message, code = describe_failure(OSError(30, "Read-only file system", "/ro/run"))
    assert (message, code) == ("cannot write or read /ro/run: Read-only file system", 1)


def _break_layer(model: torch.nn.Module, path: str, error: Exception) -> None:
    """Make the module at ``path`` raise ``error`` when called."""
    module = model.get_submodule(path)

    def raising(*args, **kwargs):
        raise error

    module.forward = raising


@pytest.mark.parametrize("overrides, path, stage, error", [
    (["model=torchvision", "model.arch=resnet18"], "layer2.0.conv1", "layer2",
     RuntimeError("Given groups=1, weight of size [1]")),
    (["model=torchvision", "model.arch=mobilenet_v3_small"], "features.3", "features",
     IndexError("index 7 is out of bounds")),
    (["model=timm", "model.arch=resnet18"], "layer3", "layer3",
     ValueError("expected 4D input")),
])
def test_a_failure_inside_a_library_network_names_the_stage_and_the_input(
        overrides, path, stage, error, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ZOO_LOG_DIR", str(tmp_path / "logs"))
    original = job_inputs.build_model

    def broken(*args, **kwargs):
        model = original(*args, **kwargs)
        _break_layer(model, path, error)
        return model

    monkeypatch.setattr(job_inputs, "build_model", broken)
    outcome = run_main(main, [*overrides, "device=cpu", "input.size=[32,48]", "summary=false",
                              "run.repeats=1", "run.warmup=0",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 1, outcome
    assert outcome.line.startswith(f"error: {type(error).__name__} in stage '{stage}' at input "
                                   f"1x3x32x48: {error}"), outcome.line
    assert not (tmp_path / "run").exists()
    log = json.dumps(outcome.line)
    assert "traceback in" in log
