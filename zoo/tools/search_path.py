"""Config folders that a user adds with ``hydra.searchpath``, found as Hydra finds them.

Hydra looks for a group's option (``experiment=NAME``) in the shipped configs first, then in
each folder of ``hydra.searchpath`` in the order given (``file://PATH``, ``pkg://PACKAGE`` or a
plain path). :func:`experiment_file` finds the file that Hydra will read, so that an
experiment from a user's folder goes through the checks of a shipped one
(:func:`~.experiment_files.check_experiment_file`) before Hydra reads it. A user's folder adds
the app's groups (``experiment/``, ``model/``, ``device/``, ``input/``), never Hydra's own
(``hydra/``: launchers, logging, callbacks), and after composing, :func:`check_hydra_settings`
makes sure that no file from such a folder changed the Hydra settings that name code. The
tools' override checks (:func:`~.composition.check_overrides`) run these.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Optional, Sequence

from ..options import ConfigError

__all__ = ["SEARCH_PATH", "search_folders", "search_path_overrides", "experiment_file",
           "hydra_choices", "check_hydra_settings"]

#: The option that adds config folders.
SEARCH_PATH = "hydra.searchpath"
#: The Hydra settings that choose code or where a run writes: the shipped configs set them.
_HYDRA_SETTINGS = ("callbacks", "job_logging", "hydra_logging", "launcher._target_",
                   "sweeper._target_", "output_subdir", "job.chdir")


def search_path_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides among ``overrides`` that set ``hydra.searchpath``."""
    return [o for o in overrides if o.split("=", 1)[0].lstrip("+") == SEARCH_PATH]


def _folder(entry: str) -> Optional[Path]:
    if entry.startswith("pkg://"):
        try:
            spec = importlib.util.find_spec(entry[len("pkg://"):].replace("/", "."))
        except (ImportError, ValueError):
            return None
        locations = list(spec.submodule_search_locations or []) if spec else []
        return Path(locations[0]) if locations else None
    return Path(entry[len("file://"):] if entry.startswith("file://") else entry).resolve()


def search_folders(overrides: Sequence[str]) -> list[Path]:
    """The folders that ``hydra.searchpath`` (the last value given) adds, in order; a
    one-line :class:`ConfigError` for a folder that holds Hydra's own groups (``hydra/``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    given = search_path_overrides(overrides)
    if not given:
        return []
    try:
        value = OverridesParser.create().parse_override(given[-1]).value()
    except Exception:  # noqa: BLE001  (a malformed override is reported by the composition)
        return []
    entries = value if isinstance(value, list) else [value]
    folders = [folder for folder in map(_folder, map(str, entries)) if folder is not None]
    for folder in folders:
        if (folder / "hydra").is_dir():
            raise ConfigError(f"{SEARCH_PATH} folder {folder} holds hydra/: Hydra's own "
                              f"settings (launchers, logging, callbacks) come from the shipped "
                              f"configs; keep experiment/, model/, device/ and input/ files "
                              f"there")
    return folders


def experiment_file(name: str, folders: Sequence[Path], config_dir: Path) -> Optional[Path]:
    """The file Hydra reads for ``experiment=name``: the shipped one (in ``config_dir``), else
    the first one in ``folders``; ``None`` when there is none (the composition names the
    choices)."""
    for folder in (config_dir, *folders):
        path = folder / "experiment" / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def hydra_choices(composed: Any) -> list[str]:
    """The overrides that choose, in the shipped configs, the options of Hydra's own groups
    that the ``hydra`` node ``composed`` was made with (``hydra/launcher=joblib``, ...)."""
    return [f"{group}={choice}" for group, choice in composed.runtime.choices.items()
            if group.startswith("hydra/") and isinstance(choice, str)]


def check_hydra_settings(composed: Any, shipped: Any) -> None:
    """Refuse, with one line, a Hydra setting that names code or where a run writes
    (callbacks, logging, the launcher's and sweeper's targets, ``hydra.output_subdir``,
    ``hydra.job.chdir``) that differs between the ``hydra`` node ``composed`` with a user's
    folders and the one ``shipped`` configs give for the same :func:`hydra_choices`: a file
    from a user's folder set it."""
    from omegaconf import OmegaConf

    for key in _HYDRA_SETTINGS:
        if _plain(OmegaConf.select(composed, key)) != _plain(OmegaConf.select(shipped, key)):
            raise ConfigError(f"hydra.{key} is set by a config in a {SEARCH_PATH} folder: "
                              f"Hydra's callbacks, logging, launcher, sweeper and output "
                              f"settings come from the shipped configs")


def _plain(value: Any) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value, resolve=False) if OmegaConf.is_config(value) else value
