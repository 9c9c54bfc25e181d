"""OmegaConf resolvers of the app's configs: unique run-folder names that say what ran."""

from __future__ import annotations

import datetime
import secrets
from typing import Any

__all__ = ["register_resolvers", "run_stamp", "model_label", "other_tools"]


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
    from ..__main__ import TOOLS

    return ", ".join(name for name in TOOLS if name != "profile")


def register_resolvers() -> None:
    """Register ``${zoo.stamp:}`` (cached per config, so one run keeps one name),
    ``${zoo.label:NAME,ARCH}`` and ``${zoo.tools:}`` once per process."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver("zoo.tools"):
        OmegaConf.register_new_resolver("zoo.tools", other_tools)
    if not OmegaConf.has_resolver("zoo.stamp"):
        OmegaConf.register_new_resolver("zoo.stamp", run_stamp, use_cache=True)
    if not OmegaConf.has_resolver("zoo.label"):
        OmegaConf.register_new_resolver("zoo.label", model_label)
