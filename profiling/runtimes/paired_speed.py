"""The runtime's profiler overhead and int8's speed-up, as paired, interleaved measurements.

A single reading of each side (the median of a few profiled forwards against the median of a
few unprofiled ones timed afterwards) moves with whatever else the machine does meanwhile, by
more than the overhead itself (docs/runtimes.md). Here each session is opened once and
kept open, and every round times one forward of each (profiled, unprofiled and, for int8, the
float32 model), their order rotated round by round; the figure is the median of the per-round
ratios with its order-statistics interval
(:func:`profiling.statistics.paired.ratio_entry`), as ``zoo.compare --run`` compares. The
sessions take turns on the same cores, so they are opened ``interleaved``: with what the
executor declares such sessions change from the runtime's defaults
(:attr:`~.registry.Executor.interleaved_settings`), which ``meta.json`` records.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..statistics.paired import interleaved_ms, ratio_entry
from .backends import make_backend
from .registry import executor

__all__ = ["paired_speeds", "forward_timer", "interleaved_settings", "PAIRED_ROUNDS"]

#: The fewest rounds: 10 let the median's interval reach 95% with room to spare.
PAIRED_ROUNDS = 10


def interleaved_settings(runtime: str) -> dict[str, str]:
    """What sessions of ``runtime`` that take turns change from its defaults, as its
    executor declares them (``meta.json``'s ``paired_session_settings`` and
    ``ab_session_settings``)."""
    return executor(runtime).session_settings(interleaved=True)


def forward_timer(backend: Any, feeds: Sequence[np.ndarray]) -> Callable[[], float]:
    """A timer of one ``backend.run(feeds)`` in ms (the session stays open between calls)."""
    def timed() -> float:
        start = time.perf_counter_ns()
        backend.run(feeds)
        return (time.perf_counter_ns() - start) / 1e6
    return timed


def paired_speeds(runtime: str, run_path: Path, float_path: Path, workdir: Path,
                  device_type: str, feeds: Sequence[np.ndarray], rounds: int,
                  quantised_model: Any = None, dtype: str = "float32") -> dict[str, Any]:
    """``meta.json``'s speed figures of a runtime run: ``profiler_overhead`` (profiled over
    unprofiled) and, for ``dtype="int8"``, ``int8_speedup`` (float32 over int8, both
    unprofiled), each a :func:`~profiling.statistics.paired.ratio_entry` over
    ``max(rounds, PAIRED_ROUNDS)`` interleaved rounds, the unprofiled medians, and the
    sessions' settings that differ from the runtime's defaults (:func:`interleaved_settings`)."""
    folder = Path(workdir) / "paired"  # the profiled session's own trace, apart from the run's
    folder.mkdir(parents=True, exist_ok=True)
    sessions = [make_backend(runtime, run_path, folder, device_type, profile, quantised_model,
                             dtype=dtype, interleaved=True) for profile in (True, False)]
    if dtype == "int8":
        sessions.append(make_backend(runtime, float_path, folder, device_type, False,
                                     interleaved=True))
    times = interleaved_ms([forward_timer(s, feeds) for s in sessions],
                           max(rounds, PAIRED_ROUNDS))
    profiled, plain = times[0], times[1]
    figures: dict[str, Any] = {"unprofiled_forward_ms_median": float(np.median(plain)),
                               "profiler_overhead": ratio_entry(plain, profiled),
                               "paired_session_settings": interleaved_settings(runtime)}
    if dtype == "int8":
        figures["float32_forward_ms_median"] = float(np.median(times[2]))
        figures["int8_speedup"] = ratio_entry(plain, times[2])
    return figures
