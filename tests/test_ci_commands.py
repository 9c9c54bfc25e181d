"""CI runs the README's commands as written: .ci/readme_commands.py must find them. A rewrapped
paragraph once hid the slow-test marker and CI stopped after one second; these tests fail first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "readme_commands.py"


def _commands(which: str) -> list[str]:
    done = subprocess.run([sys.executable, str(SCRIPT), which], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    return done.stdout.splitlines()


def test_the_quick_start_is_two_lines_setup_then_the_quick_tests():
    setup, tests = _commands("quick")
    assert setup.startswith("python3 -m venv .venv") and "constraints.txt" in setup
    assert "stagezoo profile" in setup
    assert tests == '.venv/bin/python -m pytest -m "not slow" -n 2'


def test_the_slow_command_is_found():
    assert _commands("slow") == [".venv/bin/python -m pytest -m slow -n 2"]


def test_a_marker_broken_across_lines_is_still_found():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from readme_commands import readme_block
    finally:
        sys.path.remove(str(SCRIPT.parent))
    text = "prose. The slow\nones are a second   command:\n\n```bash\nrun it\n```\n"
    assert readme_block(text, "The slow ones are a second command") == "run it"
    with pytest.raises(SystemExit, match="no 'absent'"):
        readme_block(text, "absent")


def test_ci_runs_the_readme_lines_before_it_installs_any_extra():
    """A newcomer's two lines install ``.[dev]`` only: CI runs them so, and adds the extras
    (and the tests they unlock) after."""
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    runs = [i for i, line in enumerate(lines) if line.startswith("bash -euo pipefail -c")]
    setup, quick_tests = runs[0], runs[1]
    assert "sed -n 1p" in lines[setup] and "sed -n 2p" in lines[quick_tests]
    extras = [i for i, line in enumerate(lines) if "pip install" in line and "runtimes" in line]
    assert extras and min(extras) > quick_tests
    assert any('-m "runtimes and not slow"' in line for line in lines[min(extras):])


def test_the_tests_that_need_the_runtimes_extra_say_so_by_its_marker():
    """A test skipped without the extra by its own skipif or importorskip is never run by CI's
    `-m runtimes` stage (quick ones not at all): the marker is the one way to say it."""
    runtime_packages = ("onnx", "onnxscript", "onnxruntime", "openvino", "nncf")
    for path in sorted((ROOT / "tests").glob("*.py")):
        if path.name == Path(__file__).name:
            continue
        text = path.read_text()
        for package in runtime_packages:
            assert f'importorskip("{package}")' not in text, f"{path.name}: importorskip({package})"
        assert "the runtimes extra is not installed" not in text, path.name
