"""OmegaConf resolvers of the app's configs: unique run-folder names that say what ran."""

from __future__ import annotations

import datetime
import secrets
from typing import Any

__all__ = ["register_resolvers", "run_stamp", "model_label", "other_tools", "profile_program",
           "help_config", "help_options"]


_ISSUED: set[str] = set()


def run_stamp() -> str:
    """``YYYY-MM-DD_HH-MM-SS.mmm-xxxxxx``: the time to the millisecond and 6 random hex digits,
    so two runs started in the same millisecond still get folders of their own (never the same
    twice in one process; across processes, one chance in 16 million per millisecond)."""
    while True:
        now = datetime.datetime.now()
        stamp = f"{now:%Y-%m-%d_%H-%M-%S}.{now.microsecond // 1000:03d}-{secrets.token_hex(3)}"
        if stamp not in _ISSUED:
            _ISSUED.add(stamp)
            return stamp


def model_label(name: Any, arch: Any = None) -> str:
    """``torchvision-resnet50`` for a library model, else the model's name."""
    return f"{name}-{arch}".replace("/", "_") if arch else str(name)


def other_tools() -> str:
    """The command-line tools besides ``profile``, for ``--help``: ``split, compare, ...``."""
    from .registry import registered_tools

    return ", ".join(name for name in registered_tools() if name != "profile")


def profile_program() -> str:
    """``stagezoo profile`` or ``python -m zoo.profile``, as the user called the tool."""
    from .cli import called_as

    return called_as("python -m zoo.profile")


def help_config(*, _root_: Any) -> str:
    """The config of ``--help``: the composed one without Hydra's section and without the
    model's ``_target_`` (which names the builder, and is not an option), as YAML (``$``
    doubled for the help template)."""
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(_root_, resolve=False)
    config.pop("hydra", None)
    if isinstance(config.get("model"), dict):
        config["model"].pop("_target_", None)
    return OmegaConf.to_yaml(config).replace("$", "$$")


def help_options() -> str:
    """The declared options for ``--help`` (:func:`zoo.options.options_help`; ``$`` doubled
    for the help template)."""
    from ..options import options_help

    return options_help("  ").replace("$", "$$")


def register_resolvers() -> None:
    """Register ``${zoo.stamp:}`` (cached per config, so one run keeps one name),
    ``${zoo.label:NAME,ARCH}``, and for ``--help`` ``${zoo.tools:}``, ``${zoo.program:}``,
    ``${zoo.help_options:}`` and ``${zoo.help_config:}``, once per process."""
    from omegaconf import OmegaConf

    for name, resolver in (("zoo.tools", other_tools), ("zoo.program", profile_program),
                           ("zoo.help_config", help_config), ("zoo.help_options", help_options)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
    if not OmegaConf.has_resolver("zoo.stamp"):
        OmegaConf.register_new_resolver("zoo.stamp", run_stamp, use_cache=True)
    if not OmegaConf.has_resolver("zoo.label"):
        OmegaConf.register_new_resolver("zoo.label", model_label)
