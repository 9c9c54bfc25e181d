"""Trace ranges named after the stages, for torch.profiler and Nsight Systems."""

from __future__ import annotations

import torch

from ..stages.markers import StageCall
from .base import Collector
from .registry import register_collector

__all__ = ["TraceRanges"]


@register_collector
class TraceRanges(Collector):
    """Opens a ``record_function`` range (and an NVTX range when CUDA is available) per stage.

    torch.profiler traces (Chrome/Perfetto) then show the stage names as ranges, and Nsight
    Systems shows them on the NVTX row. The ranges cost a few microseconds per stage.
    """

    name = "trace_ranges"
    nesting_rank = 30  # outside the timers: pushing and popping a range stays off their clocks

    def __init__(self) -> None:
        self._nvtx = torch.cuda.is_available()
        self._open: dict[int, object] = {}

    def enter(self, call: StageCall) -> None:
        handle = torch.ops.profiler._record_function_enter_new(call.name, None)
        self._open[call.index] = handle
        if self._nvtx:
            torch.cuda.nvtx.range_push(call.name)

    def exit(self, call: StageCall) -> None:
        if self._nvtx:
            torch.cuda.nvtx.range_pop()
        torch.ops.profiler._record_function_exit._RecordFunction(self._open.pop(call.index))
