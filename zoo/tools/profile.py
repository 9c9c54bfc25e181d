"""``python -m zoo.profile model=NAME device=cpu|cuda|meta ...``: profile a model stage by stage.

A thin Hydra entry point: :func:`zoo.tools.job.run_profile` does the work and can be called from
Python. Every option is checked before Hydra starts; problems follow the error contract of
:mod:`zoo.tools.cli` (one line, exit 2 for bad input, 1 for a failure, 130 for an interrupt), and a
run folder is complete or absent.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Sequence

from profiling import require_extra

from .cli import CONFIG_DIR, check_overrides, exit_with, fail, hydra_value, run_tool
from ..errors import ConfigError
from .resolvers import register_resolvers

__all__ = ["main"]

_HELP = ("--help", "-h", "--hydra-help", "--info", "-i", "--cfg", "-c", "--resolve")

#: The Hydra plugin behind each launcher of configs/hydra/launcher (Hydra's own: none).
_LAUNCHER_PLUGINS = {"local": "hydra_joblib_launcher", "joblib": "hydra_joblib_launcher",
                     "slurm": "hydra_submitit_launcher",
                     "submitit_local": "hydra_submitit_launcher",
                     "submitit_slurm": "hydra_submitit_launcher"}


def _remove_if_empty(directory: Path) -> None:
    if directory.is_dir() and not any(directory.iterdir()):
        shutil.rmtree(directory, ignore_errors=True)


def _job(cfg) -> None:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_config = HydraConfig.get()
    run_dir = Path(hydra_config.runtime.output_dir)
    try:
        from .job import run_profile  # torch loads here: an interrupt may already come

        run_profile(cfg, run_dir)
    except Exception as error:  # noqa: BLE001  (the contract: one line, or error.json in a sweep)
        _remove_if_empty(run_dir)
        if hydra_config.mode == RunMode.MULTIRUN:
            raise
        exit_with("zoo.profile", error)
    except BaseException:
        _remove_if_empty(run_dir)
        raise


def _check_output_folders(arguments: Sequence[str]) -> None:
    """Refuse an empty output folder, and one that holds a run, before any work."""
    multirun = any(a in ("-m", "--multirun") for a in arguments)
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    folder = hydra_value(arguments, key)
    if folder is None:
        _check_writable(key, Path("results"))  # the default folders are below it
        return
    if not folder.strip():
        raise ConfigError(f"{key} is empty; give a folder, e.g. {key}=results/my-run")
    path = Path(folder)
    _check_writable(key, path)
    if path.is_dir() and any(path.iterdir()):
        if hydra_value(arguments, "run.overwrite") != "true":
            raise ConfigError(f"{key}={folder} already holds a {'sweep' if multirun else 'run'}; "
                              f"choose another folder, or replace it whole with "
                              f"run.overwrite=true")
        if multirun:
            shutil.rmtree(path)


def _check_launcher(arguments: Sequence[str]) -> None:
    """A launcher whose plugin is missing is one line naming the ``sweeps`` extra."""
    launcher = hydra_value(arguments, "hydra/launcher")
    if launcher in _LAUNCHER_PLUGINS:
        require_extra(f"hydra_plugins.{_LAUNCHER_PLUGINS[launcher]}", "sweeps",
                      f"hydra/launcher={launcher}")


def _check_writable(key: str, path: Path) -> None:
    """Refuse a folder below a file, or on a file system that cannot be written."""
    existing = next(p for p in [path.absolute(), *path.absolute().parents] if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"{key}={path}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{key}={path}: {existing} cannot be written (read-only?); choose "
                          f"another folder with {key}=...")


def _main() -> None:
    import hydra

    from . import sweep_summary

    arguments = sys.argv[1:]
    if not any(a in _HELP for a in arguments):
        problem = check_overrides([a for a in arguments if "=" in a and not a.startswith("-")])
        if problem:
            raise ConfigError(problem)
        _check_launcher(arguments)
        _check_output_folders(arguments)
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()  # a config composed before (the checks, a test) is done
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra's own failures reach run_tool: one line
    hydra.main(version_base="1.3", config_path=str(CONFIG_DIR), config_name="profile")(_job)()
    outcome = sweep_summary.last_sweep
    if outcome is not None and outcome.failed:
        fail(f"{outcome.failed} of {outcome.runs} runs failed; their errors are in "
             f"{outcome.summary}", code=1)


def main() -> None:
    """Entry point of ``python -m zoo.profile``."""
    register_resolvers()
    run_tool("zoo.profile", _main)

if __name__ == "__main__":
    main()
