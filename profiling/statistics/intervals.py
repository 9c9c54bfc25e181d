"""Statistics of repeated timings: intervals of a median, ratios of medians, stopping rules.

Two intervals, each named where it is used:

- :func:`median_interval`, the **order-statistics interval** of a median: distribution-free,
  exact, no resampling. For ``n`` sorted repeats it is ``[x(k), x(n+1-k)]`` with the largest
  rank ``k`` whose coverage ``1 - 2 P(Binomial(n, 1/2) < k)`` is still at least the confidence.
  Below 6 repeats no rank reaches 95%; the interval is then the range ``[min, max]``, whose
  coverage is ``1 - 2^(1-n)`` (94% for 5 repeats, 50% for 2), and one repeat has none (NaN).
- :func:`ratio_interval`, the **percentile bootstrap of the ratio of medians** of two samples,
  each resampled on its own, with a seeded generator so that the same data always give the
  same interval.

:func:`is_significant` calls a change significant when the ratio's interval excludes 1 and the
change is at least ``min_change``. :class:`AutoRepeats` is the stopping rule of
``repeats="auto"``: repeat until the median's interval is within ``±target_ci`` of it, or the
time is up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Sequence

import numpy as np

__all__ = ["CONFIDENCE", "median_interval", "median_interval_coverage", "interval_label", "relative_half_width", "ratio_interval",
           "is_significant", "coefficient_of_variation", "AutoRepeats", "MEDIAN_CI_METHOD",
           "RATIO_CI_METHOD"]

#: The confidence of every interval the profiler reports.
CONFIDENCE = 0.95
#: The words for each interval's method, as written into files and headers.
MEDIAN_CI_METHOD = "order-statistics (binomial) 95% interval of the median"
RATIO_CI_METHOD = "percentile bootstrap (seeded) 95% interval of the ratio of medians"
#: Above this many values the order-statistics rank uses the normal approximation.
_EXACT_UP_TO = 1000


def _order_statistic_rank(n: int, confidence: float) -> int:
    """The largest 1-based rank ``k`` with ``1 - 2 P(Bin(n, 1/2) < k) >= confidence``, or 0.

    Exact binomial sums (integers) up to :data:`_EXACT_UP_TO` values; above, the normal
    approximation ``k = floor((n - z sqrt(n)) / 2)``, off by at most one rank there.
    """
    tail = Fraction(1.0 - confidence).limit_denominator(10 ** 6) / 2
    if n > _EXACT_UP_TO:
        z = NormalDist().inv_cdf(1.0 - float(tail))
        return max(int(math.floor((n - z * math.sqrt(n)) / 2)), 0)
    total = 2 ** n
    cumulative, term, rank = 0, 1, 0
    for k in range(1, n // 2 + 1):
        cumulative += term  # P(B <= k - 1) * 2**n
        if cumulative * tail.denominator > tail.numerator * total:
            break
        rank = k
        term = term * (n - (k - 1)) // k
    return rank


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE
                    ) -> tuple[float, float]:
    """The order-statistics interval ``(low, high)`` of the median of ``values``.

    Distribution-free and exact (see the module's docstring); ``(min, max)`` when there are
    too few values to reach ``confidence``, ``(nan, nan)`` for fewer than two.
    """
    ordered = np.sort(np.asarray(values, dtype=float))
    n = len(ordered)
    if n < 2:
        return math.nan, math.nan
    rank = max(_order_statistic_rank(n, confidence), 1)
    return float(ordered[rank - 1]), float(ordered[n - rank])


def median_interval_coverage(n: int, confidence: float = CONFIDENCE) -> float:
    """The true coverage of :func:`median_interval` for ``n`` values asked for ``confidence``:
    at least ``confidence`` from 6 values (at 95%), ``1 - 2**(1 - n)`` below (the range:
    93.75% for 5 values, 50% for 2), 0 for fewer than two."""
    if n < 2:
        return 0.0
    rank = max(_order_statistic_rank(n, confidence), 1)
    below = sum(math.comb(n, k) for k in range(rank))  # 2**n P(Bin(n, 1/2) < rank)
    return 1.0 - 2.0 * below / 2 ** n


def interval_label(repeats: int) -> tuple[str, float]:
    """The label of the median's interval for ``repeats`` timed forwards and its true
    coverage: ``("95% CI", c)`` where the order-statistics interval reaches 95%, else its
    coverage rounded down (``("93.7% CI", 0.9375)`` for 5 repeats, ``75%`` for 3)."""
    coverage = median_interval_coverage(repeats) if repeats else 0.0
    if not repeats or coverage >= CONFIDENCE:
        return f"{CONFIDENCE:.0%} CI", coverage
    return f"{math.floor(coverage * 1000) / 10:g}% CI", coverage


def relative_half_width(values: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """The larger distance from the median to an end of its interval, over the median
    (``0.02`` means ``±2%``); ``inf`` when the interval is unknown or the median is 0."""
    low, high = median_interval(values, confidence)
    median = float(np.median(np.asarray(values, dtype=float))) if len(values) else math.nan
    if math.isnan(low) or not median:
        return math.inf
    return max(median - low, high - median) / abs(median)


def ratio_interval(a: Sequence[float], b: Sequence[float], *, confidence: float = CONFIDENCE,
                   resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """``(ratio, low, high)``: ``median(b) / median(a)`` and its percentile bootstrap interval.

    Each sample is resampled with replacement on its own ``resamples`` times by
    ``numpy.random.default_rng(seed)``; the interval spans the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles of the resampled ratios. NaNs where a sample is empty or
    its median is 0; a sample of one value is taken as exact.
    """
    first, second = (np.asarray(x, dtype=float) for x in (a, b))
    first, second = first[~np.isnan(first)], second[~np.isnan(second)]
    if not len(first) or not len(second) or np.median(first) == 0:
        return math.nan, math.nan, math.nan
    ratio = float(np.median(second) / np.median(first))
    generator = np.random.default_rng(seed)
    medians = [np.median(x[generator.integers(0, len(x), size=(resamples, len(x)))], axis=1)
               for x in (first, second)]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = medians[1] / medians[0]
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return ratio, float(low), float(high)


def is_significant(low: float, high: float, ratio: float, min_change: float = 0.0) -> bool:
    """Whether a ratio's interval ``[low, high]`` excludes 1 and the change shown,
    ``|ratio - 1|``, is at least ``min_change`` (``0.05``: 5%, in either direction): the rule
    the comparison's legend states, so that a -23.9% change is not marked under "at least
    25%"."""
    if any(math.isnan(v) for v in (low, high, ratio)):
        return False
    outside = low > 1.0 or high < 1.0
    return bool(outside and abs(ratio - 1.0) >= min_change)


def coefficient_of_variation(values: Sequence[float]) -> float:
    """The sample standard deviation over the mean (NaN for fewer than two values)."""
    array = np.asarray(values, dtype=float)
    if len(array) < 2 or not array.mean():
        return math.nan
    return float(array.std(ddof=1) / array.mean())


@dataclass(frozen=True)
class AutoRepeats:
    """``repeats="auto"``: repeat until the forward median's interval is within
    ``±target_ci`` of the median, or until ``max_time_s`` of timed forwards have passed.

    Attributes:
        target_ci: the interval's half-width wanted, relative to the median (0.02: ±2%).
        max_time_s: the time after which the repeats stop whatever the interval.
        min_repeats: the repeats made before the interval is first looked at, and made even
            when they take longer than ``max_time_s``.
    """

    target_ci: float = 0.02
    max_time_s: float = 60.0
    min_repeats: int = 5

    def stop_reason(self, forward_ms: Sequence[float], elapsed_s: float) -> str:
        """``"target"`` or ``"time"`` when the repeats should stop, else ``""``; never
        before ``min_repeats``, even when the time is up."""
        if len(forward_ms) < self.min_repeats:
            return ""
        if relative_half_width(forward_ms) <= self.target_ci:
            return "target"
        return "time" if elapsed_s >= self.max_time_s else ""
