"""The options of a run that differ from the defaults, echoed at the top of ``zoo.profile``.

A config group chosen on the command line (``model=swiftnet``) is shown when it is not the
default choice; every other option is shown when its value differs from what the chosen groups
give it (so ``model.stage_depth=1`` with the model's default of 1 is not shown, and the options
an experiment sets are summed up by ``experiment=NAME``). ``hydra.*`` options are not the run's.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Sequence

from omegaconf import OmegaConf

from .composition import CONFIG_GROUPS, compose_config
from .search_path import search_path_overrides

__all__ = ["changed_options", "options_line", "compose_defaults"]

_REMOVED = object()


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf of a plain config tree by its dotted key."""
    if isinstance(node, dict):
        leaves: dict[str, Any] = {}
        for key, value in node.items():
            leaves.update(_leaves(value, f"{prefix}{key}."))
        return leaves
    return {prefix.rstrip("."): node}


def _plain(cfg: Any) -> dict[str, Any]:
    tree = OmegaConf.to_container(cfg, resolve=False)
    tree.pop("hydra", None)
    return _leaves(tree)


def _text(value: Any) -> str:
    """A value as it is written on the command line."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def changed_options(overrides: Sequence[str], given: Any = None) -> list[str]:
    """The command-line overrides ``overrides`` as the options they change, ``key=value``, in
    the config's order (the group choices first); ``given``: their config, when it was
    composed already (else it is composed here)."""
    group, (default_choices, base) = _group_choices(overrides), compose_defaults(overrides)
    shown = []
    for override in group:
        name, _, value = override.partition("=")
        if value != str(default_choices.get(name.lstrip("+"))):
            shown.append(f"{name.lstrip('+')}={value}")
    given = _plain(given if given is not None else compose_config(list(overrides)))
    shown += [f"{key}={_text(value)}" for key, value in given.items()
              if base.get(key, _REMOVED) != value]
    shown += [f"~{key}" for key in base if key not in given]
    return shown


@lru_cache(maxsize=8)
def _defaults(group: tuple[str, ...], search: tuple[str, ...]
              ) -> tuple[dict[str, str], dict[str, Any]]:
    """The default group choices, and the options that ``group``'s choices give (from the
    shipped configs and the ``hydra.searchpath`` folders of ``search``), composed once per
    process: the options line before Hydra and the run's ``meta.json`` ask for the same ones
    (a run composes its config once, tests/test_compose_once.py)."""
    choices = compose_config([], hydra=True).hydra.runtime.choices
    return ({str(k): str(v) for k, v in choices.items()},
            _plain(compose_config([*search, *group])))


def _group_choices(overrides: Sequence[str]) -> tuple[str, ...]:
    return tuple(o for o in overrides if o.split("=", 1)[0].lstrip("+") in CONFIG_GROUPS)


def compose_defaults(overrides: Sequence[str]) -> tuple[dict[str, str], dict[str, Any]]:
    """The defaults that :func:`changed_options` compares ``overrides`` with, composed once
    per process (:func:`_defaults`): ``zoo.profile`` asks for them before Hydra starts, so
    that its job composes nothing while Hydra runs it."""
    return _defaults(_group_choices(overrides), tuple(search_path_overrides(overrides)))


def options_line(overrides: Sequence[str], given: Any = None) -> str:
    """``options: model=swiftnet input.size=[64,64] (the rest are the defaults)``
    (``given``: see :func:`changed_options`)."""
    changed = changed_options(overrides, given)
    if not changed:
        return "options: all the defaults (python -m zoo.profile --help lists them)"
    return f"options: {' '.join(changed)} (the rest are the defaults)"
