"""The one timing loop: warm-up, timed repeats (fixed or automatic), the noise verdict.

Every timed run goes through :func:`timed_repeats`: PyTorch's eager and compiled forwards
(:func:`~profiling.runner.profile_model`) and an inference runtime's sessions
(:mod:`profiling.runtimes`). What one forward does around its clock (fresh inputs, a device
synchronize, reading a runtime's counters) is the caller's ``step``; how many forwards run,
when automatic repeats stop, and what the noise report says is decided here once.
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any, Callable, Optional, Sequence, Union

from ..statistics.intervals import AutoRepeats, relative_half_width
from ..statistics.noise import machine_state, noise_report

__all__ = ["timed_repeats", "more_forwards"]


def more_forwards(done: int, warmup: int, repeats: Union[int, AutoRepeats],
                  forward_ms: Sequence[float], elapsed_s: float) -> bool:
    """Whether the timed loop makes another forward after ``done`` (warm-up included)."""
    if done < warmup:
        return True
    if isinstance(repeats, AutoRepeats):
        return not repeats.stop_reason(forward_ms, elapsed_s)
    return done < warmup + int(repeats)


def _auto_record(repeats: AutoRepeats, forward_ms: Sequence[float], elapsed_s: float
                 ) -> dict[str, Any]:
    """What automatic repeats aimed at and reached, for ``meta.json``."""
    return {"target_ci": repeats.target_ci, "max_time_s": repeats.max_time_s,
            "min_repeats": repeats.min_repeats, "repeats": len(forward_ms),
            "reached_ci": relative_half_width(forward_ms), "elapsed_s": round(elapsed_s, 3),
            "stopped_by": repeats.stop_reason(forward_ms, elapsed_s) or "time"}


def timed_repeats(step: Callable[[int], int], warmup: int, repeats: Union[int, AutoRepeats],
                  clock: Callable[[], int] = perf_counter_ns,
                  progress: Optional[Callable[[str, int, int], None]] = None
                  ) -> tuple[list[float], dict[str, Any]]:
    """Call ``step(i)`` for ``warmup`` untimed forwards, then until ``repeats`` says stop
    (a count, or :class:`~profiling.statistics.AutoRepeats`, whose time limit counts the
    timed forwards only). ``step`` runs forward ``i`` and returns its timed span in ``clock``
    nanoseconds (what it does outside that span is not timed).

    Returns the timed forwards' times in ms and the noise verdict
    (:func:`~profiling.statistics.noise_report`, with ``auto_repeats`` for automatic
    repeats; ``{}`` without timed forwards). ``progress(phase, done, planned)`` is called
    after every forward."""
    forward_ms: list[float] = []
    before, done, started = machine_state(), 0, clock()
    planned = int(warmup) + (repeats.min_repeats if isinstance(repeats, AutoRepeats)
                             else int(repeats))
    while more_forwards(done, warmup, repeats, forward_ms, (clock() - started) / 1e9):
        span_ns = step(done)
        if done >= warmup:
            forward_ms.append(span_ns / 1e6)
        else:
            started = clock()  # automatic repeats' time limit counts timed forwards only
        done += 1
        if progress:
            # automatic repeats may run past their minimum: the total grows with them
            progress("warmup" if done <= warmup else "repeats", done, max(done, planned))
    if not forward_ms:
        return forward_ms, {}
    noise = noise_report(before, machine_state(), forward_ms)
    if isinstance(repeats, AutoRepeats):
        noise["auto_repeats"] = _auto_record(repeats, forward_ms, (clock() - started) / 1e9)
    return forward_ms, noise
