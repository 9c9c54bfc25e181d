"""Collectors: each measures one thing per stage call. Choose them by name per run."""

from __future__ import annotations

import importlib
from typing import Sequence

from ..errors import ProfilingError
from .base import Collector

__all__ = ["Collector", "COLLECTORS", "make_collectors"]

#: collector name -> "module:Class" (``payload`` is not a collector but the session's own flag).
COLLECTORS = {
    "cpu_time": "timing:CpuTime",
    "cuda_time": "timing:CudaTime",
    "cpu_memory": "tensor_memory:TensorMemory",
    "cuda_memory": "cuda_memory:CudaMemory",
    "trace_ranges": "trace_ranges:TraceRanges",
    "op_counts": "op_counts:OpCounter",
    "liveness": "liveness:Liveness",
    "module_time": "module_time:ModuleTime",
}


def make_collectors(names: Sequence[str]) -> list[Collector]:
    """Build the collectors named in ``names`` (in that order); ``payload`` is skipped."""
    unknown = [n for n in names if n not in COLLECTORS and n != "payload"]
    if unknown:
        raise ProfilingError(f"unknown collector(s) {', '.join(unknown)}; choose from: payload, "
                             f"{', '.join(COLLECTORS)}")
    collectors = []
    for name in names:
        if name == "payload":
            continue
        module_name, class_name = COLLECTORS[name].split(":")
        module = importlib.import_module(f"{__name__}.{module_name}")
        collectors.append(getattr(module, class_name)())
    return collectors
