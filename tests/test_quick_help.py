"""``--help`` and bad options are answered without loading torch (issue: the house), and
``meta.json`` records the command as it was typed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.__main__ import TOOLS

ROOT = Path(__file__).resolve().parents[1]


def _imported_modules(*args: str, module: str = "zoo.profile"
                      ) -> tuple[set[str], subprocess.CompletedProcess]:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", module, *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    names = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
             if line.startswith("import time:")}
    return names, done


@pytest.mark.parametrize("args, expected_code", [
    (["--help"], 0),
    (["input.batch=abc"], 2),
    (["model=gmflow", "model.pred_bidir_flow=maybe"], 2),
    (["inptu.size=[1,2]"], 2),
])
def test_help_and_bad_options_do_not_load_torch(args, expected_code):
    modules, done = _imported_modules(*args)
    assert done.returncode == expected_code
    assert "hydra" in modules and "zoo.tools.cli" in modules
    assert not {m for m in modules if m == "torch" or m.startswith("torch.")}
    assert "pandas" not in modules


def test_the_command_is_recorded_as_typed(monkeypatch):
    from profiling.reports.metadata import typed_command

    monkeypatch.setattr(sys, "argv", ["/somewhere/zoo/profile.py", "model=gmflow",
                                      "input.size=[64,96]"])
    main = type(sys)("__main__")
    main.__spec__ = type("Spec", (), {"name": "zoo.profile"})()
    monkeypatch.setitem(sys.modules, "__main__", main)
    assert typed_command() == "python -m zoo.profile model=gmflow 'input.size=[64,96]'"


def test_help_names_the_models_model_arch_and_the_other_tools():
    _, done = _imported_modules("--help")
    lines = done.stdout.splitlines()
    assert ("model: faster_rcnn, gmflow, gmflow_refine, gmflow_unet, swiftnet, swin_unet, timm, "
            "torchvision") in lines
    assert "  model=torchvision model.arch=NAME, model=timm model.arch=NAME" in lines
    assert ("Other tools (stagezoo TOOL --help, or python -m zoo.TOOL --help): calibrate, "
            "collect, compare, list, plot, report, serve, split.") in lines


@pytest.mark.parametrize("args", [[tool, "--help"] for tool in TOOLS] + [["--version"]])
def test_every_tools_help_answers_without_the_heavy_libraries(args):
    """compare, report and calibrate imported torch, pandas and plotly before parsing their
    arguments: 5 s for --help."""
    modules, done = _imported_modules(*args, module="zoo")
    assert done.returncode == 0, done.stderr
    heavy = {m for m in modules if m.split(".")[0] in ("torch", "pandas", "plotly", "numpy",
                                                        "matplotlib")}
    assert not heavy, sorted(heavy)
    if args[0] in TOOLS:
        assert f"stagezoo {args[0]}" in done.stdout
