"""Values that come from a user never choose code: no instantiation keys, strict booleans.

Hydra builds an object wherever a config holds ``_target_``. Only the shipped configs may say
what gets built (``model._target_: zoo.create_model``, Hydra's own plugins, the sweep summary);
a value from the command line, an experiment file, a sweep or a run's ``meta.json`` is plain
data. :func:`check_override` refuses an override that names or carries an instantiation key,
or that reaches the parts of ``hydra`` that name callables (callbacks, logging); and
:func:`check_plain_config` refuses a composed config in which anything but the shipped model
target holds one. Booleans are spelled ``true``, ``True``, ``false`` or ``False`` everywhere:
Hydra's parser also reads ``TRUE`` and ``tRuE`` and YAML also reads ``yes``, ``on`` and
``TRUE``, which are refused here (:func:`check_boolean_spelling`, :func:`check_yaml_booleans`).

This module imports neither torch nor Hydra at import time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from .errors import ConfigError

__all__ = ["INSTANTIATE_KEYS", "MODEL_TARGET", "BOOLEAN_SPELLINGS", "instantiate_key_in",
           "check_override", "check_option_name", "check_hydra_section", "check_plain_config",
           "check_boolean_spelling", "check_yaml_booleans"]

#: The keys with which Hydra's ``instantiate`` calls or configures a callable.
INSTANTIATE_KEYS = ("_target_", "_args_", "_partial_", "_recursive_", "_convert_")
#: The one target a ``model`` node may hold: the registry's builder entry.
MODEL_TARGET = "zoo.create_model"
#: How a boolean may be written (YAML 1.2's core schema).
BOOLEAN_SPELLINGS = ("true", "True", "false", "False")
#: Parts of the ``hydra`` node that name callables (callbacks, logging handler factories).
_HYDRA_CODE = ("hydra.callbacks", "hydra.job_logging", "hydra.hydra_logging")
#: Hydra settings that would break the run folder's promises, and why they are fixed.
_HYDRA_FIXED = {
    "hydra.output_subdir": "meta.json records the config and the overrides, and a run folder "
                           "holds only what the run wrote",
    "hydra.job.chdir": "the tools write where they are told, never into the folder they run in",
}

_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_BOOLEAN_WORD = re.compile(r"(?<![\w.$/-])(true|false)(?![\w.-])", re.IGNORECASE)


def instantiate_key_in(value: Any, path: str = "") -> Optional[str]:
    """The dotted path of the first instantiation key inside ``value`` (a tree of mappings and
    lists), or ``None``."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if str(key) in INSTANTIATE_KEYS or str(key) == "()":
                return where
            found = instantiate_key_in(item, where)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = instantiate_key_in(item, f"{path}[{index}]")
            if found:
                return found
    return None


def _refuse_code(where: str, origin: str) -> ConfigError:
    return ConfigError(f"{where} {origin}: a value cannot choose code to run (_target_ and the "
                       f"other instantiation keys belong to the shipped configs only); give "
                       f"plain values")


def check_override(override: str) -> None:
    """Refuse a command-line override that names or carries an instantiation key, that sets
    a part of ``hydra`` naming callables, or that spells a boolean other than
    :data:`BOOLEAN_SPELLINGS`. Raises a one-line :class:`~zoo.options.ConfigError`."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    key, _, text = override.partition("=")
    name = key.lstrip("+~")
    check_option_name(name, "(given on the command line)")
    try:
        parsed = OverridesParser.create().parse_override(override)
    except Exception:  # noqa: BLE001  (a malformed override is reported by the composition)
        return
    values = list(parsed.sweep_iterator()) if parsed.is_sweep_override() else [
        None if parsed.is_delete() else parsed.value()]
    for value in values:
        found = instantiate_key_in(value, name)
        if found:
            raise _refuse_code(f"{found} (in {override})", "is refused")
    check_boolean_spelling(name, text)


def check_option_name(name: str, origin: str) -> None:
    """Refuse a dotted option ``name`` (given ``origin``: on the command line, in a file) that
    is or holds an instantiation key, or that sets a part of ``hydra`` naming callables or
    one fixed by the tools."""
    parts = re.split(r"[./]", name)
    if any(part in INSTANTIATE_KEYS for part in parts) or name == "_target_":
        raise _refuse_code(f"'{name}' is not an option", origin)
    if any(name == h or name.startswith(h + ".") for h in _HYDRA_CODE):
        raise ConfigError(f"'{name}' is not an option {origin}: the shipped configs set "
                          f"Hydra's callbacks and logging")
    if name in _HYDRA_FIXED:
        raise ConfigError(f"'{name}' is not an option {origin}: {_HYDRA_FIXED[name]}")


def check_hydra_section(section: Any, origin: str) -> None:
    """Refuse a file's ``hydra`` section (``origin`` names the file) that sets what
    :func:`check_option_name` refuses on the command line, at any depth."""
    def walk(node: Any, name: str) -> None:
        check_option_name(name, origin)
        if isinstance(node, Mapping):
            for key, value in node.items():
                walk(value, f"{name}.{key}")

    walk(section, "hydra")
    found = instantiate_key_in(section, "hydra")  # inside lists too
    if found:
        raise _refuse_code(found, origin)


def check_boolean_spelling(name: str, text: str) -> None:
    """Refuse a bare word in ``text`` (an override's value) that a parser would read as a
    boolean but that is not one of :data:`BOOLEAN_SPELLINGS` (``TRUE``, ``fALSE``)."""
    for word in _BOOLEAN_WORD.findall(_QUOTED.sub("''", text)):
        if word not in BOOLEAN_SPELLINGS:
            raise ConfigError(f"{name}={text}: '{word}' is not a boolean; accepted: "
                              f"{', '.join(BOOLEAN_SPELLINGS)}")


def check_plain_config(config: Mapping[str, Any], origin: str = "in the config") -> None:
    """Refuse a composed config (a plain dict without ``hydra``) in which any instantiation
    key is found, except ``model._target_`` set to :data:`MODEL_TARGET` as shipped."""
    for section, value in config.items():
        if section == "hydra":
            continue
        if section == "model" and isinstance(value, Mapping):
            target = value.get("_target_", MODEL_TARGET)
            if target != MODEL_TARGET:
                raise _refuse_code(f"model._target_={target} {origin}", "is not an option")
            value = {k: v for k, v in value.items() if k != "_target_"}
        found = instantiate_key_in(value, str(section))
        if found:
            raise _refuse_code(found, origin)


def check_yaml_booleans(path: Union[str, Path]) -> None:
    """Refuse a YAML file in which a boolean is spelled other than :data:`BOOLEAN_SPELLINGS`
    (YAML 1.1 also reads ``yes``, ``no``, ``on``, ``off`` and ``TRUE``)."""
    import yaml

    def walk(node: Any) -> None:
        if isinstance(node, yaml.ScalarNode):
            if node.tag == "tag:yaml.org,2002:bool" and node.value not in BOOLEAN_SPELLINGS \
                    and node.style is None:
                raise ConfigError(f"{path}, line {node.start_mark.line + 1}: '{node.value}' "
                                  f"is not a boolean; accepted: {', '.join(BOOLEAN_SPELLINGS)}")
            return
        for child in node.value if isinstance(node, yaml.SequenceNode) else [
                item for pair in getattr(node, "value", []) for item in pair]:
            walk(child)

    with open(path, encoding="utf-8") as stream:
        root = yaml.compose(stream, Loader=yaml.SafeLoader)
    if root is not None:
        walk(root)
