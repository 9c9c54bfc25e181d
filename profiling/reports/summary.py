"""The short per-stage summary printed in the terminal after a run.

Every column's rule is printed under its name: a stage entered several times shows one row,
its time, FLOPs and payload summed over the calls (time: the median over the repeats of the
per-repeat sum), its memory peak the largest of the calls'. MB is 1e6 bytes throughout. The
time's interval is the order-statistics interval of the median
(:func:`profiling.statistics.median_interval`), labelled with its true coverage for the
repeats made; a ``!`` marks an interval wider than ±10% of the median. The rows, their order,
the ``other`` rows under their parents, the label and the coverage line are the run's view
(:func:`~profiling.reports.view.run_view`), which every other face renders too. A total row ends the table: the whole forward's median time with its interval and
the model's parameters, MACs, FLOPs and input and output payload.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..stages.payload import payload_bytes, walk_payload
from ..statistics.coverage import OTHER
from ..statistics.intervals import median_interval
from .labels import right_aligned, shorten
from .view import OTHER_RULE, OWN_METRICS, extra_metrics
from .numbers import significant

__all__ = ["format_summary", "RunTotals", "run_totals", "WIDE_INTERVAL", "OWN_METRICS",
           "extra_metrics"]

#: A stage whose interval reaches further than this from its median (relative) is flagged.
WIDE_INTERVAL = 0.10
#: The width of a declared metric's column.
EXTRA_WIDTH = 14
#: How many of the slowest top-level stages the summary marks.
SLOWEST = 3
@dataclass
class RunTotals:
    """The whole forward, for the summary's total row.

    Attributes:
        forward_ms: the timed forwards' host times (empty when none was timed).
        parameters: the model's parameter count.
        macs, flops: the counted totals (``None`` when operations were not counted).
        in_bytes, out_bytes: the payload of the model's inputs and outputs.
    """

    forward_ms: Sequence[float]
    parameters: int
    macs: Optional[int]
    flops: Optional[int]
    in_bytes: int
    out_bytes: int


def run_totals(result: Any, model: Any, inputs: Any) -> RunTotals:
    """The totals of a :class:`~profiling.runner.ProfileResult` of ``model(*inputs)``."""
    counter = result.collectors.get("op_counts")
    total = counter.total if counter is not None else None
    return RunTotals(forward_ms=list(result.forward_ms),
                     parameters=sum(p.numel() for p in model.parameters()),
                     macs=total.macs if total is not None else None,
                     flops=total.flops if total is not None else None,
                     in_bytes=payload_bytes(walk_payload(inputs)),
                     out_bytes=payload_bytes(walk_payload(result.output)))




def _interval(low: float, high: float, median: float) -> str:
    if pd.isna(low) or pd.isna(high):
        return "-"
    wide = median > 0 and max(median - low, high - median) > WIDE_INTERVAL * median
    return f"{significant(low)}-{significant(high)}" + ("!" if wide else " ")


def _slowest(table: pd.DataFrame, count: int = SLOWEST) -> set:
    top = table[(table["kind"] == "stage") & (table["depth"] == 0)]
    return set(top["time_ms"].nlargest(count).index) if "time_ms" in top and len(top) > count \
        else set()


def format_summary(stages: pd.DataFrame, *, max_depth: int = 1, max_rows: int = 40,
                   times: Optional[pd.DataFrame] = None, totals: Optional[RunTotals] = None,
                   coverage: Optional[dict] = None, coverage_hint: Optional[str] = None,
                   metrics: Sequence[Any] = (), meta: Optional[Mapping[str, Any]] = None
                   ) -> str:
    """A table of the stages down to ``max_depth``: calls, time and its interval, the share
    of the whole forward, GFLOPs, output payload and memory peak (each only when measured),
    the ``other`` rows under their parents, a total row, and a footer: the terminal's face
    of the run's :func:`~profiling.reports.view.run_view`.

    The :data:`SLOWEST` slowest top-level stages are marked ``*``.

    Args:
        stages: the stage table (``stages.csv``).
        times: the raw repeats (:func:`profiling.statistics.repeat_table`, ``times.csv``), for
            exact intervals of stages called several times.
        totals: the whole forward's figures for the total row (:func:`run_totals`).
        coverage: the share of the forward in named stages
            (:attr:`~profiling.runner.ProfileResult.coverage`), for the coverage line.
        coverage_hint: how to name more stages, said when the coverage is low (by default,
            the library's ``attach=``).
        metrics: the run's declared metrics (:attr:`~profiling.runner.ProfileResult.metrics`):
            each headline metric beyond :data:`OWN_METRICS` gets a column, its label as
            heading, its calls added up as it declares.
        meta: the run's ``meta.json`` (its noise verdict and precision are printed).
    """
    from .record import RunRecord
    from .view import run_view

    recorded = dict(meta or {})
    if totals is not None:
        recorded.update(forward_ms=list(totals.forward_ms), totals={"flops": totals.flops})
    if coverage is not None:
        recorded["coverage"] = coverage
    view = run_view(RunRecord(None, "ok", meta=recorded, stages=stages, times=times),
                    max_depth=max_depth, metrics=metrics, coverage_hint=coverage_hint)
    lines = _table_lines(view, max_rows, totals, metrics)
    if meta is not None:
        lines.append(f"precision: {view.precision}")
    if view.coverage_line:
        lines += view.coverage_line.splitlines()
    return "\n".join(lines)


def _table_lines(view: Any, max_rows: int, totals: Optional[RunTotals],
                 metrics: Sequence[Any]) -> list[str]:
    table, time, memory = view.summary, view.time, view.memory
    extras = extra_metrics(metrics, view.rows.columns)
    flops = "gflops" in table
    share = "share" in table
    slowest = _slowest(table) if time else set()
    columns = [("calls", "", 6)] + ([("time ms", "sum, med.", 11),
                                     (f"{view.interval_label} ms", "of the median", 17)]
                                    if time else []) \
        + ([("share", f"of {view.share_of}", 10)] if share else []) \
        + ([("GFLOPs", "sum", 10)] if flops else []) + [("out MB", "sum", 10)] \
        + ([(_MEMORY_LABELS[memory], "max", 15)] if memory else []) \
        + [(metric.label, metric.calls, EXTRA_WIDTH) for metric in extras]
    lines = [f"{'stage':<41}" + "".join(f"{name:>{width}}" for name, _, width in columns),
             f"{'rule (over calls; over repeats)':<41}"
             + "".join(f"{rule:>{width}}" for _, rule, width in columns)]
    for name, row in table.head(max_rows).iterrows():
        other = row["kind"] == OTHER
        cells = [f"{'' if other else int(row['calls']):>6}"]
        if time:
            cells += [right_aligned(significant(row["time_ms"]), 11), right_aligned(
                _interval(row.get('ci_low'), row.get('ci_high'), row['time_ms']), 17)]
        if share:
            mark = "*" if name in slowest else " "
            cells.append(f"{row['share']:>8.1f}%{mark}")
        if flops:
            cells.append(right_aligned(significant(row['gflops']), 10))
        cells.append(f"{'':>10}" if other else right_aligned(significant(row['out_mb']), 10))
        if memory:
            cells.append(f"{'':>15}" if other else right_aligned(significant(row['peak_mb']), 15))
        cells += [right_aligned('' if other else significant(row[str(metric)]), EXTRA_WIDTH)
                  for metric in extras]
        lines.append(f"{_label(str(name), int(row['depth'])):<41}" + "".join(cells))
    if len(table) > max_rows:
        lines.append(f"... {len(table) - max_rows} more stages in stages.csv")
    if totals is not None:
        lines += [line + " " * EXTRA_WIDTH * len(extras) if index == 0 else line
                  for index, line in enumerate(
                      _total_lines(totals, bool(time), share, flops, bool(memory)))]
    lines += _footer(view, table[table["kind"] == "stage"], bool(slowest))
    lines += [f"({metric.label}: {metric.description or metric}, {metric.unit or 'no unit'}"
              f"{'' if metric.scale == 1 else f' x {metric.scale:g}'})" for metric in extras]
    return lines


def _label(name: str, depth: int) -> str:
    """The indented stage name, shortened in its middle (never at its end, which tells
    repeated blocks apart) to fit 40 characters."""
    return "  " * depth + shorten(name, 40 - 2 * depth)


def _total_lines(totals: RunTotals, time: bool, share: bool, flops: bool, memory: bool
                 ) -> list[str]:
    cells = [f"{'':>6}"]
    if time:
        if len(totals.forward_ms):
            median = float(np.median(totals.forward_ms))
            low, high = median_interval(totals.forward_ms)
            cells += [right_aligned(significant(median), 11),
                      right_aligned(_interval(low, high, median), 17)]
        else:
            cells += [f"{'-':>11}", f"{'-':>17}"]
    if share:
        cells.append(f"{100.0:>8.1f}% ")
    if flops:
        cells.append(right_aligned(
            significant(None if totals.flops is None else totals.flops / 1e9), 10))
    cells.append(right_aligned(significant(totals.out_bytes / 1e6), 10))
    if memory:
        cells.append(f"{'':>15}")
    counts = ""
    if totals.macs is not None:
        counts = (f", {significant(totals.macs / 1e9)} GMACs, "
                  f"{significant(totals.flops / 1e9)} GFLOPs")
    return [f"{'total (whole forward; out: model output)':<41}" + "".join(cells),
            f"total: {totals.parameters:,} parameters{counts}, input "
            f"{significant(totals.in_bytes / 1e6)} MB, output "
            f"{significant(totals.out_bytes / 1e6)} MB"]


def _footer(view: Any, table: pd.DataFrame, slowest: bool = False) -> list[str]:
    time, memory = view.time, view.memory
    flops = "gflops" in view.summary
    note = (f"time: {time.split('_time')[0].upper()} time summed over a stage's calls, median "
            f"over the repeats" if time else "no timing")
    wide = 0
    if time and "ci_low" in table:
        reach = np.maximum(table["time_ms"] - table["ci_low"], table["ci_high"] - table["time_ms"])
        wide = int((reach > WIDE_INTERVAL * table["time_ms"]).sum())
    lines = [f"({note}" + (f"; {view.interval_label}: order-statistics interval of the median, "
                           f"its true coverage for the {view.repeats} repeats made"
                           if time else "") + ")"]
    if wide:
        lines.append(f"! {wide} stage(s) with an interval wider than ±{WIDE_INTERVAL:.0%} of "
                     f"the median")
    if slowest:
        lines.append(f"* the {SLOWEST} slowest top-level stages")
    if OTHER in set(view.summary["kind"]):
        rule = OTHER_RULE if time else "other: what no stage below the same parent covers"
        lines.append(f"({rule})")
    lines.append("(" + ("GFLOPs: 1e9 floating-point operations; " if flops else "")
                 + "MB: 1e6 bytes; out: output payload)")
    if memory:
        lines.append(_MEMORY_NOTES[memory])
    return [part for line in lines for part in textwrap.wrap(line, 119)]


#: The memory column's name, for what it counts.
_MEMORY_LABELS = {"tensor_peak_mb": "tensor peak MB", "cuda_peak_mb": "alloc peak MB"}
#: What the memory column counts and misses, printed under the table.
_MEMORY_NOTES = {
    "tensor_peak_mb": "(tensor peak: the largest sum of live tensors that operators returned, "
                       "above a call's start; not the allocator's total: library workspaces "
                       "and oneDNN weight reorders are not seen, so the process can hold "
                       "several times more)",
    "cuda_peak_mb": "(alloc peak: torch's CUDA allocator peak above a call's start, "
                        "workspaces included; not the driver's reserved memory)"}
