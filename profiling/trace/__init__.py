"""A torch.profiler trace of one forward with the stages as named ranges, and what a trace says
about each stage (GPU work launched in its range, the host's synchronisations)."""

from __future__ import annotations

from .._exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS = {
    "export_trace": "export", "trace_forward": "export", "TRACE_FILE": "export",
    "GPU_CATEGORIES": "summary", "SYNC_CALLS": "summary", "RangeWork": "summary",
    "read_trace_events": "summary", "gpu_work_per_range": "summary", "sync_calls": "summary",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
