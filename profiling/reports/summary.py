"""The short per-stage summary printed in the terminal after a run.

Every column's rule is printed under its name: a stage entered several times shows one row,
its time, FLOPs and payload summed over the calls (time: the median over the repeats of the
per-repeat sum), its memory peak the largest of the calls'. MB is 1e6 bytes throughout. The
time's 95% interval is the order-statistics interval of the median
(:func:`profiling.statistics.median_interval`); a ``!`` marks an interval wider than ±10% of
the median. A total row ends the table: the whole forward's median time with its interval and
the model's parameters, MACs, FLOPs and input and output payload.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..statistics.aggregate import first_column, shown_calls, stage_time_sums, time_column
from ..statistics.coverage import OTHER, coverage_line
from ..stages.payload import payload_bytes, walk_payload
from ..statistics.intervals import CONFIDENCE, median_interval, median_interval_coverage
from .labels import right_aligned, shorten
from .numbers import significant

__all__ = ["format_summary", "RunTotals", "run_totals", "WIDE_INTERVAL", "OWN_METRICS",
           "extra_metrics"]

#: A stage whose interval reaches further than this from its median (relative) is flagged.
WIDE_INTERVAL = 0.10
#: How many of the slowest top-level stages the summary marks.
SLOWEST = 3
#: The built-in metrics the terminal tables (this summary and the comparison) show with code
#: of their own: time with its interval, GFLOPs, the memory peak.
OWN_METRICS = ("cpu_time_ms", "cuda_time_ms", "flops", "tensor_peak_mb", "cuda_peak_mb")
#: The width of a declared metric's column.
EXTRA_WIDTH = 14


def extra_metrics(metrics: Sequence[Any], columns: Any) -> list[Any]:
    """The declared headline metrics measured once that a terminal table shows in columns of
    their own: any but :data:`OWN_METRICS`, where ``columns`` holds them."""
    return [metric for metric in metrics if metric.headline and metric.repeats == "once"
            and str(metric) not in OWN_METRICS and metric.column in columns]


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


def _displayed(stages: pd.DataFrame, max_depth: int, time: Optional[str],
               memory: Optional[str], times: Optional[pd.DataFrame],
               extras: Sequence[Any] = ()) -> pd.DataFrame:
    """One row per stage (and ``other`` row) down to ``max_depth``, calls summed."""
    rows = shown_calls(stages, max_depth, ("stage", OTHER))
    grouped = rows.groupby("stage", sort=False)
    table = pd.DataFrame({"calls": grouped.size(), "depth": grouped["depth"].first(),
                          "kind": grouped["kind"].first(),
                          "parent": grouped["parent"].first() if "parent" in rows else "",
                          "out_mb": grouped["out_bytes"].sum() / 1e6})
    if time:
        table = table.join(stage_time_sums(rows, time, times))
    if "flops" in rows and rows["flops"].notna().any():
        table["gflops"] = grouped["flops"].sum(min_count=1) / 1e9
    if memory:
        table["peak_mb"] = grouped[memory].max()
    for metric in extras:  # calls add up as the metric declares
        table[str(metric)] = grouped[metric.column].agg(metric.calls) * metric.scale
    return table


def _remainders(table: pd.DataFrame, total_ms: Optional[float]) -> set:
    """Each ``other`` row's time shown as its parent's (the whole forward's at the top) minus
    the rows beside it, so that the rows of a level add up to their total in the table:
    medians do not add up, the ``_mean`` columns of ``stages.csv`` do.

    Where noise makes that remainder negative (the rows beside it have medians that add up to
    more than their parent's), the row keeps its own median over the repeats (of each
    forward's parent minus children, never below zero but for clock noise) and its interval;
    those rows are returned, for the table to mark them."""
    own: set = set()
    if "time_ms" not in table:
        return own
    for name, row in table[table["kind"] == OTHER].iterrows():
        siblings = table[(table["depth"] == row["depth"]) & (table["kind"] == "stage")
                         & (table["parent"] == row["parent"])]
        whole = total_ms if row["depth"] == 0 else table["time_ms"].get(row["parent"])
        if whole is None or pd.isna(whole):
            continue
        remainder = whole - siblings["time_ms"].sum()
        if remainder < 0 and not pd.isna(row["time_ms"]):
            own.add(name)
        else:
            table.loc[name, ["time_ms", "ci_low", "ci_high"]] = [remainder, np.nan, np.nan]
    return own


def _count_remainders(table: pd.DataFrame, total_gflops: Optional[float]) -> None:
    """Each ``other`` row's GFLOPs as its parent's (the whole forward's at the top) minus the
    rows beside it, as :func:`_remainders` does for time: where a stage's deeper calls are
    inside a shallower one (:func:`~profiling.statistics.aggregate.shown_calls`), the rows
    shown still add up (counts are exact, so the remainder always stands)."""
    if "gflops" not in table:
        return
    for name, row in table[table["kind"] == OTHER].iterrows():
        siblings = table[(table["depth"] == row["depth"]) & (table["kind"] == "stage")
                         & (table["parent"] == row["parent"])]
        whole = total_gflops if row["depth"] == 0 else table["gflops"].get(row["parent"])
        if whole is not None and not pd.isna(whole):
            table.loc[name, "gflops"] = whole - siblings["gflops"].sum()


def _slowest(table: pd.DataFrame, count: int = SLOWEST) -> set:
    top = table[(table["kind"] == "stage") & (table["depth"] == 0)]
    return set(top["time_ms"].nlargest(count).index) if "time_ms" in top and len(top) > count \
        else set()


def format_summary(stages: pd.DataFrame, *, max_depth: int = 1, max_rows: int = 40,
                   times: Optional[pd.DataFrame] = None, totals: Optional[RunTotals] = None,
                   coverage: Optional[dict] = None, coverage_hint: Optional[str] = None,
                   metrics: Sequence[Any] = ()) -> str:
    """A table of the stages down to ``max_depth``: calls, time and its 95% interval, the
    share of the whole forward, GFLOPs, output payload and memory peak (each only when
    measured), the ``other`` rows, a total row, and a footer.

    The rows of one level and their ``other`` row add up to the level's total; the
    :data:`SLOWEST` slowest top-level stages are marked ``*``.

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
    """
    time = time_column(stages)
    memory = first_column(stages, "cuda_peak_mb", "tensor_peak_mb")
    extras = extra_metrics(metrics, stages.columns)
    table = _displayed(stages, max_depth, time, memory, times, extras)
    flops = "gflops" in table
    total_ms = float(np.median(totals.forward_ms)) if totals is not None and len(
        totals.forward_ms) else None
    own_medians = _remainders(table, total_ms)
    _count_remainders(table, totals.flops / 1e9 if totals is not None and totals.flops
                      is not None else None)
    share_of = total_ms if time and total_ms else (
        totals.flops / 1e9 if flops and totals is not None and totals.flops else None)
    share_column = "time_ms" if time and total_ms else "gflops"
    slowest = _slowest(table) if time else set()
    ci = _ci_label(totals, times)
    columns = [("calls", "", 6)] + ([("time ms", "sum, med.", 11),
                                     (f"{ci} ms", "of the median", 17)]
                                    if time else []) \
        + ([("share", f"of {'time' if share_column == 'time_ms' else 'FLOPs'}", 10)]
           if share_of else []) \
        + ([("GFLOPs", "sum", 10)] if flops else []) + [("out MB", "sum", 10)] \
        + ([(_MEMORY_LABELS[memory], "max", 15)] if memory else []) \
        + [(metric.label, metric.calls, EXTRA_WIDTH) for metric in extras]
    lines = [f"{'stage':<41}" + "".join(f"{name:>{width}}" for name, _, width in columns),
             f"{'rule (over calls; over repeats)':<41}"
             + "".join(f"{rule:>{width}}" for _, rule, width in columns)]
    for name, row in table.head(max_rows).iterrows():
        other = row["kind"] == OTHER
        label = _label(str(name), int(row["depth"]))
        cells = [f"{'' if other else int(row['calls']):>6}"]
        if time:
            shown = significant(row["time_ms"]) + ("~" if name in own_medians else "")
            cells += [right_aligned(shown, 11), right_aligned(
                _interval(row.get('ci_low'), row.get('ci_high'), row['time_ms']), 17)]
        if share_of:
            mark = "*" if name in slowest else " "
            cells.append(f"{100 * row[share_column] / share_of:>8.1f}%{mark}")
        if flops:
            cells.append(right_aligned(significant(row['gflops']), 10))
        cells.append(f"{'':>10}" if other else right_aligned(significant(row['out_mb']), 10))
        if memory:
            cells.append(f"{'':>15}" if other else right_aligned(significant(row['peak_mb']), 15))
        cells += [right_aligned('' if other else significant(row[str(metric)]), EXTRA_WIDTH)
                  for metric in extras]
        lines.append(f"{label:<41}" + "".join(cells))
    if len(table) > max_rows:
        lines.append(f"... {len(table) - max_rows} more stages in stages.csv")
    if totals is not None:
        lines += [line + " " * EXTRA_WIDTH * len(extras) if index == 0 else line
                  for index, line in enumerate(
                      _total_lines(totals, bool(time), bool(share_of), flops, bool(memory)))]
    lines += _footer(time, flops, memory, table[table["kind"] == "stage"],
                     bool(slowest), bool(OTHER in set(table["kind"])), ci, bool(own_medians))
    lines += [f"({metric.label}: {metric.description or metric}, {metric.unit or 'no unit'}"
              f"{'' if metric.scale == 1 else f' x {metric.scale:g}'})" for metric in extras]
    line = coverage_line(coverage or {}, *([coverage_hint] if coverage_hint else []))
    if line:
        lines += line.splitlines()
    return "\n".join(lines)


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


def _footer(time: Optional[str], flops: bool, memory: Optional[str], table: pd.DataFrame,
            slowest: bool = False, other: bool = False, ci: str = "95% CI",
            own_medians: bool = False) -> list[str]:
    note = (f"time: {time.split('_time')[0].upper()} time summed over a stage's calls, median "
            f"over the repeats" if time else "no timing")
    wide = 0
    if time and "ci_low" in table:
        reach = np.maximum(table["time_ms"] - table["ci_low"], table["ci_high"] - table["time_ms"])
        wide = int((reach > WIDE_INTERVAL * table["time_ms"]).sum())
    flagged = (f"! {wide} stage(s) with an interval wider than ±{WIDE_INTERVAL:.0%} of the "
               f"median; " if wide else "")
    lines = [f"({note}" + (f"; {ci}: order-statistics interval of the median, its true "
                           f"coverage for the repeats made" if time else "") + ")"]
    if flagged:
        lines.append(flagged.rstrip("; "))
    if slowest:
        lines.append(f"* the {SLOWEST} slowest top-level stages")
    if other:
        lines.append("(other: what no stage below the same parent covers, its time the parent's "
                     "minus the rows beside it; stages.csv's _mean columns add up exactly)")
    if own_medians:
        lines.append("~ an 'other' row whose siblings' medians add up to more than their "
                     "parent's (noise): its own median over the repeats is shown instead")
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


def _ci_label(totals: Optional[RunTotals], times: Optional[pd.DataFrame]) -> str:
    """``95% CI``, or the coverage the order-statistics interval really has for the repeats
    made (``93.7% CI`` for 5 repeats)."""
    repeats = len(totals.forward_ms) if totals is not None and len(totals.forward_ms) else (
        int(times["repeat"].max()) + 1 if times is not None and len(times) else 0)
    if not repeats:
        return "95% CI"
    coverage = median_interval_coverage(repeats)
    if coverage >= CONFIDENCE:
        return f"{CONFIDENCE:.0%} CI"
    return f"{math.floor(coverage * 1000) / 10:g}% CI"
