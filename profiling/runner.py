"""Run a model under profiling: an analysis pass, warm-up, timed repeats, aggregation."""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import pandas as pd
import torch

from .aggregate import aggregate_stages
from .attach import attach_stages
from .collectors import Collector, make_collectors
from .errors import ProfilingError
from .session import Session
from .stages import StageCall

__all__ = ["ProfileResult", "profile_model", "check_run_options"]

#: Outer collectors first: the timers sit innermost so they measure the least of the others.
_NESTING_ORDER = ("cpu_memory", "op_counts", "cuda_memory", "trace_ranges", "cuda_time",
                  "cpu_time")


@dataclass
class ProfileResult:
    """What one profiling run measured.

    Attributes:
        calls: the stage calls of the reference forward (the analysis pass when there is one,
            else the first timed forward), with payload and the instrumenting metrics.
        events: ``(kind, call)`` in the order they happened in that forward (for logs).
        timed: the stage calls of each timed forward.
        forward_ms: host wall time of each timed forward (after a CUDA synchronize), in ms.
        stages: one row per stage call with every metric aggregated (see
            :func:`~profiling.aggregate.aggregate_stages`).
        output: what the model returned in its first forward outside the analysis pass (no
            operator is intercepted there, so it is exactly what the plain model returns).
        collectors: the collector objects used, by name (e.g. the op counter's coverage).
    """

    calls: list[StageCall]
    events: list[tuple[str, StageCall]]
    timed: list[list[StageCall]]
    forward_ms: list[float]
    stages: pd.DataFrame
    output: Any
    collectors: dict[str, Collector] = field(default_factory=dict)


def _split(collectors: Sequence[Union[str, Collector]]) -> tuple[bool, list[Collector],
                                                                  list[Collector]]:
    names = [c for c in collectors if isinstance(c, str)]
    objects = make_collectors(names) + [c for c in collectors if not isinstance(c, str)]
    order = {name: i for i, name in enumerate(_NESTING_ORDER)}
    objects.sort(key=lambda c: order.get(c.name, -1))
    instrumenting = [c for c in objects if c.instrumenting]
    timing = [c for c in objects if not c.instrumenting]
    return "payload" in names, instrumenting, timing


def _call(model: Callable, inputs: Union[Sequence[Any], Mapping[str, Any]]) -> Any:
    if isinstance(inputs, Mapping):
        return model(**inputs)
    return model(*inputs)


def _synchronize(device_type: str) -> None:
    if device_type == "cuda":
        torch.cuda.synchronize()


def check_run_options(warmup: int, repeats: int) -> None:
    """Raise :class:`ProfilingError` unless ``warmup >= 0`` and ``repeats >= 1``."""
    if int(repeats) < 1:
        raise ProfilingError(f"run.repeats must be at least 1, got {repeats}")
    if int(warmup) < 0:
        raise ProfilingError(f"run.warmup must be 0 or more, got {warmup}")


def profile_model(model: torch.nn.Module, inputs: Union[Sequence[Any], Mapping[str, Any]], *,
                  collectors: Sequence[Union[str, Collector]] = ("payload", "cpu_time"),
                  warmup: int = 1, repeats: int = 5,
                  attach: Optional[Mapping[str, str]] = None,
                  progress: Optional[Callable[[str, int, int], None]] = None) -> ProfileResult:
    """Profile ``model(*inputs)`` stage by stage.

    Instrumenting collectors (payload, tensor memory, operation counts) run together in one
    analysis forward; the timing collectors run in ``warmup`` untimed and ``repeats`` timed
    forwards of their own, so counting never slows what is timed. Everything runs under
    ``torch.inference_mode``. Stages named in ``attach`` (``{stage: module_path}``) are hooked
    only for the duration of the call, and no hook or session outlives it, even on an error.

    Args:
        model: any module (or callable) whose forward is marked with stages or attached ones.
        inputs: positional arguments (a sequence) or keyword arguments (a mapping).
        collectors: names from :data:`profiling.collectors.COLLECTORS` and ``"payload"``, or
            collector objects.
        warmup: untimed forwards before the timed ones (>= 0).
        repeats: timed forwards (>= 1).
        attach: extra stages attached to submodules by path.
        progress: called as ``progress(phase, done, total)`` after each forward.
    """
    check_run_options(warmup, repeats)
    record_payload, instrumenting, timing = _split(collectors)
    for collector in instrumenting + timing:
        collector.bind(model, inputs)
    device_type = _device_type(model, inputs)
    reference: Optional[Session] = None
    output = None
    with torch.inference_mode(), attach_stages(model, attach or {}):
        if record_payload or instrumenting:
            with Session(instrumenting, record_payload=record_payload) as reference:
                with reference.forward():
                    _call(model, inputs)
            if progress:
                progress("analysis", 1, 1)
        forward_ms: list[float] = []
        with Session(timing) as timed:
            for i in range(int(warmup) + int(repeats)):
                _synchronize(device_type)
                start = perf_counter_ns()
                with timed.forward():
                    result = _call(model, inputs)
                _synchronize(device_type)
                if i >= warmup:
                    forward_ms.append((perf_counter_ns() - start) / 1e6)
                if output is None:
                    output = result
                if progress:
                    progress("warmup" if i < warmup else "repeats", i + 1, warmup + repeats)
    timed_forwards = timed.forwards[int(warmup):]
    calls = reference.forwards[0] if reference is not None else timed_forwards[0]
    events = reference.events if reference is not None else timed.events
    return ProfileResult(
        calls=calls, events=events, timed=timed_forwards, forward_ms=forward_ms,
        stages=aggregate_stages(calls, timed_forwards), output=output,
        collectors={c.name: c for c in instrumenting + timing})


def _device_type(model: Any, inputs: Any) -> str:
    if isinstance(model, torch.nn.Module):
        for tensor in list(model.parameters())[:1] + list(model.buffers())[:1]:
            return tensor.device.type
    for value in (inputs.values() if isinstance(inputs, Mapping) else inputs):
        if isinstance(value, torch.Tensor):
            return value.device.type
    return "cpu"
