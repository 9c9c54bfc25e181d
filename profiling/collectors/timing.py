"""Time per stage: CPU perf counters, and CUDA events read after one synchronize."""

from __future__ import annotations

from time import perf_counter_ns
from typing import Optional

import torch

from ..stages.markers import StageCall
from .base import Collector
from .metrics import Metric
from .registry import register_collector

__all__ = ["CpuTime", "CudaTime"]

#: ``torch.cuda.Event.record`` without its Python wrapper (the stream is always given here).
_record_event = torch._C._CudaEventBase.record if hasattr(torch._C, "_CudaEventBase") \
    else torch.cuda.Event.record


@register_collector
class CpuTime(Collector):
    """Wall-clock time of each stage on the host (``time.perf_counter_ns``), in ms.

    On a CUDA device this is the time the host spends in the stage (mostly kernel launches),
    not the GPU's time: use :class:`CudaTime` for that.
    """

    name = "cpu_time"
    nesting_rank = 50  # innermost: its clock leaves out the other collectors' bookkeeping
    devices = ("cpu", "cuda")
    metrics = (Metric("cpu_time_ms", unit="ms", kind="time", repeats="statistics",
                      description="wall-clock time of the stage on the host"),)

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

    Each stage records a start and an end event on the current stream: the start event is the
    last thing its entry does, the end event the first thing its exit does, so that only the
    markers' own bookkeeping, not this timer's, falls between a stage's events and its work.
    The elapsed times are read in ``end_forward``, after the forward's last event has
    completed (the runner's one synchronisation per forward; a standalone session
    synchronises there itself), so the measurement never serialises the stages. Whether the
    events are done is asked of the last event of each stream alone (events on a stream
    complete in order). Events are pooled and reused across forwards and sessions, and the
    current stream is looked up by its id, which costs less than building a stream object per
    event (a model that switches streams is still followed).

    Two adjacent stages (one's exit, the next one's entry) do not share an event: the model's
    code between them may launch work, which belongs to neither, and nothing short of a
    trace tells the host whether it did.
    """

    name = "cuda_time"
    nesting_rank = 40  # around the CPU timer, whose bookkeeping launches no GPU work
    devices = ("cuda",)
    metrics = (Metric("cuda_time_ms", unit="ms", kind="time", repeats="statistics",
                      description="GPU time of the stage between two CUDA events"),)

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
        self._left: list[torch.cuda.Event] = []  # the last event on each stream left
        self._device_index = 0
        self._stream_id: Optional[tuple] = None
        self._stream: Optional[torch.cuda.Stream] = None

    def _next_event(self) -> torch.cuda.Event:
        """The next pooled event, with :attr:`_stream` set to the current stream."""
        try:
            event = self._pool[self._used]
        except IndexError:
            event = torch.cuda.Event(enable_timing=True)
            self._pool.append(event)
        self._used += 1
        stream_id = torch._C._cuda_getCurrentStream(self._device_index)
        if stream_id != self._stream_id:
            if self._used > 1:
                self._left.append(self._pool[self._used - 2])
            self._stream_id = stream_id
            self._stream = torch.cuda.current_stream(self._device_index)
        return event

    def start_forward(self) -> None:
        self._used, self._pending, self._open, self._left = 0, [], {}, []
        index = None if self.device is None else torch.device(self.device).index
        self._device_index = torch.cuda.current_device() if index is None else index

    def enter(self, call: StageCall) -> None:
        event = self._next_event()
        self._open[call.index] = event
        _record_event(event, self._stream)

    def exit(self, call: StageCall) -> None:
        event = self._next_event()
        _record_event(event, self._stream)
        self._pending.append((call, self._open.pop(call.index), event))

    def end_forward(self) -> None:
        if self._used and not all(event.query() for event in
                                  (*self._left, self._pool[self._used - 1])):
            torch.cuda.synchronize(self.device)
        for call, start, end in self._pending:
            call.metrics["cuda_time_ms"] = start.elapsed_time(end)
        self._pending = []

    def close(self) -> None:
        # the pooled events stay for this collector's next session: a CUDA event is created at
        # its first record, a few microseconds of host time that a timed forward should not pay
        self._pending, self._open, self._left = [], {}, []
