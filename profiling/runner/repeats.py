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

__all__ = ["timed_repeats", "more_forwards", "still_settling", "SETTLE_MAX_FORWARDS",
           "SETTLE_MAX_S"]

#: Settling (``settle=True``): after the asked warm-up, untimed forwards go on while the
#: median of the last :data:`SETTLE_WINDOW` is more than :data:`SETTLE_FALL` below the median
#: of the window before, for at most :data:`SETTLE_MAX_FORWARDS` forwards or
#: :data:`SETTLE_MAX_S` seconds in all.
SETTLE_WINDOW = 3
SETTLE_FALL = 0.05
SETTLE_MAX_FORWARDS = 30
SETTLE_MAX_S = 20.0


def still_settling(warm_ms: Sequence[float]) -> bool:
    """Whether the untimed forwards so far (ms, in order) are still getting faster: fewer
    than two windows of them, or the last window's median more than 5% below the one before.
    An inference runtime's first forwards after compiling are slower for a while (OpenVINO's
    for a dozen on a RegNet: docs/runtimes.md), and a median over them would say the model is
    slower than it is."""
    if len(warm_ms) < 2 * SETTLE_WINDOW:
        return True
    last = sorted(warm_ms[-SETTLE_WINDOW:])[SETTLE_WINDOW // 2]
    before = sorted(warm_ms[-2 * SETTLE_WINDOW:-SETTLE_WINDOW])[SETTLE_WINDOW // 2]
    return last < (1 - SETTLE_FALL) * before


def more_forwards(repeats: Union[int, AutoRepeats], forward_ms: Sequence[float],
                  elapsed_s: float) -> bool:
    """Whether the timed loop makes another timed forward after ``forward_ms`` (the warm-up
    is done before it: :func:`_warm_up`)."""
    if isinstance(repeats, AutoRepeats):
        return not repeats.stop_reason(forward_ms, elapsed_s)
    return len(forward_ms) < int(repeats)


def _auto_record(repeats: AutoRepeats, forward_ms: Sequence[float], elapsed_s: float
                 ) -> dict[str, Any]:
    """What automatic repeats aimed at and reached, for ``meta.json``."""
    return {"target_ci": repeats.target_ci, "max_time_s": repeats.max_time_s,
            "min_repeats": repeats.min_repeats, "repeats": len(forward_ms),
            "reached_ci": relative_half_width(forward_ms), "elapsed_s": round(elapsed_s, 3),
            "stopped_by": repeats.stop_reason(forward_ms, elapsed_s) or "time"}


def timed_repeats(step: Callable[[int], int], warmup: int, repeats: Union[int, AutoRepeats],
                  clock: Callable[[], int] = perf_counter_ns,
                  progress: Optional[Callable[[str, int, int], None]] = None,
                  settle: bool = False) -> tuple[list[float], dict[str, Any]]:
    """Call ``step(i)`` for ``warmup`` untimed forwards (and with ``settle``, more until the
    forward stops getting faster: :func:`still_settling`), then until ``repeats`` says stop
    (a count, or :class:`~profiling.statistics.AutoRepeats`, whose time limit counts the
    timed forwards only). ``step`` runs forward ``i`` and returns its timed span in ``clock``
    nanoseconds (what it does outside that span is not timed).

    Returns the timed forwards' times in ms and the noise verdict
    (:func:`~profiling.statistics.noise_report`, with ``auto_repeats`` for automatic
    repeats and, with ``settle``, ``warmup``: the untimed forwards made and whether the
    forward had stopped getting faster, ``None`` where too few ran to tell; ``{}`` without
    timed forwards).
    ``progress(phase, done, planned)`` is called after every forward."""
    forward_ms: list[float] = []
    before = machine_state()
    timed = repeats.min_repeats if isinstance(repeats, AutoRepeats) else int(repeats)

    def warmed(made: int) -> None:
        if progress:  # the plan grows while settling makes more untimed forwards
            progress("warmup", made, max(made, warmup) + timed)

    untimed = _warm_up(step, warmup, settle, clock, warmed)
    started = clock()  # automatic repeats' time limit counts timed forwards only
    while more_forwards(repeats, forward_ms, (clock() - started) / 1e9):
        forward_ms.append(step(len(untimed) + len(forward_ms)) / 1e6)
        if progress:
            # automatic repeats may run past their minimum: the total grows with them
            made = len(untimed) + len(forward_ms)
            progress("repeats", made, max(made, len(untimed) + timed))
    if not forward_ms:
        return forward_ms, {}
    noise = noise_report(before, machine_state(), forward_ms)
    if isinstance(repeats, AutoRepeats):
        noise["auto_repeats"] = _auto_record(repeats, forward_ms, (clock() - started) / 1e9)
    if settle:
        # settled: None where too few untimed forwards ran to tell (a slow forward, the cap)
        noise["warmup"] = {"asked": int(warmup), "made": len(untimed),
                           "settled": None if len(untimed) < 2 * SETTLE_WINDOW
                           else not still_settling(untimed)}
    return forward_ms, noise


def _warm_up(step: Callable[[int], int], warmup: int, settle: bool,
             clock: Callable[[], int], made: Callable[[int], None]) -> list[float]:
    """The untimed forwards (their times in ms): ``warmup`` of them, and with ``settle`` more
    while :func:`still_settling` says so, within :data:`SETTLE_MAX_FORWARDS` and
    :data:`SETTLE_MAX_S`; ``made(count)`` after each."""
    untimed: list[float] = []
    started = clock()

    def more() -> bool:
        if len(untimed) < warmup:
            return True
        return (settle and still_settling(untimed) and len(untimed) < SETTLE_MAX_FORWARDS
                and (clock() - started) / 1e9 < SETTLE_MAX_S)

    while more():
        untimed.append(step(len(untimed)) / 1e6)
        made(len(untimed))
    return untimed
