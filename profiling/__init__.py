"""Model-agnostic stage profiling for PyTorch forward passes.

Mark stages in model code with :func:`stage` and :func:`probe`, or attach them to submodules
with :func:`attach_stages`; let :func:`profile_model` run the passes, warm-up, repeats and
aggregation, and :func:`write_run` write the run folder; or open a :class:`Session` with
collectors yourself.

The names are imported on first use, so ``import profiling`` (and a command's ``--help``) does
not load torch.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name and the submodule that defines it.
_EXPORTS = {
    "stage": "stages", "probe": "stages", "StageCall": "stages", "active_session": "stages",
    "is_profiling": "stages", "is_counting": "stages",
    "Session": "session",
    "attach_stages": "attach",
    "walk_payload": "payload",
    "ProfilingError": "errors",
    "profile_model": "runner", "ProfileResult": "runner",
    "write_run": "reports.run_folder",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'profiling' has no attribute '{name}'")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
