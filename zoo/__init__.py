"""An instrumented model zoo for detection, segmentation and optical flow.

``create_model(name, **options)`` builds a registered model, ``list_models()`` names them.
Every zoo model follows the calling convention of :class:`zoo.models.ZooModel`. The names are
imported on first use, so the command-line tools answer ``--help`` without loading torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"create_model": "models", "list_models": "models", "model_options": "models",
            "register_model": "models", "ConfigError": "options"}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'zoo' has no attribute '{name}'")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
