"""The figures of a split, once, for every face that draws them: ``split_latency.png``
(matplotlib) and the split views of the HTML pages (plotly) draw what these functions give and
derive nothing themselves.

* :func:`executed_curves`: per encoding, each executed cut's estimate (the formula with its
  terms, ``estimated_terms_ms``) against the shaped bandwidth, and its measured end-to-end
  median with the interval of the median (``executed.csv``'s rows on shaped links; an
  unshaped or remote link has no bandwidth to draw against).
* :func:`drawn_latency_cuts`: the cuts whose estimated latency is drawn: the input, the stage
  cuts, the output and the Pareto front, the first :data:`MAX_DRAWN_CUTS` of them.
* :func:`latency_ticks`: the ticks of a log latency axis, 1-2-5 per decade, each labelled in
  ms below a second and in s from one, so that no tick reads ``10^4``.
* :func:`label_heights`: where the labels at the right ends of lines go on a log axis, moved
  apart just enough not to overlap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from .numbers import log_ticks

__all__ = ["ExecutedCurve", "executed_curves", "drawn_latency_cuts", "latency_ticks",
           "label_heights", "MAX_DRAWN_CUTS"]

#: The most cuts a latency chart draws (each a line).
MAX_DRAWN_CUTS = 20


@dataclass(frozen=True)
class ExecutedCurve:
    """One cut and encoding of an executed split: at each shaped bandwidth (ascending), the
    estimate with its terms and the measured median with its interval (all ms)."""

    cut: str
    bandwidth_mbps: tuple[float, ...]
    estimated_ms: tuple[float, ...]
    measured_ms: tuple[float, ...]
    low_ms: tuple[float, ...]
    high_ms: tuple[float, ...]


def executed_curves(executed: pd.DataFrame) -> dict[str, list[ExecutedCurve]]:
    """``executed.csv``'s shaped rows as curves: ``{encoding: [curve per cut]}``, encodings
    and cuts in the order they ran (forward order), empty without a shaped row."""
    shaped = executed[executed["shaped"].astype(bool)] if len(executed) else executed
    curves: dict[str, list[ExecutedCurve]] = {}
    for encoding in shaped["encoding"].unique() if len(shaped) else ():
        table = shaped[shaped["encoding"] == encoding]
        curves[str(encoding)] = []
        for cut in table["cut"].unique():
            rows = table[table["cut"] == cut].sort_values("bandwidth_mbps")

            def column(name: str) -> tuple[float, ...]:
                return tuple(float(value) for value in rows[name])

            curves[str(encoding)].append(ExecutedCurve(
                str(cut), column("bandwidth_mbps"), column("estimated_terms_ms"),
                column("measured_ms_median"), column("measured_ms_low"),
                column("measured_ms_high")))
    return curves


def drawn_latency_cuts(cuts: pd.DataFrame) -> list[str]:
    """The cuts of a :func:`~profiling.split.cut_table` whose latency a chart draws, in
    forward order: the input, the stage cuts, the output and the Pareto front's, at most
    :data:`MAX_DRAWN_CUTS`."""
    drawn = cuts[cuts["kind"].isin(["input", "stage", "output"]) | cuts["pareto"].astype(bool)]
    return [str(cut) for cut in drawn["cut"].head(MAX_DRAWN_CUTS)]


def _time_text(ms: float) -> str:
    if ms >= 1000:
        return f"{ms / 1000:g} s"
    return f"{ms:g} ms"


def latency_ticks(low_ms: float, high_ms: float) -> tuple[list[float], list[str]]:
    """Tick values (ms) and labels for a log latency axis spanning ``low_ms`` to ``high_ms``
    (:func:`~profiling.reports.numbers.log_ticks`), labelled ``20 ms``, ``500 ms``, ``1 s``,
    ``50 s``."""
    return log_ticks(low_ms, high_ms, _time_text)


def label_heights(ends: Sequence[float], axis_decades: float, plot_height_px: float,
                  line_px: float = 13.0) -> list[float]:
    """The heights (data values on a log axis) for labels at line ends ``ends``, in the same
    order: each at its line's end, except where labels would come nearer than ``line_px`` (on
    a plot ``plot_height_px`` high spanning ``axis_decades``): such a group is spread
    ``line_px`` apart, centred on the mean of its lines' ends (on the log scale)."""
    if not len(ends):
        return []
    gap = axis_decades * line_px / max(plot_height_px, 1.0)  # decades per label line
    logs = np.log10(np.maximum(np.asarray(ends, float), 1e-12))
    order = np.argsort(logs, kind="stable")
    groups: list[list[float]] = []  # each group's ends, lowest first
    for value in logs[order]:
        groups.append([value])
        while len(groups) > 1 and (_group_start(groups[-2], gap) + len(groups[-2]) * gap
                                   > _group_start(groups[-1], gap)):
            groups[-2:] = [groups[-2] + groups[-1]]
    placed = [_group_start(group, gap) + i * gap for group in groups for i in range(len(group))]
    heights = np.empty(len(placed))
    heights[order] = 10 ** np.asarray(placed)
    return [float(h) for h in heights]


def _group_start(group: Sequence[float], gap: float) -> float:
    """Where the lowest label of a group of labels ``gap`` apart centred on its ends goes."""
    return float(np.mean(group)) - (len(group) - 1) * gap / 2
