"""Time per stage: CPU perf counters, and CUDA events read after one synchronize."""

from __future__ import annotations

from time import perf_counter_ns
from typing import Optional

import torch

from ..stages import StageCall
from .base import Collector
from .registry import register_collector

__all__ = ["CpuTime", "CudaTime"]


@register_collector
class CpuTime(Collector):
    """Wall-clock time of each stage on the host (``time.perf_counter_ns``), in ms.

    On a CUDA device this is the time the host spends in the stage (mostly kernel launches),
    not the GPU's time: use :class:`CudaTime` for that.
    """

    name = "cpu_time"
    nesting_rank = 50
    devices = ("cpu", "cuda")
    metrics = ("cpu_time_ms",)

    def __init__(self) -> None:
        self._starts: dict[int, int] = {}

    def start_forward(self) -> None:
        self._starts = {}

    def enter(self, call: StageCall) -> None:
        self._starts[call.index] = perf_counter_ns()

    def exit(self, call: StageCall) -> None:
        call.metrics["cpu_time_ms"] = (perf_counter_ns() - self._starts.pop(call.index)) / 1e6


@register_collector
class CudaTime(Collector):
    """GPU time of each stage from CUDA events, in ms.

    Each stage records a start and an end event on the current stream; the elapsed times are
    read in ``end_forward`` after a single ``torch.cuda.synchronize`` for the whole forward, so
    the measurement never serialises the stages. Events are pooled and reused across forwards.
    """

    name = "cuda_time"
    nesting_rank = 40
    devices = ("cuda",)
    metrics = ("cuda_time_ms",)

    def __init__(self, device: Optional[torch.device] = None) -> None:
        if not torch.cuda.is_available():
            from ..errors import ProfilingError
            raise ProfilingError("CUDA time needs a CUDA device, and this machine has none; "
                                 "use device=cpu or device=meta")
        self.device = device
        self._pool: list[torch.cuda.Event] = []
        self._used = 0
        self._pending: list[tuple[StageCall, torch.cuda.Event, torch.cuda.Event]] = []
        self._open: dict[int, torch.cuda.Event] = {}

    def _event(self) -> torch.cuda.Event:
        if self._used == len(self._pool):
            self._pool.append(torch.cuda.Event(enable_timing=True))
        event = self._pool[self._used]
        self._used += 1
        return event

    def start_forward(self) -> None:
        self._used, self._pending, self._open = 0, [], {}

    def enter(self, call: StageCall) -> None:
        event = self._event()
        event.record()
        self._open[call.index] = event

    def exit(self, call: StageCall) -> None:
        end = self._event()
        end.record()
        self._pending.append((call, self._open.pop(call.index), end))

    def end_forward(self) -> None:
        torch.cuda.synchronize(self.device)
        for call, start, end in self._pending:
            call.metrics["cuda_time_ms"] = start.elapsed_time(end)
        self._pending = []

    def close(self) -> None:
        self._pool = []
