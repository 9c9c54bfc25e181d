"""``python -m zoo.profile model=NAME device=cpu|cuda|meta ...``: profile a model stage by stage.

A thin Hydra entry point: :func:`zoo.app.run_profile` does the work and can be called from
Python. Bad input ends with one line on stderr, exit status 2, and no run directory.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from profiling.errors import ProfilingError

from . import sweep_summary
from .app import run_profile
from .cli import CONFIG_DIR, fail, run_checked


def _remove_if_empty(directory: Path) -> None:
    if directory.is_dir() and not any(directory.iterdir()):
        shutil.rmtree(directory, ignore_errors=True)


@hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="profile")
def _job(cfg: DictConfig) -> None:
    hydra_config = HydraConfig.get()
    run_dir = Path(hydra_config.runtime.output_dir)
    try:
        run_profile(cfg, run_dir)
    except ProfilingError as error:
        _remove_if_empty(run_dir)
        if hydra_config.mode == RunMode.MULTIRUN:
            raise
        fail(str(error))


def main() -> None:
    """Entry point of ``python -m zoo.profile``."""
    run_checked(_job)
    outcome = sweep_summary.last_sweep
    if outcome is not None and outcome.failed:
        fail(f"{outcome.failed} of {outcome.runs} runs failed; their errors are in "
             f"{outcome.summary}", code=1)


if __name__ == "__main__":
    main()
