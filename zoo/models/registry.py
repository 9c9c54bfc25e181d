"""The one model registry: ``@register_model`` builders, ``create_model`` and ``list_models``."""

from __future__ import annotations

import fnmatch
import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from ..options import (MODEL_OPTIONS, NULL_DEFAULT_OPTIONS, ConfigError, check_value,
                       checker_for_annotation)
from .checkpoints import load_checkpoint, read_state_dict
from .stage_selection import check_stage_options, select_stage_paths

__all__ = ["register_model", "create_model", "list_models", "model_options"]

_BUILDERS: dict[str, Callable[..., torch.nn.Module]] = {}
_REGISTRATIONS: dict[str, "_Registration"] = {}

#: Options every registered model takes, handled by :func:`create_model`, not its builder:
#: more stages (:mod:`.stage_selection`) and a local checkpoint (:mod:`.checkpoints`).
#: Declared once, in :data:`zoo.options.MODEL_OPTIONS`.
COMMON_OPTIONS: dict[str, Any] = {option.key.split(".", 1)[1]: option.default
                                  for option in MODEL_OPTIONS}
_CHECKPOINT_TYPES = {"checkpoint": Optional[str], "checkpoint_allow_pickle": bool}


@dataclass(frozen=True)
class _Registration:
    """How :func:`create_model` completes a builder: the checkpoint's key map, or the builder
    argument that takes the checkpoint's state dict itself (a model that loads only part of
    it, such as a pretrained encoder)."""

    key_map: Optional[Callable[[str], str]] = None
    state_dict_argument: Optional[str] = None


def register_model(builder: Optional[Callable[..., torch.nn.Module]] = None, *,
                   name: Optional[str] = None, key_map: Optional[Callable[[str], str]] = None,
                   state_dict_argument: Optional[str] = None):
    """Register a builder function under its own name (or ``name``).

    Use as ``@register_model`` or ``@register_model(name="timm", ...)``. The builder's keyword
    arguments are the model's own options; :data:`COMMON_OPTIONS` come on top, so a builder
    never handles checkpoints: :func:`create_model` loads ``checkpoint`` into the built model
    strictly (renaming the file's keys with ``key_map``), or, with ``state_dict_argument``,
    reads it and hands the state dict to the builder under that argument.
    """

    def register(fn: Callable[..., torch.nn.Module]) -> Callable[..., torch.nn.Module]:
        key = name or fn.__name__
        if key in _BUILDERS and _BUILDERS[key] is not fn:
            raise RuntimeError(f"model '{key}' is registered twice")
        _BUILDERS[key] = fn
        _REGISTRATIONS[key] = _Registration(key_map, state_dict_argument)
        return fn

    return register if builder is None else register(builder)


def _load_all() -> None:
    from . import networks  # noqa: F401  (importing the package registers every model)


def list_models(pattern: str = "*") -> list[str]:
    """Names of the registered models matching the shell-style ``pattern``, sorted."""
    _load_all()
    return sorted(name for name in _BUILDERS if fnmatch.fnmatch(name, pattern))


def model_options(name: str) -> dict[str, Any]:
    """The options of model ``name`` with their defaults (``inspect.Parameter.empty`` if none):
    its builder's own, then :data:`COMMON_OPTIONS`."""
    builder = _builder(name)
    hidden = _REGISTRATIONS[name].state_dict_argument
    own = {p.name: p.default for p in inspect.signature(builder).parameters.values()
           if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != hidden}
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

    Every model also takes the :data:`COMMON_OPTIONS`: ``stage_depth`` and ``stage_paths``
    (more stages, attached to its submodules by path:
    :func:`zoo.models.stage_selection.select_stage_paths`), and ``checkpoint`` with
    ``checkpoint_allow_pickle`` (a local file, loaded strictly with
    :func:`zoo.models.checkpoints.load_checkpoint`; pickles only for ``True``).

    Raises:
        ConfigError: for an unknown model or option, a value of the wrong type, or a
            checkpoint that does not fit.
    """
    builder = _builder(name)
    accepted = model_options(name)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)} for model '{name}'; "
                          f"accepted: {', '.join(sorted(accepted))}")
    hints = {**typing.get_type_hints(builder), **_CHECKPOINT_TYPES}
    for option, value in options.items():
        if option in hints:  # a null default's declared kind is as strict as the annotation
            declared = NULL_DEFAULT_OPTIONS.get(option) if accepted[option] is None else None
            check_value(f"model.{option}", value, declared or
                        checker_for_annotation(hints[option]))
    stage_depth, stage_paths = check_stage_options(options.pop("stage_depth", 1),
                                                   options.pop("stage_paths", None))
    checkpoint = options.pop("checkpoint", None)
    allow_pickle = options.pop("checkpoint_allow_pickle", False)
    registration = _REGISTRATIONS[name]
    if registration.state_dict_argument is not None:
        state_dict = read_state_dict(checkpoint, allow_pickle=allow_pickle) if checkpoint \
            else None
        model = builder(**options, **{registration.state_dict_argument: state_dict})
    else:
        model = load_checkpoint(builder(**options), checkpoint, allow_pickle=allow_pickle,
                                key_map=registration.key_map)
    added = select_stage_paths(model, stage_depth, stage_paths)
    if added:
        model.add_stage_paths(added)
    return model
