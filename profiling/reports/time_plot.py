"""``time.png``: where the forward's time goes, the face of a run's view
(:func:`~profiling.reports.view.run_view`) that a slide or a chat shows.

Horizontal bars on a linear axis, the slowest stage first and ``other`` last, each labelled
with its median in ms and its share of the forward's median, with the interval of the view's
label as whiskers. When one top-level stage holds more than :data:`DEEPER_SHARE` of the
forward, its own stages (and its ``other`` row) are drawn in its place: a bar of 95% and a few
slivers tell nothing.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..statistics.coverage import OTHER
from .numbers import significant
from .plot_style import plot_label, png
from .record import Run
from .view import RunView, run_view

__all__ = ["plot_stage_times", "stage_time_rows", "DEEPER_SHARE"]

#: A top-level stage with more than this share of the forward (%) is drawn as its stages.
DEEPER_SHARE = 80.0


def stage_time_rows(view: RunView) -> tuple[pd.DataFrame, list[str]]:
    """The rows ``time.png`` draws, from ``view.summary``: the top-level rows, a stage over
    :data:`DEEPER_SHARE` replaced by the rows under it, sorted slowest first with ``other``
    rows last; and the names of the stages so replaced."""
    table = view.summary
    if "time_ms" not in table:
        return table.iloc[:0], []
    rows = table[table["depth"] == 0]
    opened = [str(name) for name, row in rows.iterrows()
              if row["kind"] == "stage" and row.get("share", 0) > DEEPER_SHARE
              and ((table["parent"] == name) & (table["depth"] == 1)).any()]
    for name in opened:
        inside = table[(table["parent"] == name) & (table["depth"] == 1)]
        rows = pd.concat([rows.drop(index=name), inside])
    rows = rows.assign(last=rows["kind"] == OTHER)
    rows = rows.sort_values(["last", "time_ms"], ascending=[True, False], kind="stable")
    return rows.drop(columns="last"), opened


def _title(view: RunView, opened: list[str]) -> str:
    clock = (view.time or "").split("_time")[0].upper()
    forward = (f"; forward {significant(view.forward_ms)} ms (median)"
               if view.forward_ms else "")
    lines = [f"Time per stage: {clock} time, median over {view.repeats} repeats{forward}",
             f"labels: ms and % of the forward (medians: they add up only roughly); whiskers: "
             f"{view.interval_label}; grey: other, outside the stages"]
    if opened:
        lines.append(f"{', '.join(opened)} holds over {DEEPER_SHARE:.0f}% of the forward: "
                     f"its stages are drawn instead")
    return "\n".join(lines)


def time_figure(view: RunView) -> Optional[Figure]:
    """The figure of ``time.png`` for ``view``; ``None`` when the run measured no time."""
    rows, opened = stage_time_rows(view)
    if rows.empty:
        return None
    figure = Figure(figsize=(9, 1.6 + 0.36 * len(rows)))
    axes = figure.subplots()
    times = rows["time_ms"].to_numpy(float)
    other = (rows["kind"] == OTHER).to_numpy()
    low = (times - rows["ci_low"].to_numpy(float)) if "ci_low" in rows else np.zeros(len(rows))
    high = (rows["ci_high"].to_numpy(float) - times) if "ci_high" in rows else low * 0
    errors = np.nan_to_num(np.clip([low, high], 0, None))
    positions = np.arange(len(rows))
    axes.barh(positions, times, xerr=errors, capsize=2, height=0.7,
              color=np.where(other, "0.65", "C0"), error_kw={"ecolor": "0.3", "lw": 1})
    for position, (time, reach, (name, row)) in enumerate(zip(times, errors[1],
                                                               rows.iterrows())):
        share = view.share(row["time_ms"])
        text = f" {significant(row['time_ms'])} ms" + (f"  {share:.1f}%" if share is not None
                                                       else "")
        axes.text(time + reach, position, text, va="center", ha="left", fontsize=8)
    axes.set_yticks(positions, [plot_label(name) for name in rows.index])
    axes.invert_yaxis()
    axes.set_xlim(0, max(float(np.nanmax(times + errors[1])), 1e-9) * 1.3)
    axes.set_xlabel("time per forward (ms)")
    axes.set_title(_title(view, opened), fontsize=9, loc="left")
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    return figure


def plot_stage_times(run: Run) -> Optional[bytes]:
    """``time.png`` of ``run`` (a record, a result or a run folder) as PNG bytes; ``None``
    when the run measured no time."""
    figure = time_figure(run_view(run))
    return png(figure) if figure is not None else None
