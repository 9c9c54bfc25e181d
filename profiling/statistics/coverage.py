"""What falls outside every stage: ``other`` rows, and the share of the forward in stages.

Time, FLOPs and bytes spent outside every stage (glue code between stages, unstaged modules)
are an ``other`` row at each depth, so that the rows of one depth add up to their total:

* at the top (depth 0), ``other`` is the whole forward minus its top-level stages: the timed
  forward's wall time (``forward_ms``) minus the stages' times, and the counted totals minus
  the stages' counts;
* under a stage ``P`` with stages inside it, ``P/other`` (depth of ``P`` + 1) is ``P``'s value
  minus its children's, over all of ``P``'s calls.

The rows are pseudo stage calls of kind ``"other"``, made per forward, so that they get the
same statistics over the repeats as every stage (:func:`profiling.statistics.aggregate_stages`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from .aggregate import stage_time_sums, time_column
from ..counting.counts import COUNT_FIELDS
from ..files.reading import ROUND_OFF
from ..stages.markers import StageCall

__all__ = ["OTHER", "ROUND_OFF", "remainder", "with_other_calls", "stage_coverage",
           "coverage_line", "LOW_COVERAGE"]

#: The name of the top-level ``other`` row; a nested one is ``PARENT/other``.
OTHER = "other"
#: Below this share of the time or FLOPs inside named stages, the coverage line warns.
LOW_COVERAGE = 0.90
#: The metrics that add up over stages (times and counts; memory peaks do not).
TIMES = ("cpu_time_ms", "cuda_time_ms")
ADDITIVE = (*TIMES, *COUNT_FIELDS)


def _sums(calls: Sequence[StageCall]) -> dict[str, float]:
    sums: dict[str, float] = {}
    for call in calls:
        for metric, value in call.metrics.items():
            if metric in ADDITIVE:
                sums[metric] = sums.get(metric, 0) + value
    return sums


def with_other_calls(calls: Sequence[StageCall], totals: Mapping[str, float]
                     ) -> list[StageCall]:
    """``calls`` with their ``other`` pseudo calls inserted where a table shows them: each
    nested one right after its parent's last descendant, the top-level one last.

    ``totals`` holds the whole forward's additive metrics (``cpu_time_ms`` or ``cuda_time_ms``
    as the forward's wall time, the counted totals); a metric the totals lack gets no
    top-level ``other`` value.
    """
    placed: dict[int, list[StageCall]] = {}
    for after, call in _placed_others(calls, totals):
        placed.setdefault(after, []).append(call)
    ordered: list[StageCall] = []
    for call in calls:
        ordered.append(call)
        ordered.extend(reversed(placed.get(call.index, [])))
    return ordered + placed.get(-1, [])


def _placed_others(calls: Sequence[StageCall], totals: Mapping[str, float]
                   ) -> list[tuple[int, StageCall]]:
    stages = [call for call in calls if call.kind == "stage"]
    by_index = {call.index: call for call in stages}
    children: dict[str, list[StageCall]] = {}
    last_descendant: dict[str, int] = {}
    for call in stages:
        ancestor = by_index.get(call.parent) if call.parent is not None else None
        if ancestor is not None:
            children.setdefault(ancestor.name, []).append(call)
        while ancestor is not None:
            last_descendant[ancestor.name] = call.index
            ancestor = by_index.get(ancestor.parent) if ancestor.parent is not None else None
    next_index = max((call.index for call in calls), default=-1) + 1
    placed = []
    for name, inner in children.items():
        parents = [call for call in stages if call.name == name]
        other = StageCall(f"{name}/{OTHER}", OTHER, next_index, parents[0].index,
                          parents[0].depth + 1, 0)
        other.metrics = _difference(_sums(parents), _sums(inner))
        placed.append((last_descendant[name], other))
        next_index += 1
    top = StageCall(OTHER, OTHER, next_index, None, 0, 0)
    top.metrics = _difference(dict(totals), _sums([c for c in stages if c.depth == 0]))
    placed.append((-1, top))
    return placed


def _difference(whole: Mapping[str, float], parts: Mapping[str, float]) -> dict[str, float]:
    """``whole`` less ``parts`` for each additive metric: a time never below 0 (the parts'
    timers can add up to a little more than the whole's: clock noise, not time spent), a count
    less its round-off (:func:`remainder`)."""
    return {metric: max(value - parts.get(metric, 0), 0.0) if metric in TIMES
            else remainder(value, parts.get(metric, 0)) for metric, value in whole.items()
            if metric in ADDITIVE}


def remainder(whole: float, parts: float) -> float:
    """``whole - parts``, where a negative result of floats within :data:`ROUND_OFF` of the
    larger of the two is 0: adding the same times in another order (a parent's node times and
    its children's) leaves a round-off such as -4.4e-17 where nothing is left, and no time or
    count is below 0. A larger negative remainder is kept: it is measured (stages timed to
    overlap)."""
    rest = whole - parts
    if isinstance(rest, float) and -ROUND_OFF * max(abs(whole), abs(parts)) <= rest < 0:
        return 0.0
    return rest


def stage_coverage(stages: pd.DataFrame, forward_ms: Sequence[float],
                   totals: Optional[Mapping[str, Any]],
                   times: Optional[pd.DataFrame] = None) -> dict[str, float]:
    """The share of the forward inside named top-level stages, each only when measured and
    never above 1: ``time``, one less the top-level ``other`` row's median over the median
    forward (what the ``other`` row of every report says is left; without that row, the
    top-level stages' times, :func:`~profiling.statistics.aggregate.stage_time_sums` of the
    raw repeats ``times``, over the median forward), and ``flops``, the top-level stages'
    FLOPs over the counted total."""
    top = stages[(stages["kind"] == "stage") & (stages["depth"] == 0)]
    coverage: dict[str, float] = {}
    time = time_column(stages)
    if time and len(forward_ms) and float(np.median(forward_ms)) > 0:
        forward = float(np.median(forward_ms))
        other = stages.loc[(stages["kind"] == OTHER) & (stages["stage"] == OTHER), time]
        inside = (forward - max(float(other.iloc[0]), 0.0) if len(other) and other.notna().all()
                  else float(stage_time_sums(top, time, times)["time_ms"].sum()))
        coverage["time"] = min(max(inside / forward, 0.0), 1.0)
    if totals and totals.get("flops") and "flops" in top:
        coverage["flops"] = min(float(top["flops"].sum() / totals["flops"]), 1.0)
    return coverage


def coverage_line(coverage: Mapping[str, float],
                  hint: str = "attach={stage_name: module_path} names more") -> Optional[str]:
    """``coverage: 97% of the time and 99.8% of the FLOPs in named stages``, with a warning and
    ``hint`` (how to name more stages) when either is below :data:`LOW_COVERAGE` (``None``
    when nothing was measured)."""
    if not coverage:
        return None
    parts = [f"{_share(value)} of the {'FLOPs' if name == 'flops' else name}"
             for name, value in coverage.items()]
    line = f"coverage: {' and '.join(parts)} in named stages (the rest is the 'other' rows)"
    if min(coverage.values()) < LOW_COVERAGE:
        line += (f"\nwarning: less than {LOW_COVERAGE:.0%} of the forward is in named stages; "
                 f"{hint}")
    return line


def _share(value: float) -> str:
    percent = 100 * value
    if 99 < percent < 100:  # rounded down: 99.97% is not all of it
        return f"{math.floor(percent * 10) / 10:.1f}%"
    return f"{percent:.0f}%"
