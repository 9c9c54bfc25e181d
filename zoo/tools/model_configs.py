"""Each registered model's config node, made from its builder's signature: the one place a
model's options and their defaults are written.

``model=NAME`` composes the node :func:`model_configs` makes for ``NAME``:
``_target_: zoo.create_model``, ``name``, the keyword arguments of the builder under
``@register_model`` with their defaults, then the options every model takes
(:data:`zoo.options.MODEL_OPTIONS`). No YAML repeats them.
:func:`zoo.tools.composition.store_declared_configs` stores the nodes in Hydra's ConfigStore.

The builders of ``zoo/models/networks`` are read from their source (:mod:`ast`), not imported:
composing a config, ``--help`` and the refusal of a bad ``model.X`` stay free of torch. The
defaults there are literals (a builder is a plain function; ``tests/test_model_options.py``
holds every node to :func:`zoo.model_options`). A model registered in this process by other
code (a plugin, a test) is taken from the live registry once ``zoo.models`` is imported.

This module imports neither torch nor Hydra.
"""

from __future__ import annotations

import ast
import inspect
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from ..options import MODEL_OPTIONS, MODEL_TARGET

__all__ = ["NETWORKS", "MODEL_TARGET", "model_configs"]

#: Where the zoo's networks and their builders are.
NETWORKS = Path(__file__).resolve().parents[1] / "models" / "networks"
#: Hydra's mark of a value that must be given (a builder argument without a default).
_MISSING = "???"


def _registration(decorator: ast.expr) -> Optional[dict[str, Any]]:
    """The literal keywords of ``@register_model`` or ``@register_model(...)`` (``{}`` for
    none), or ``None`` for another decorator."""
    call = decorator if isinstance(decorator, ast.Call) else None
    target = call.func if call is not None else decorator
    name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
    if name != "register_model":
        return None
    return {keyword.arg: _literal(keyword.value) for keyword in (call.keywords if call else [])
            if keyword.arg in ("name", "state_dict_argument")}


def _literal(node: ast.expr) -> Any:
    """A default written in the source, as a config value (tuples as lists)."""
    value = ast.literal_eval(node)
    return _plain(value)


def _plain(value: Any) -> Any:
    return [_plain(item) for item in value] if isinstance(value, (list, tuple)) else value


def _builder_options(function: ast.FunctionDef, hidden: Optional[str]) -> dict[str, Any]:
    """The builder's keyword arguments (but ``hidden``) with their defaults, in order."""
    arguments = function.args
    positional = arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    pairs = [*zip(positional, defaults), *zip(arguments.kwonlyargs, arguments.kw_defaults)]
    return {argument.arg: _MISSING if default is None else _literal(default)
            for argument, default in pairs if argument.arg != hidden}


@lru_cache(maxsize=1)
def _builders_in_source() -> dict[str, dict[str, Any]]:
    """``{model name: builder options}`` of every ``@register_model`` under :data:`NETWORKS`."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(NETWORKS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "register_model" not in text:
            continue
        for function in ast.walk(ast.parse(text, str(path))):
            if not isinstance(function, ast.FunctionDef):
                continue
            for decorator in function.decorator_list:
                keywords = _registration(decorator)
                if keywords is not None:
                    name = keywords.get("name") or function.name
                    found[name] = _builder_options(function, keywords.get("state_dict_argument"))
    return found


def _common_options() -> dict[str, Any]:
    """The options every model takes on top of its builder's, with their defaults."""
    return {option.key.split(".", 1)[1]: option.default for option in MODEL_OPTIONS}


def _registered_in_process() -> dict[str, dict[str, Any]]:
    """The builder options of models registered by code outside :data:`NETWORKS`, when the
    registry is loaded already (then torch is too)."""
    models = sys.modules.get("zoo.models")
    if models is None:
        return {}
    common = _common_options()
    options = {}
    for name in models.list_models():
        if name not in _builders_in_source():
            options[name] = {key: _MISSING if default is inspect.Parameter.empty
                             else _plain(default)
                             for key, default in models.model_options(name).items()
                             if key not in common}
    return options


def model_configs() -> dict[str, dict[str, Any]]:
    """``{model name: config node}``: every registered model's node, sorted by name."""
    builders = {**_builders_in_source(), **_registered_in_process()}
    common = _common_options()
    return {name: {"_target_": MODEL_TARGET, "name": name, **builders[name], **common}
            for name in sorted(builders)}
