"""Experiment files checked before Hydra composes them: a hostile or broken file is one line
naming it (exit 2), in well under a second.

Hydra would expand a YAML file's aliases into a config (aliases of aliases stand for billions
of values) and recurse through its nesting; :func:`profiling.files.read_yaml` refuses both
first. No value may hold an instantiation key (``_target_``, ...), and the file's ``hydra``
section may set nothing that the command line may not (callbacks, logging, a target). Then
every value of the file's ``run``, ``input``, ``roofline`` and ``device`` sections is checked
against the option schema, so a mapping where a number belongs names the file that holds it;
the ``model`` section's types are checked once the model is known, with the composed config.
The same checks hold for a shipped experiment and for one found in a folder of
``hydra.searchpath`` (:mod:`.search_path`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping, Union

from profiling import ProfilingError
from profiling.files import read_yaml

from ..options import (SCHEMA, ConfigError, check_hydra_section, check_plain_config, check_value,
                       check_yaml_booleans, suggest)

__all__ = ["check_experiment_file"]


def check_experiment_file(path: Union[str, Path]) -> None:
    """Raise a one-line :class:`ConfigError` naming ``path`` when the experiment file is
    hostile, broken or holds a value of the wrong type."""
    try:
        data = read_yaml(path)
    except ProfilingError as error:
        raise ConfigError(f"experiment file {error}") from None
    if data is not None and not isinstance(data, dict):
        raise ConfigError(f"experiment file {path} holds {type(data).__name__}, not a mapping "
                          f"of options")
    if not _global_package(Path(path)):
        raise ConfigError(f"experiment file {path} does not begin with the line "
                          f"'{_GLOBAL_PACKAGE}'; without it Hydra puts its options under "
                          f"experiment.* instead of setting them (see the shipped "
                          f"configs/experiment/*.yaml)")
    if data is None:
        return
    if not isinstance(data, dict):
        raise ConfigError(f"experiment file {path} holds {type(data).__name__}, not a mapping "
                          f"of options")
    sections = {key: value for key, value in data.items() if key not in ("defaults", "model",
                                                                          "hydra")}
    origin = f"in experiment file {path}"
    check_plain_config({key: value for key, value in data.items() if key != "hydra"}, origin)
    if "hydra" in data:
        check_hydra_section(data["hydra"], origin)
    try:
        for name, value in _options(sections):
            if name not in SCHEMA:
                raise ConfigError(f"unknown option '{name}'{suggest(name, list(SCHEMA))}")
            check_value(name, value, SCHEMA[name])
    except ConfigError as error:
        raise ConfigError(f"experiment file {path}: {error}") from None
    check_yaml_booleans(path)


#: The header of every experiment file: its keys are options of the whole config.
_GLOBAL_PACKAGE = "# @package _global_"


def _global_package(path: Path) -> bool:
    """Whether the file's header (its comment lines before the first other line) holds
    :data:`_GLOBAL_PACKAGE`, as Hydra reads it."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        if not line.lstrip().startswith("#"):
            return False
        if " ".join(line.split()) == _GLOBAL_PACKAGE:
            return True
    return False


def _options(tree: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(option, value)`` pairs: mappings are walked into until a name is an option, so a
    mapping given where a number belongs is that option's value (and refused as such)."""
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name not in SCHEMA:
            yield from _options(value, name + ".")
        else:
            yield name, value
