"""Significance of an interleaved A/B comparison: paired per-round ratios.

When two configurations are timed in alternation in one process (A, B, B, A, A, B, ...), each
round gives a pair of times that the machine's state at that moment hit alike. The change of a
stage is then the median over the rounds of the per-round ratio ``B / A``, and its interval is
the order-statistics interval of that median (:func:`~profiling.statistics.median_interval`):
distribution-free, and blind to drift slower than a round.

One rule decides ``significant``, and the legend prints it: the interval excludes 1 **and** the
median change ``|ratio - 1|`` is at least ``min_change``. The interval's confidence is
``1 - 0.05 / m`` for ``m`` compared rows (Bonferroni), so that across all the stages of two
identical configurations the chance of any false alarm stays near 5%.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pandas as pd

from .intervals import median_interval
from .thresholds import AB_MIN_CHANGE

__all__ = ["AB_MIN_CHANGE", "FAMILY_ERROR", "paired_ratio", "paired_significance",
           "is_change", "AB_RULE", "interleaved_ms", "ratio_entry", "ratio_value"]

#: The chance of any false alarm among all the compared rows that the intervals allow.
FAMILY_ERROR = 0.05
#: The rule, as the legend prints it (``{confidence}`` and ``{min_change}`` filled in).
AB_RULE = ("* significant: the {confidence} interval of the median per-round ratio B/A (A and "
           "B timed in alternation, paired by round) excludes 1 and the change is at least "
           "{min_change}")


def is_change(ratio: float, low: float, high: float, min_change: float) -> bool:
    """The one rule: ``[low, high]`` excludes 1 and ``|ratio - 1| >= min_change``."""
    if any(math.isnan(v) for v in (ratio, low, high)):
        return False
    return bool((low > 1.0 or high < 1.0) and abs(ratio - 1.0) >= min_change)


def paired_ratio(a: Sequence[float], b: Sequence[float], confidence: float
                 ) -> tuple[float, float, float]:
    """``(ratio, low, high)``: the median of ``b[i] / a[i]`` over the rounds and its
    order-statistics interval at ``confidence``; NaNs without a round whose A is positive, and
    an interval of NaNs when there are too few rounds for any interval to reach
    ``confidence``."""
    first, second = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    usable = (first > 0) & ~np.isnan(second)
    ratios = second[usable] / first[usable]
    if not len(ratios):
        return math.nan, math.nan, math.nan
    if 1.0 - 2.0 ** (1 - len(ratios)) < confidence:
        # too few rounds: even the range [min, max] covers less than the confidence asked
        return float(np.median(ratios)), math.nan, math.nan
    low, high = median_interval(ratios, confidence)
    return float(np.median(ratios)), low, high


def paired_significance(keys: Sequence[tuple], times_a: pd.DataFrame, times_b: pd.DataFrame,
                        metric: str, forward: Optional[tuple[Sequence[float], Sequence[float]]],
                        *, min_change: float = AB_MIN_CHANGE) -> pd.DataFrame:
    """Per ``(stage, call_index)`` of ``keys`` (and first, with ``forward``'s two lists of
    forward times, the whole forward): ``time_ratio``, ``time_ratio_ci95_low``/``_high`` and
    ``significant``, from the per-round times of ``metric`` in the two ``times.csv`` tables
    (row ``repeat`` ``i`` of A and of B come from the same round)."""
    series = []
    if forward is not None:
        series.append((np.asarray(forward[0], float), np.asarray(forward[1], float)))
    tables = [t.pivot_table(index=["stage", "call_index"], columns="repeat", values=metric,
                            aggfunc="sum") if metric in t else None for t in (times_a, times_b)]
    for key in keys:
        pair = [t.loc[key].to_numpy(float) if t is not None and key in t.index else
                np.array([]) for t in tables]
        rounds = min(len(pair[0]), len(pair[1]))
        series.append((pair[0][:rounds], pair[1][:rounds]))
    confidence = 1.0 - FAMILY_ERROR / max(len(series), 1)
    rows = []
    for first, second in series:
        ratio, low, high = paired_ratio(first, second, confidence)
        rows.append({"time_ratio": ratio, "time_ratio_ci95_low": low,
                     "time_ratio_ci95_high": high,
                     "significant": is_change(ratio, low, high, min_change)})
    table = pd.DataFrame(rows, columns=["time_ratio", "time_ratio_ci95_low",
                                        "time_ratio_ci95_high", "significant"])
    table.attrs["confidence"] = confidence
    return table


def interleaved_ms(timers: Sequence[Callable[[], float]], rounds: int, warmup: int = 1,
                   progress: Optional[Callable[[int, int], None]] = None
                   ) -> list[list[float]]:
    """Each timer's times (ms) over ``rounds`` rounds, one call of every timer per round, the
    order rotated each round (so that none always runs first or after the same one), after
    ``warmup`` untimed rounds. A timer times one forward and returns its ms; ``progress`` is
    called as ``progress(done, total)`` after each round."""
    times: list[list[float]] = [[] for _ in timers]
    for index in range(warmup + rounds):
        shift = index % len(timers)
        for side in [*range(shift, len(timers)), *range(shift)]:
            elapsed = timers[side]()
            if index >= warmup:
                times[side].append(elapsed)
        if progress is not None:
            progress(index + 1, warmup + rounds)
    return times


def ratio_entry(a: Sequence[float], b: Sequence[float], confidence: float = 1 - FAMILY_ERROR
                ) -> dict[str, Any]:
    """``meta.json``'s form of :func:`paired_ratio` (``b / a``): ``ratio``, ``low``,
    ``high`` (``None`` where too few rounds give no interval), ``confidence`` and
    ``rounds``."""
    ratio, low, high = paired_ratio(a, b, confidence)
    figure = {"ratio": ratio, "low": low, "high": high}
    return {**{key: None if math.isnan(v) else round(v, 4) for key, v in figure.items()},
            "confidence": confidence, "rounds": min(len(a), len(b))}


def ratio_value(entry: Any) -> Optional[float]:
    """The ratio of a :func:`ratio_entry`, or a plain number as older runs stored it."""
    if isinstance(entry, dict):
        return entry.get("ratio")
    return None if entry is None else float(entry)
