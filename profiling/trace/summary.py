"""What a torch.profiler trace says about the stages: GPU work launched inside each stage's
range, and the host's synchronisations.

The trace is the Chrome/Perfetto JSON that :func:`profiling.trace.trace_forward` returns (or any
``export_chrome_trace`` file). A stage's range is the ``record_function`` range its marker
opens (category ``user_annotation``); the GPU work of a stage is every kernel, copy and memset
whose launch (a CUDA runtime or driver call, linked to the GPU activity by its
``correlation`` id) the host made inside that range, nested stages included.
"""

from __future__ import annotations

import bisect
import gzip
import json
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence, Union

__all__ = ["GPU_CATEGORIES", "SYNC_CALLS", "RangeWork", "read_trace_events", "gpu_work_per_range",
           "sync_calls"]

#: Trace categories of work that runs on the GPU.
GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
#: CUDA runtime calls that make the host wait for the GPU.
SYNC_CALLS = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize",
                        "cudaEventSynchronize"})
_LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})


@dataclass(frozen=True)
class RangeWork:
    """The GPU work launched inside one call of a named range.

    Attributes:
        name: the range (stage) name.
        call_index: how many ranges of the same name came before this one.
        gpu_ms: the summed durations of its kernels, copies and memsets.
        span_ms: from the start of its first GPU activity to the end of its last (0 if none).
        launches: how many GPU activities it launched.
    """

    name: str
    call_index: int
    gpu_ms: float
    span_ms: float
    launches: int


def read_trace_events(trace: Union[bytes, str, dict]) -> list[dict]:
    """The ``traceEvents`` of a trace given as (gzipped) JSON bytes, text or a parsed dict."""
    if isinstance(trace, bytes):
        trace = gzip.decompress(trace) if trace[:2] == b"\x1f\x8b" else trace
        trace = json.loads(trace)
    elif isinstance(trace, str):
        trace = json.loads(trace)
    return list(trace["traceEvents"])


def _complete(events: Iterable[dict], categories: Iterable[str]) -> list[dict]:
    wanted = set(categories)
    return [e for e in events if e.get("ph") == "X" and e.get("cat") in wanted]


def gpu_work_per_range(events: Sequence[dict], names: Optional[Iterable[str]] = None
                       ) -> list[RangeWork]:
    """The GPU work launched inside each ``user_annotation`` range, in the ranges' order.

    Args:
        events: trace events (:func:`read_trace_events`).
        names: keep only ranges with these names (the stage names); default: all.
    """
    keep = None if names is None else set(names)
    activity = {e["args"]["correlation"]: e for e in _complete(events, GPU_CATEGORIES)
                if "correlation" in e.get("args", {})}
    launches: dict[object, list[tuple[float, int]]] = {}
    for event in _complete(events, _LAUNCH_CATEGORIES):
        correlation = event.get("args", {}).get("correlation")
        if correlation in activity:
            launches.setdefault(event.get("tid"), []).append((float(event["ts"]), correlation))
    for thread in launches.values():
        thread.sort()
    ranges = sorted((e for e in _complete(events, ("user_annotation",))
                     if keep is None or e["name"] in keep), key=lambda e: float(e["ts"]))
    counts: dict[str, int] = {}
    result = []
    for span in ranges:
        start, end = float(span["ts"]), float(span["ts"]) + float(span["dur"])
        thread = launches.get(span.get("tid"), [])
        first = bisect.bisect_left(thread, (start, -1))
        inside = [activity[c] for ts, c in thread[first:bisect.bisect_right(
            thread, (end, float("inf")))]]
        gpu_us = sum(float(a["dur"]) for a in inside)
        span_us = (max(float(a["ts"]) + float(a["dur"]) for a in inside)
                   - min(float(a["ts"]) for a in inside)) if inside else 0.0
        call_index = counts.get(span["name"], 0)
        counts[span["name"]] = call_index + 1
        result.append(RangeWork(span["name"], call_index, gpu_us / 1e3, span_us / 1e3,
                                len(inside)))
    return result


def sync_calls(events: Sequence[dict], *, outside_operators: bool = False) -> list[dict]:
    """The host's synchronisations (:data:`SYNC_CALLS`), in time order.

    Args:
        events: trace events (:func:`read_trace_events`).
        outside_operators: leave out those made inside an operator (``cpu_op``) on the same
            thread, such as ``aten::nonzero`` reading a count back: the model's own, not the
            caller's.
    """
    syncs = sorted((e for e in _complete(events, _LAUNCH_CATEGORIES) if e["name"] in SYNC_CALLS),
                   key=lambda e: float(e["ts"]))
    if not outside_operators:
        return syncs
    operators = _complete(events, ("cpu_op",))
    return [s for s in syncs if not any(
        o.get("tid") == s.get("tid") and float(o["ts"]) <= float(s["ts"])
        <= float(o["ts"]) + float(o["dur"]) for o in operators)]
