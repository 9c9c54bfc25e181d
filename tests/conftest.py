"""Shared fixtures: the golden outputs of official implementations, device skips, and the one
torch thread the tests run with."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import re
import sys
from pathlib import Path

import pytest
import torch

#: torch's CPU threads in the tests and in the tools they start: one, unless
#: ``$ZOO_TEST_THREADS`` says otherwise. The inputs are tiny, so a second thread saves little,
#: and on a busy 2-core machine it costs a lot: OpenMP's threads spin at each barrier waiting for
#: the one without a core. At a load average of 9 on the 2-core AMD EPYC VM,
#: tests/test_gmflow_variants.py took 35-89 s with one thread and 143-233 s with two.
TEST_THREADS = int(os.environ.get("ZOO_TEST_THREADS", "1"))
torch.set_num_threads(TEST_THREADS)
os.environ["OMP_NUM_THREADS"] = str(TEST_THREADS)

#: ``../shared/golden`` beside the repository, as in CI (absent in a user's clone), or the
#: folder ``$ZOO_GOLDEN_DIR`` names (on a GPU machine that gets a copy of the repository alone).
GOLDEN_DIR = Path(os.environ.get("ZOO_GOLDEN_DIR")
                  or Path(__file__).resolve().parents[1].parent / "shared" / "golden")


@pytest.fixture
def golden():
    """Load a golden file by name, or skip the test when the golden folder is absent."""

    def load(name: str) -> dict:
        path = GOLDEN_DIR / name
        if not path.is_file():
            pytest.skip(f"golden file {path} is absent (it lives in ../shared/golden, beside "
                        f"the repository, in CI)")
        return torch.load(path, map_location="cpu", weights_only=False)

    return load


@pytest.fixture(autouse=True, scope="session")
def _user_folders_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The failure logs, the export cache and inductor's compiled kernels of the tests go to
    temporary folders, not the user's ``~/.local/state/stagezoo/logs``, ``~/.cache`` and
    ``/tmp/torchinductor_USER`` (subprocesses inherit them). pytest removes them after a run
    whose tests all passed (``tmp_path_retention_policy``), so the suite leaves no gigabytes
    behind. The cache is one per run, shared by ``-n``'s workers (their base folders' parent),
    so a model's export is made once a run."""
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    os.environ["XDG_CACHE_HOME"] = str(shared / "cache")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(shared / "inductor")


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--sweeps``: also run the broad real-compute sweeps (every torchvision builder on the
    CPU, about 15 minutes on 2 cores); CI runs them on the meta device only."""
    parser.addoption("--sweeps", action="store_true", default=False,
                     help="run the tests marked sweep (broad real-compute sweeps)")


#: The optional extras a test may need, each a marker of the same name: a test marked
#: ``@pytest.mark.runtimes`` skips, naming the extra, where the extra is not installed, so that
#: the README's two lines (which install ``.[dev]`` only) pass on a fresh machine, and
#: ``pytest -m runtimes`` runs exactly those tests once the extra is there (CI does).
MARKED_EXTRAS = ("runtimes",)


def missing_from_extra(extra: str) -> list[str]:
    """The distributions of stagezoo's ``extra`` (from the installed package's own metadata,
    so pyproject.toml stays the one list) that are not installed."""
    try:
        requirements = importlib.metadata.requires("stagezoo") or []
    except importlib.metadata.PackageNotFoundError:
        return [f"stagezoo[{extra}]"]
    names = [re.match(r"[A-Za-z0-9_.-]+", r).group() for r in requirements
             if re.search(rf"extra\s*==\s*['\"]{extra}['\"]", r)]
    missing = []
    for name in names:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip every test marked ``@pytest.mark.cuda`` on a machine without a CUDA GPU (so
    ``pytest -m cuda`` selects exactly the GPU checks, and a CPU machine skips them cleanly),
    every test marked ``@pytest.mark.sweep`` unless ``--sweeps`` is given, and every test
    marked with an extra (:data:`MARKED_EXTRAS`) that is not installed."""
    skips = []
    if not torch.cuda.is_available():
        skips.append(("cuda", pytest.mark.skip(reason="needs a CUDA GPU")))
    if not config.getoption("--sweeps"):
        skips.append(("sweep", pytest.mark.skip(reason="a broad sweep: run with --sweeps")))
    for extra in MARKED_EXTRAS:
        missing = missing_from_extra(extra)
        if missing:
            reason = (f"needs the {extra} extra ({', '.join(missing)} not installed): "
                      f"pip install -c constraints.txt -e '.[dev,{extra}]'")
            skips.append((extra, pytest.mark.skip(reason=reason)))
    for item in items:
        for marker, skip in skips:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The torchvision builders that tests/test_torchvision_models.py leaves out (its one skip
    list, documented in docs/inputs.md), at the end of every run that collected it."""
    module = sys.modules.get("test_torchvision_models")
    if module is None and getattr(config.option, "numprocesses", None):
        module = importlib.import_module("test_torchvision_models")  # -n: the workers have it
    if module is not None:
        left_out = ", ".join(sorted(module.SKIPPED)) or "none"
        terminalreporter.write_line(f"torchvision builders left out: {left_out}")
