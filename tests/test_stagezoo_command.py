"""What a user expects of a command-line tool: ``stagezoo --version``, ``stagezoo list``, and a
profile help that names the command as called, lists the runtimes and int8, and shows no
``_target_`` (every tool's quick ``--help``: tests/test_quick_help.py)."""

from __future__ import annotations

import importlib.metadata
import platform

import pytest

from cli_runner import run_main
from zoo.__main__ import main
from zoo.tools import list as list_tool

@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_names_the_installed_package_and_its_main_dependencies(flag, capsys,
                                                                       monkeypatch):
    outcome = run_main(main, [flag], capsys, monkeypatch, program="stagezoo")
    assert outcome.code == 0 and outcome.stderr == ""
    versions = {name: importlib.metadata.version(name)
                for name in ("stagezoo", "torch", "torchvision", "timm")}
    assert outcome.stdout == (
        f"stagezoo {versions['stagezoo']} (torch {versions['torch']}, torchvision "
        f"{versions['torchvision']}, timm {versions['timm']}, Python "
        f"{platform.python_version()})\n")


@pytest.mark.parametrize("model", [[], ["model=gmflow"], ["model=torchvision"]])
def test_profile_help_names_the_command_the_runtimes_and_no_target(model, capsys,
                                                                   monkeypatch):
    outcome = run_main(lambda: main(["profile", *model, "--help"]), [], capsys, monkeypatch)
    assert outcome.code == 0
    lines = outcome.stdout.splitlines()
    assert lines[0].startswith("stagezoo profile: profile a model stage by stage")
    assert "Usage: stagezoo profile [-m] [KEY=VALUE ...]" in lines
    text = " ".join(outcome.stdout.split())  # the declared options' entries, unwrapped
    assert "run.runtime=torch what runs the timed forwards" in text
    assert "accepted: one of torch, onnxruntime, openvino" in text
    assert "run.dtype=float32 weights and floating inputs cast to it; int8: quantised" in text
    assert "  threads: null" in lines  # run.threads, in the run's configuration
    assert "_target_" not in outcome.stdout and "python -m zoo.profile" not in outcome.stdout
    name = model[0].split("=")[1] if model else "faster_rcnn"
    assert f"  name: {name}" in lines


def test_profile_help_names_python_m_when_called_so(capsys, monkeypatch):
    from zoo.tools.profile import main as profile_main

    outcome = run_main(profile_main, ["--help"], capsys, monkeypatch,
                       program="/somewhere/zoo/profile.py")
    assert "Usage: python -m zoo.profile [-m] [KEY=VALUE ...]" in outcome.stdout.splitlines()


@pytest.mark.parametrize("pattern, zoo_models, torchvision", [
    ("gmflow*", ["gmflow", "gmflow_refine", "gmflow_unet"], {}),
    ("resnet1*", [], {"classification": ["resnet101", "resnet152", "resnet18"]}),
    ("raft_*", [], {"optical_flow": ["raft_large", "raft_small"]}),
])
def test_list_names_the_zoo_models_and_the_architectures_by_family(pattern, zoo_models,
                                                                   torchvision, capsys,
                                                                   monkeypatch):
    outcome = run_main(lambda: main(["list", pattern]), [], capsys, monkeypatch,
                       program="stagezoo")
    assert outcome.code == 0
    lines = outcome.stdout.splitlines()
    assert lines[0] == f"zoo models (model=NAME; model.OPTION=VALUE for their options): " \
                       f"{len(zoo_models)}"
    if zoo_models:
        assert lines[1] == "  " + ", ".join(zoo_models)
    shown = [line for line in lines if line.startswith("torchvision")]
    assert shown == ["torchvision architectures (model=torchvision model.arch=NAME), by task: "
                     f"{sum(map(len, torchvision.values()))}"]
    for family, names in torchvision.items():
        assert f"  {family} ({len(names)}): {', '.join(names)}" in lines
    assert list_tool.torchvision_families(pattern) == torchvision


def test_list_covers_every_architecture_the_libraries_name():
    import timm
    import torchvision

    families = list_tool.torchvision_families()
    assert sorted(name for names in families.values() for name in names) == sorted(
        torchvision.models.list_models())
    assert list(families) == ["classification", "detection", "segmentation", "video",
                              "optical_flow", "quantization"]
    by_module = list_tool.timm_families()
    assert sum(map(len, by_module.values())) == len(timm.list_models())
    assert "resnet18" in by_module["resnet"] and "convnext_tiny" in by_module["convnext"]
    assert list_tool.zoo_models() == ["faster_rcnn", "gmflow", "gmflow_refine", "gmflow_unet",
                                      "swiftnet", "swin_unet"]
