"""``model.checkpoint_allow_pickle`` (zoo/models/checkpoints.py): a checkpoint whose pickle runs code is
never unpickled unless the option is exactly ``true``, whatever false-like spelling is given, on
the command line or in Python."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import zoo
from cli_runner import run_main
from zoo.models.checkpoints import read_state_dict
from zoo.tools.profile import main


ROOT = Path(__file__).resolve().parents[1]


FALSE_LIKE = ["no", "off", "false", "0", "n", "False", "FALSE", "''", '"false"', "null", "[]"]


class _WritesMarker:
    """Unpickling this object creates the marker file: the proof that code ran."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


@pytest.fixture()
def malicious(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pth"
    with open(path, "wb") as handle:
        torch.save({"state_dict": {"w": torch.zeros(1)}, "payload": _WritesMarker(str(marker))},
                   handle, pickle_protocol=pickle.DEFAULT_PROTOCOL)
    return path, marker


@pytest.mark.parametrize("spelling", FALSE_LIKE)
def test_the_command_line_never_runs_the_pickle(malicious, spelling, tmp_path, capsys,
                                                monkeypatch):
    """Every false-like spelling through the tool's ``main``, in this process."""
    path, marker = malicious
    outcome = run_main(main, ["model=swiftnet", "device=meta", f"model.checkpoint={path}",
                              f"model.checkpoint_allow_pickle={spelling}",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2 and outcome.line
    assert not marker.exists()
    assert not (tmp_path / "run").exists()


def test_cli_never_runs_the_pickle(malicious, tmp_path):
    """A real process: exit 2 and one line on stderr from deep in the job (the model is built
    before its checkpoint is read), nothing run, no folder."""
    path, marker = malicious
    done = subprocess.run(
        [sys.executable, "-m", "zoo.profile", "model=swiftnet", "device=meta",
         f"model.checkpoint={path}", "model.checkpoint_allow_pickle=false",
         f"hydra.run.dir={tmp_path / 'run'}"],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert not marker.exists()
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("spelling", ["no", "false", "0", 0, 1, None, "true", "yes", [], 0.0])
def test_python_never_runs_the_pickle(malicious, spelling):
    path, marker = malicious
    with pytest.raises(zoo.ConfigError, match="checkpoint_allow_pickle=.* is not accepted; "
                                              "accepted: true or false"):
        read_state_dict(str(path), allow_pickle=spelling)
    with pytest.raises(zoo.ConfigError, match="checkpoint_allow_pickle"):
        zoo.create_model("swiftnet", checkpoint=str(path), checkpoint_allow_pickle=spelling)
    assert not marker.exists()


def test_without_the_option_the_pickle_is_refused_in_one_line(malicious):
    path, marker = malicious
    with pytest.raises(zoo.ConfigError, match="holds pickled objects that weights_only loading "
                                              "refuses"):
        read_state_dict(str(path))
    assert not marker.exists()


def test_only_true_runs_it(malicious):
    path, marker = malicious
    assert read_state_dict(str(path), allow_pickle=True) == {"w": torch.zeros(1)}
    assert marker.exists()
