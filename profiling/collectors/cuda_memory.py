"""CUDA memory per stage from the caching allocator's statistics."""

from __future__ import annotations

from typing import Optional

import torch

from ..errors import ProfilingError
from ..stages.markers import StageCall
from .base import Collector
from .metrics import Metric
from .registry import register_collector

__all__ = ["CudaMemory"]


@register_collector
class CudaMemory(Collector):
    """Bytes the caching allocator hands out during each stage, in MB (1e6 bytes).

    ``cuda_retained_mb`` is the change of ``torch.cuda.memory_allocated`` over the stage (what
    the stage leaves allocated); ``cuda_peak_mb`` is the highest allocation reached inside
    the stage, above the allocation at its start. Peaks nest correctly: a stage resets the
    allocator's peak counter on entry and hands its own peak up to its parent on exit.
    Allocation calls are made by the host in program order, so no synchronisation is needed.
    """

    name = "cuda_memory"
    pass_name = "analysis"  # its allocator calls stay out of the timed forwards
    nesting_rank = 20
    devices = ("cuda",)
    metrics = (Metric("cuda_retained_mb", unit="MB", kind="memory",
                      description="CUDA allocator memory the stage leaves allocated"),
               Metric("cuda_peak_mb", unit="MB", kind="memory", calls="max", headline=True,
                      label="peak MB", description="the CUDA allocator's highest allocation "
                      "inside the stage above the level at its start"))

    def __init__(self, device: Optional[torch.device] = None) -> None:
        if not torch.cuda.is_available():
            raise ProfilingError("CUDA memory needs a CUDA device, and this machine has none; "
                                 "use device=cpu or device=meta")
        self.device = device
        self._stack: list[list] = []

    def start_forward(self) -> None:
        self._stack = []

    def enter(self, call: StageCall) -> None:
        if self._stack:
            parent = self._stack[-1]
            parent[2] = max(parent[2], torch.cuda.max_memory_allocated(self.device))
        torch.cuda.reset_peak_memory_stats(self.device)
        start = torch.cuda.memory_allocated(self.device)
        self._stack.append([call, start, start])

    def exit(self, call: StageCall) -> None:
        _, start, peak = self._stack.pop()
        peak = max(peak, torch.cuda.max_memory_allocated(self.device))
        call.metrics["cuda_retained_mb"] = (torch.cuda.memory_allocated(self.device) - start) / 1e6
        call.metrics["cuda_peak_mb"] = (peak - start) / 1e6
        if self._stack:
            self._stack[-1][2] = max(self._stack[-1][2], peak)
