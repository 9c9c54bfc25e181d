"""The version bounds of ``pyproject.toml`` are versions a test run passed on: the pins of
``constraints.txt`` (the CPU suite), or torch 2.11 with torchvision 0.26 (the CUDA tests on the
GPU machine, docs/gpu.md); docs/install.md names them."""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Tested apart from constraints.txt: the GPU machine's pair (docs/gpu.md).
GPU_TESTED = {"torch": "2.11", "torchvision": "0.26"}


def _requirements() -> list[tuple[str, str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = [("", line) for line in project["dependencies"]] + [
        (extra, line) for extra, lines in project["optional-dependencies"].items()
        for line in lines]
    found = []
    for extra, line in lines:
        name, bound = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9][\w.]*)", line).groups()
        found.append((extra, name, bound))
    return found


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


@pytest.mark.parametrize("extra, name, bound", _requirements(),
                         ids=[f"{e or 'core'}-{n}" for e, n, _ in _requirements()])
def test_every_lower_bound_is_a_tested_version(extra, name, bound):
    tested = {_pins()[name.lower()], GPU_TESTED.get(name)}
    assert bound in tested, f"{name}>={bound}: tested {sorted(v for v in tested if v)}"


def test_install_md_names_the_tested_versions():
    text = (ROOT / "docs" / "install.md").read_text()
    pins = _pins()
    for name in ("torch", "torchvision", "timm", "numpy", "pandas", "hydra-core"):
        assert f"{name} {pins[name]}" in text, name
    assert "torch 2.11 with torchvision 0.26" in text
