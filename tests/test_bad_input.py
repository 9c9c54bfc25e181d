"""Bad input that was exit 1 (issue 32, item 5) is one line and exit 2, leaving nothing behind:
sizes on the meta device beyond what the machine holds, files that are no checkpoint, a
deleted working folder, a torchvision built for another torch, and ``zoo.compare --run``
options that would have been dropped without a word."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_main
from zoo.tools import compare
from zoo.tools.cli import EXIT_BAD_INPUT, describe_failure
from zoo.tools.profile import main as profile_main

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("overrides, said", [
    # torchvision's resnet50 makes its 1e9 x 2048 fc weight on the CPU before it moves to meta
    (["model=torchvision", "model.num_classes=1000000000"],
     "device=meta: with these options torch ran out of memory (it tried to allocate "
     "8192000000000 bytes)"),
    (["model=swiftnet", "model.num_classes=1000000000"], "torch ran out of memory"),
    # 3e11 images of 32x32, 37.7 million MACs each in resnet18 (1.82 billion at 224x224)
    (["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
      "input.batch=300000000000"], "the macs reach 1.13e+19, past 2**63 - 1"),
    (["model=torchvision", "input.batch=300000000000"], "past 2**63 - 1"),
])
def test_sizes_the_meta_device_cannot_hold_are_one_line_exit_2(overrides, said, tmp_path,
                                                               capsys, monkeypatch):
    # before: "out of memory ... (traceback in ...)" and "OverflowError: Python int too large
    # to convert to C long", exit 1
    monkeypatch.chdir(tmp_path)
    outcome = run_main(profile_main, ["device=meta", "summary=false", *overrides,
                                      f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2, outcome.stderr
    assert outcome.line.startswith("error: ") and said in outcome.line and \
        outcome.line.endswith(
            "give a smaller model.num_classes, input.batch or input.size")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def text_file(tmp_path) -> Path:
    path = tmp_path / "weights.pth"
    path.write_text("not weights\n")
    return path


@pytest.mark.parametrize("checkpoint, allow_pickle, said", [
    ("text", "false", "is not a checkpoint: neither a zip archive nor a pickle"),
    ("text", "true", "is not a checkpoint: neither a zip archive nor a pickle"),
    ("/proc/self/mem", "false", "cannot be read (Input/output error)"),
    ("/proc/self/mem", "true", "cannot be read (Input/output error)"),
])
def test_a_file_that_is_no_checkpoint_is_one_line_naming_it(checkpoint, allow_pickle, said,
                                                             text_file, tmp_path, capsys,
                                                             monkeypatch):
    # before: the pickle option advised though set; "OSError: [Errno 5] Input/output error"
    # with no file name, exit 1
    path = str(text_file) if checkpoint == "text" else checkpoint
    monkeypatch.chdir(tmp_path)
    outcome = run_main(profile_main, ["model=swiftnet", "device=meta", "summary=false",
                                      f"model.checkpoint={path}",
                                      f"model.checkpoint_allow_pickle={allow_pickle}",
                                      f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2, outcome.stderr
    assert outcome.line.startswith(f"error: checkpoint {path} {said}")
    assert "checkpoint_allow_pickle" not in outcome.line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command", [["zoo.report", "run"], ["zoo.compare", "a", "b"],
                                     ["zoo.profile", "device=meta"],
                                     ["zoo", "plot", "run"]])  # the stagezoo command
def test_a_deleted_working_folder_is_one_line_exit_2(command, tmp_path):
    # before: "Intel oneMKL FATAL ERROR: Cannot load .../libtorch_cpu.so" as torch loaded
    gone = tmp_path / "gone"
    gone.mkdir()
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", *command], cwd=gone, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: gone.rmdir())  # runs in the child, in gone
    out, err = process.communicate(timeout=120)
    assert process.returncode == 2, err
    assert err.splitlines() == ["error: the working folder cannot be read (No such file or "
                                "directory): it was deleted or moved while this shell was in "
                                "it; cd to a folder that exists and run again"]
    assert out == "" and list(tmp_path.iterdir()) == []


def _raised_from(error: BaseException, outer: BaseException) -> BaseException:
    try:
        try:
            raise error
        except BaseException as inner:
            raise outer from inner
    except BaseException as raised:
        return raised


@pytest.mark.parametrize("error", [
    RuntimeError("operator torchvision::nms does not exist"),
    _raised_from(RuntimeError("operator torchvision::roi_align does not exist"),
                 ImportError("cannot import name 'ops'")),
    _raised_from(RuntimeError("operator torchvision::nms does not exist"),
                 ValueError("the model 'faster_rcnn' could not be built")),
])
def test_a_torchvision_of_another_torch_is_named_with_both_versions(error):
    from importlib.metadata import version

    message, code = describe_failure(error)
    assert code == EXIT_BAD_INPUT
    assert message.startswith(f"torchvision {version('torchvision')} does not match torch "
                              f"{version('torch')}: its compiled operators did not load "
                              f"(operator torchvision::")
    assert message.endswith(f"install the torchvision release built for torch "
                            f"{version('torch')}, from the same index as torch")


@pytest.mark.slow
@pytest.mark.parametrize("model", ["torchvision", "faster_rcnn", "swiftnet"])
def test_a_broken_torchvision_install_ends_a_run_with_one_line(model, tmp_path):
    # a torchvision 0.1.0 whose import fails as a wheel for another torch does
    fake = tmp_path / "site"
    (fake / "torchvision").mkdir(parents=True)
    (fake / "torchvision" / "__init__.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n")
    (fake / "torchvision-0.1.0.dist-info").mkdir()
    (fake / "torchvision-0.1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torchvision\nVersion: 0.1.0\n")
    done = subprocess.run([sys.executable, "-m", "zoo.profile", f"model={model}", "device=meta",
                           "summary=false", f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": f"{fake}{os.pathsep}{ROOT}"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    from importlib.metadata import version

    assert done.stderr.splitlines() == [
        f"error: torchvision 0.1.0 does not match torch {version('torch')}: its compiled "
        f"operators did not load (operator torchvision::nms does not exist); install the "
        f"torchvision release built for torch {version('torch')}, from the same index as torch"]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("setting, said", [
    ("-m", "-m is not accepted: each --run is one configuration"),
    ("--multirun", "--multirun is not accepted"),
    ("hydra.run.dir=elsewhere", "hydra.run.dir=elsewhere is not accepted: both runs are "
                                "written into --out"),
    ("hydra.sweep.dir=elsewhere", "hydra.sweep.dir=elsewhere is not accepted"),
    ("hydra/launcher=joblib", "hydra/launcher=joblib is not accepted"),
])
def test_compare_run_refuses_what_it_would_drop(setting, said, tmp_path, capsys, monkeypatch):
    # before: each was dropped without a word, and the runs went to --out
    monkeypatch.chdir(tmp_path)
    fast = "model=torchvision model.arch=resnet18 input.size=[32,32]"
    outcome = run_main(compare.main, ["--run", f"{fast} {setting}", "--run", fast,
                                      "--out", str(tmp_path / "ab")], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line == f"error: --run A: {said}" or \
        outcome.line.startswith(f"error: --run A: {said}")
    assert list(tmp_path.iterdir()) == []
