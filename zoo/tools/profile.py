"""``python -m zoo.profile model=NAME device=cpu|cuda|meta ...``: profile a model stage by stage.

A thin Hydra entry point: :func:`zoo.tools.job.run_profile` does the work and can be called from
Python. A run's config is composed once (:func:`_run_once`) and checked in the job before torch
loads (:func:`~zoo.tools.composition.check_composed`); what needs no composition (the
overrides' form and values, the experiment files, the output folder) is checked before. A
sweep (``-m``, run by ``hydra.main``) composes and checks every variant before its first job,
so that a bad value in the last one is refused before any runs. Problems follow the error contract of
:mod:`zoo.tools.cli` (one line, exit 2 for bad input, 1 for a failure, 130 for an interrupt), and a
run folder is complete or absent.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from profiling import require_extra

from .cli import called_as, exit_with, fail, raise_if_interrupted, run_tool
from .registry import register_tool
from .composition import (CONFIG_DIR, check_before_composing, check_composed, checked_configs,
                          composed, composition_problem, hydra_value, store_declared_configs)
from ..options import ConfigError
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


def _first_new_folder(arguments: Sequence[str]) -> Optional[Path]:
    """The highest folder on the way to the run (or sweep) folder that does not exist yet
    (``results/`` in a fresh working directory), which Hydra creates before the job runs; or
    ``None`` when only the run folder itself is new."""
    multirun = any(a in ("-m", "--multirun") for a in arguments)
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    template = hydra_value(arguments, key) or _default_folder(key)
    fixed, interpolated, _ = template.partition("${")
    if not fixed.strip():
        return None
    folder = Path(fixed).expanduser().absolute()
    if interpolated and not fixed.endswith("/"):
        folder = folder.parent  # the last name is completed by the interpolation
    missing = [p for p in [folder, *folder.parents] if not p.exists()]
    return missing[-1] if missing else None


def _default_folder(key: str) -> str:
    """``hydra.run.dir`` or ``hydra.sweep.dir`` as the shipped ``profile.yaml`` sets it."""
    from profiling.files import read_yaml

    node = read_yaml(CONFIG_DIR / "profile.yaml")
    for part in key.split("."):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, str) else ""


def _remove_empty_folders(top: Optional[Path]) -> None:
    """Remove ``top`` and the folders below it that hold no file, from the deepest up (each
    ``rmdir`` fails on a folder that holds anything, so no file is ever removed)."""
    if top is None or not top.is_dir():
        return
    for folder, _, _ in os.walk(top, topdown=False):
        try:
            os.rmdir(folder)
        except OSError:
            pass


def _job(cfg, arguments: Sequence[str]) -> None:
    """Check the config Hydra composed for the job (bad input is one line before torch loads),
    print the options that differ from the defaults (a single run), and run the job."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hydra_config = HydraConfig.get()
    run_dir = Path(hydra_config.runtime.output_dir)
    try:
        check_composed(cfg)
        if hydra_config.mode != RunMode.MULTIRUN:
            _echo_options(arguments, cfg)
        from .job import run_profile  # torch loads here: an interrupt may already come

        raise_if_interrupted()  # one that torch's import swallowed
        run_profile(cfg, run_dir, checked=True)
    except Exception as error:  # noqa: BLE001  (the contract: one line, or error.json in a sweep)
        _remove_if_empty(run_dir)
        if hydra_config.mode == RunMode.MULTIRUN:
            raise
        exit_with("zoo.profile", error)
    except BaseException:
        _remove_if_empty(run_dir)
        raise


def _overwrite(arguments: Sequence[str]) -> bool:
    """``run.overwrite`` as Hydra parses it (``true`` and ``True`` alike)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = hydra_value(arguments, "run.overwrite")
    return given is not None and OverridesParser.create().parse_override(
        f"run.overwrite={given}").value() is True


def _check_output_folders(arguments: Sequence[str]) -> Optional[tuple[Path, Path]]:
    """Refuse an output folder that may not be written, before any work
    (:func:`profiling.files.check_replaceable`). For a sweep that replaces an old
    one, return ``(sweep folder, staging folder)``: the jobs write into the staging folder,
    which replaces the old sweep only once they are done."""
    from profiling.files import check_replaceable, check_writable, holds_files, staging_folder

    multirun = any(a in ("-m", "--multirun") for a in arguments)
    if multirun and hydra_value(arguments, "hydra.sweep.subdir") is not None:
        from .sweep_summary import check_job_folders

        check_job_folders([a for a in arguments if "=" in a and not a.startswith("-")])
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    folder = hydra_value(arguments, key)
    if folder is None:
        check_writable(key, Path("results"))  # the default folders are below it
        return None
    if not folder.strip():
        raise ConfigError(f"{key} is empty; give a folder, e.g. {key}=results/my-run")
    folder = _resolved(key, folder)
    check_writable(key, Path(folder))
    real = check_replaceable(folder, _overwrite(arguments))  # a ProfilingError: exit 2
    if multirun and holds_files(real):
        return real, staging_folder(real)
    return None


def _check_launcher(arguments: Sequence[str]) -> None:
    """A launcher whose plugin is missing is one line naming the ``sweeps`` extra."""
    launcher = hydra_value(arguments, "hydra/launcher")
    if launcher in _LAUNCHER_PLUGINS:
        require_extra(f"hydra_plugins.{_LAUNCHER_PLUGINS[launcher]}", "sweeps",
                      f"hydra/launcher={launcher}")


def _resolved(key: str, folder: str) -> str:
    """``folder`` with its interpolations resolved where they can be before Hydra starts
    (``${oc.env:...}``; those naming ``hydra.*`` are resolved by Hydra itself)."""
    if "${" not in folder:
        return folder
    from omegaconf import OmegaConf
    from omegaconf.errors import InterpolationKeyError, OmegaConfBaseException

    try:
        return str(OmegaConf.create({"folder": folder}).folder)
    except InterpolationKeyError:
        return folder
    except (OmegaConfBaseException, ValueError) as error:
        raise ConfigError(f"{key}={folder}: cannot resolve the interpolation: "
                          f"{str(error).strip().splitlines()[0]}") from None


def _staged(arguments: list[str], staged: Optional[tuple[Path, Path]]) -> list[str]:
    """The command line with the sweep folder swapped for its staging folder."""
    if staged is None:
        return arguments
    return [a if a.partition("=")[0].lstrip("+") != "hydra.sweep.dir" else
            f"hydra.sweep.dir={staged[1]}" for a in arguments]


def _values(arguments: Sequence[str]) -> list[str]:
    """The overrides among the command-line arguments (``key=value``, ``~key``)."""
    return [a for a in arguments if "=" in a and not a.startswith("-") or a.startswith("~")]


def _echoes_options(arguments: Sequence[str]) -> bool:
    """Whether the options that differ from the defaults are printed before the run (not for
    a sweep, whose summary table names each job's options, nor with ``summary=false``)."""
    return not any(a in ("-m", "--multirun") for a in arguments) and \
        hydra_value(arguments, "summary") not in ("false", "False")


def _echo_options(arguments: Sequence[str], given) -> None:
    """Print the options that differ from the defaults; ``given``: the run's config. The
    defaults they are compared with were composed before Hydra started
    (:func:`~zoo.tools.changed_options.compose_defaults`)."""
    if _echoes_options(arguments):
        from .changed_options import options_line

        print(options_line(_values(arguments), given=given), flush=True)


#: Hydra's flags that take no value (``--info`` takes an optional one), and those that take
#: one, as the next argument or after ``=``.
_HYDRA_FLAGS = ("--help", "-h", "--hydra-help", "--version", "--resolve", "--run", "-r",
                "--multirun", "-m", "--shell-completion", "-sc", "--info", "-i")
_HYDRA_VALUED = ("--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name",
                 "-cn", "--config-dir", "-cd", "--experimental-rerun")


def _check_flags(arguments: Sequence[str]) -> None:
    """Refuse, in one line, an option that is neither an override nor Hydra's (Hydra's own
    parser would print its usage block)."""
    following_value = False
    for argument in arguments:
        if following_value:
            following_value = False
            continue
        flag, equals, _ = argument.partition("=")
        if not argument.startswith("-") or flag in _HYDRA_FLAGS:
            continue
        if flag not in _HYDRA_VALUED:
            raise ConfigError(f"unrecognized option {argument}; accepted: KEY=VALUE overrides "
                              f"and Hydra's flags (see {called_as('python -m zoo.profile')} "
                              f"--help)")
        following_value = not equals


def _check_before_hydra(arguments: Sequence[str]) -> None:
    """Refuse bad input before the run's config is composed. A single run's config is composed
    once (:func:`_run_once`) and checked by the job (:func:`_job`); here, what needs no
    composition (:func:`~zoo.tools.composition.check_before_composing`). A sweep's every
    variant is composed and checked, so that no job runs before a bad value of a later one is
    refused."""
    values = _values(arguments)
    if any(a in ("-m", "--multirun") for a in arguments):
        checked_configs(values)
        return
    check_before_composing(values)


def _run_once(arguments: Sequence[str]) -> None:
    """One run, its config composed once: ``hydra.main`` would compose it twice (once to
    learn the mode), so the run's config is composed here and run as Hydra runs a job
    (``hydra.core.utils.run_job``: the run folder, the job's logging, ``HydraConfig``), with
    the callbacks of ``hydra.callbacks`` called as ``Hydra.run`` calls them. The defaults the
    options line compares with are composed before the job, which composes nothing."""
    from hydra._internal.callbacks import Callbacks
    from hydra.core.utils import run_job
    from hydra.types import HydraContext

    config = composed(_values(arguments), hydra=True)
    if _echoes_options(arguments):  # what the options line compares with, composed before
        from .changed_options import compose_defaults

        compose_defaults(_values(arguments))
    callbacks = Callbacks(config)
    callbacks.on_run_start(config=config, config_name="profile")
    ran = run_job(task_function=lambda cfg: _job(cfg, arguments), config=config,
                  job_dir_key="hydra.run.dir", job_subdir_key=None,
                  hydra_context=HydraContext(config_loader=None, callbacks=callbacks))
    callbacks.on_run_end(config=config, config_name="profile", job_return=ran)
    _ = ran.return_value  # the job's exception, if it raised one


def _composing_failed(error: BaseException) -> bool:
    """Whether ``error`` is Hydra's, from composing the run's config (an unknown model or
    option): bad input, one line."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    return isinstance(error, (HydraException, OmegaConfBaseException))


#: The file in which the sweep's callback leaves the outcome for this tool.
_OUTCOME_FILE = "outcome.json"


def _outcome_override(arguments: Sequence[str], folder: Path) -> list[str]:
    """For a sweep, the override that has its summary callback write the outcome into
    ``folder`` (:func:`~zoo.tools.sweep_summary.read_outcome` reads it after the sweep)."""
    if not any(a in ("-m", "--multirun") for a in arguments):
        return []
    return [f"++hydra.callbacks.sweep_summary.outcome_file='{folder / _OUTCOME_FILE}'"]


def _main() -> None:
    import hydra

    from .sweep_summary import read_outcome

    arguments = sys.argv[1:]
    _check_flags(arguments)
    staged = None
    new_folder = None
    if not any(a in _HELP for a in arguments):
        _check_before_hydra(arguments)
        _check_launcher(arguments)
        staged = _check_output_folders(arguments)
        new_folder = _first_new_folder(arguments)
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()  # a config composed before (the checks, a test) is done
    store_declared_configs()  # --help composes without the checks
    if all(not a.startswith("-") for a in arguments):  # one run: no flag, no sweep
        try:
            _run_once(arguments)
        except BaseException:
            _remove_empty_folders(new_folder)  # a run that wrote nothing leaves no folders
            raise
        return
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra's own failures reach run_tool: one line
    outcome_folder = Path(tempfile.mkdtemp(prefix="stagezoo-sweep-"))
    sys.argv[1:] = [*_staged(arguments, staged), *_outcome_override(arguments, outcome_folder)]
    try:
        hydra.main(version_base="1.3", config_path=str(CONFIG_DIR),
                   config_name="profile")(lambda cfg: _job(cfg, arguments))()
    except BaseException as error:
        if staged is not None:  # the old sweep stays whole
            shutil.rmtree(staged[1], ignore_errors=True)
        _remove_empty_folders(new_folder)  # a run that wrote nothing leaves no folders
        if _composing_failed(error):
            raise composition_problem(error, _values(arguments)) from None
        raise
    finally:
        sys.argv[1:] = arguments
        outcome = read_outcome(outcome_folder / _OUTCOME_FILE)
        shutil.rmtree(outcome_folder, ignore_errors=True)
    if staged is not None:
        from profiling.files import replace_folder

        replace_folder(staged[1], staged[0])
        print(f"sweep folder: {staged[0]} (the old sweep replaced)")
    if outcome is not None and outcome.failed:
        fail(f"{outcome.failed} of {outcome.runs} runs failed; their errors are in "
             f"{outcome.summary}", code=1)


@register_tool("profile", "profile a model stage by stage (Hydra overrides: model=NAME ...)")
def main() -> None:
    """Entry point of ``python -m zoo.profile``."""
    register_resolvers()
    run_tool("zoo.profile", _main)

if __name__ == "__main__":
    main()
