"""The one model registry: ``@register_model`` builders, ``create_model`` and ``list_models``."""

from __future__ import annotations

import fnmatch
import inspect
import typing
from typing import Any, Callable, Optional

import torch

from .errors import ConfigError
from .stage_selection import check_stage_options, select_stage_paths
from .options import check_value, checker_for_annotation

__all__ = ["register_model", "create_model", "list_models", "model_options"]

_BUILDERS: dict[str, Callable[..., torch.nn.Module]] = {}
#: Options every registered model takes, handled by :func:`create_model`, not its builder
#: (:mod:`zoo.stage_selection`).
COMMON_OPTIONS: dict[str, Any] = {"stage_depth": 1, "stage_paths": None}


def register_model(builder: Optional[Callable[..., torch.nn.Module]] = None, *,
                   name: Optional[str] = None):
    """Register a builder function under its own name (or ``name``).

    Use as ``@register_model`` or ``@register_model(name="timm")``; the builder's keyword
    arguments are the model's options.
    """

    def register(fn: Callable[..., torch.nn.Module]) -> Callable[..., torch.nn.Module]:
        key = name or fn.__name__
        if key in _BUILDERS and _BUILDERS[key] is not fn:
            raise RuntimeError(f"model '{key}' is registered twice")
        _BUILDERS[key] = fn
        return fn

    return register if builder is None else register(builder)


def _load_all() -> None:
    from . import models  # noqa: F401  (importing the package registers every model)


def list_models(pattern: str = "*") -> list[str]:
    """Names of the registered models matching the shell-style ``pattern``, sorted."""
    _load_all()
    return sorted(name for name in _BUILDERS if fnmatch.fnmatch(name, pattern))


def model_options(name: str) -> dict[str, Any]:
    """The options of model ``name`` with their defaults (``inspect.Parameter.empty`` if none)."""
    builder = _builder(name)
    own = {p.name: p.default for p in inspect.signature(builder).parameters.values()
           if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return {**own, **COMMON_OPTIONS}


def _builder(name: str) -> Callable[..., torch.nn.Module]:
    _load_all()
    if name not in _BUILDERS:
        raise ConfigError(f"unknown model '{name}'; available models: {', '.join(list_models())}")
    return _BUILDERS[name]


def create_model(name: str, **options: Any) -> torch.nn.Module:
    """Build the registered model ``name`` with the given options.

    Every option is checked against the type annotation of the builder's parameter: a
    ``bool`` takes only ``True`` or ``False``, an ``int`` only integers, and so on.

    Every model also takes ``stage_depth`` and ``stage_paths``: more stages, attached to its
    submodules by path (:func:`zoo.stage_selection.select_stage_paths`).

    Raises:
        ConfigError: for an unknown model or option, or a value of the wrong type.
    """
    builder = _builder(name)
    accepted = model_options(name)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)} for model '{name}'; "
                          f"accepted: {', '.join(sorted(accepted))}")
    stage_depth, stage_paths = check_stage_options(options.pop("stage_depth", 1),
                                                   options.pop("stage_paths", None))
    hints = typing.get_type_hints(builder)
    for option, value in options.items():
        if option in hints:
            check_value(f"model.{option}", value, checker_for_annotation(hints[option]))
    model = builder(**options)
    added = select_stage_paths(model, stage_depth, stage_paths)
    if added:
        model.add_stage_paths(added)
    return model
