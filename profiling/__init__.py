"""Model-agnostic stage profiling for PyTorch forward passes.

Mark stages in model code with :func:`stage` and :func:`probe`, or attach them to submodules
with :func:`attach_stages`; let :func:`profile_model` run the passes, warm-up, repeats and
aggregation, and :func:`write_run` write the run folder; or open a :class:`Session` with
collectors yourself.

The names are imported on first use, so ``import profiling`` (and a command's ``--help``) does
not load torch.
"""

from __future__ import annotations

from ._exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS = {
    "stage": "stages", "probe": "stages", "StageCall": "stages", "active_session": "stages",
    "is_profiling": "stages", "is_counting": "stages", "Session": "stages",
    "attach_stages": "stages", "walk_payload": "stages",
    "ProfilingError": "errors", "MissingExtra": "errors", "require_extra": "errors",
    "failed_stage": "errors", "add_context": "errors", "failure_context": "errors",
    "failed_after": "errors", "failure_place": "errors",
    "profile_model": "runner", "ProfileResult": "runner",
    "write_run": "reports",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
