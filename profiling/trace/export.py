"""A short torch.profiler trace of one forward, with the stages as named ranges."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import torch
from torch.profiler import ProfilerActivity, profile

from ..stages.attach import attach_stages
from ..collectors.trace_ranges import TraceRanges
from ..stages.guards import call_model, check_inputs

#: The trace's file in a run folder (``trace=true``), gzip-compressed Chrome-trace JSON.
TRACE_FILE = "trace.json.gz"
from ..stages.session import Session

__all__ = ["export_trace", "trace_forward"]


def trace_forward(model: torch.nn.Module, inputs: Union[Sequence[Any], Mapping[str, Any]], *,
                  attach: Optional[Mapping[str, str]] = None, cuda: Optional[bool] = None
                  ) -> bytes:
    """Trace one forward with torch.profiler and return the gzipped Chrome/Perfetto JSON.

    The stages open ``record_function`` ranges (and NVTX ranges on CUDA, for Nsight Systems)
    through :class:`~profiling.collectors.trace_ranges.TraceRanges`, so the trace shows each
    stage by name around its operators and kernels. Open the file in https://ui.perfetto.dev
    or ``chrome://tracing``. Run a warm-up forward first so that one-time costs stay out.

    Args:
        model: the staged model.
        inputs: positional (a sequence) or keyword (a mapping) arguments of the forward.
        attach: extra stages attached to submodules, ``{stage: module_path}``.
        cuda: record CUDA kernels too (default: when CUDA is available).
    """
    check_inputs(inputs)
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available() if cuda is None else cuda:
        activities.append(ProfilerActivity.CUDA)
    with torch.inference_mode(), attach_stages(model, attach or {}):
        with profile(activities=activities) as profiler, Session([TraceRanges()]) as session:
            with session.forward():
                call_model(model, inputs)
            if ProfilerActivity.CUDA in activities:
                torch.cuda.synchronize()
    return export_trace(profiler)


def export_trace(profiler: profile) -> bytes:
    """A finished ``torch.profiler.profile``'s Chrome/Perfetto JSON, gzipped (torch writes it
    to a file only; a temporary one is used)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        profiler.export_chrome_trace(str(path))
        return gzip.compress(path.read_bytes())
