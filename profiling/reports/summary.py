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

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ..statistics.aggregate import first_column, time_column
from ..stages.payload import payload_bytes, walk_payload
from ..statistics.intervals import median_interval

__all__ = ["format_summary", "RunTotals", "run_totals", "WIDE_INTERVAL"]

#: A stage whose interval reaches further than this from its median (relative) is flagged.
WIDE_INTERVAL = 0.10


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


def _stage_times(rows: pd.DataFrame, time: str, times: Optional[pd.DataFrame]) -> pd.DataFrame:
    """Per stage: ``time_ms`` (median over repeats of the sum over calls) and its interval."""
    metric = time[:-len("_median")]
    grouped = rows.groupby("stage", sort=False)
    if times is None or metric not in times:
        # without the raw repeats: the medians summed, the interval only for single calls
        single = grouped.size() == 1
        return pd.DataFrame({"time_ms": grouped[time].sum(),
                             "ci_low": grouped[f"{time}_ci95_low"].sum().where(single),
                             "ci_high": grouped[f"{time}_ci95_high"].sum().where(single)}
                            if f"{time}_ci95_low" in rows else {"time_ms": grouped[time].sum()})
    per_repeat = times[times["stage"].isin(rows["stage"].unique())].groupby(
        ["stage", "repeat"], sort=False)[metric].sum()
    table = {}
    for name, values in per_repeat.groupby(level="stage", sort=False):
        low, high = median_interval(values.to_numpy())
        table[name] = {"time_ms": float(np.median(values)), "ci_low": low, "ci_high": high}
    return pd.DataFrame.from_dict(table, orient="index").reindex(list(grouped.groups))


def _ms(value: float) -> str:
    """A time with 3 decimals below 10 ms, fewer above (``1071.1``, ``12345``)."""
    digits = 3 if value < 10 else 2 if value < 100 else 1 if value < 1000 else 0
    return f"{value:.{digits}f}"


def _interval(low: float, high: float, median: float) -> str:
    if pd.isna(low) or pd.isna(high):
        return "-"
    wide = median > 0 and max(median - low, high - median) > WIDE_INTERVAL * median
    return f"{_ms(low)}-{_ms(high)}" + ("!" if wide else " ")


def format_summary(stages: pd.DataFrame, *, max_depth: int = 1, max_rows: int = 40,
                   times: Optional[pd.DataFrame] = None, totals: Optional[RunTotals] = None
                   ) -> str:
    """A table of the stages down to ``max_depth``: calls, time and its 95% interval, GFLOPs,
    output payload and memory peak (each only when measured), a total row, and a footer.

    Args:
        stages: the stage table (``stages.csv``).
        times: the raw repeats (:func:`profiling.statistics.repeat_table`, ``times.csv``), for
            exact intervals of stages called several times.
        totals: the whole forward's figures for the total row (:func:`run_totals`).
    """
    time = time_column(stages)
    memory = first_column(stages, "cuda_mem_peak_mb", "cpu_mem_peak_mb")
    rows = stages[(stages["kind"] == "stage") & (stages["depth"] <= max_depth)]
    grouped = rows.groupby("stage", sort=False)
    table = pd.DataFrame({"calls": grouped.size(), "depth": grouped["depth"].first(),
                          "out_mb": grouped["out_bytes"].sum() / 1e6})
    if time:
        table = table.join(_stage_times(rows, time, times))
    flops = "flops" in rows and rows["flops"].notna().any()
    if flops:
        table["gflops"] = grouped["flops"].sum() / 1e9
    if memory:
        table["peak_mb"] = grouped[memory].max()
    columns = [("calls", "", 6)] + ([("time ms", "sum, med.", 11),
                                     ("95% CI ms", "of the median", 18)]
                                    if time else []) \
        + ([("GFLOPs", "sum", 10)] if flops else []) + [("out MB", "sum", 10)] \
        + ([("peak MB", "max", 10)] if memory else [])
    lines = [f"{'stage':<44}" + "".join(f"{name:>{width}}" for name, _, width in columns),
             f"{'rule (over calls; over repeats)':<44}"
             + "".join(f"{rule:>{width}}" for _, rule, width in columns)]
    for name, row in table.head(max_rows).iterrows():
        label = ("  " * int(row["depth"]) + str(name))[:43]
        cells = [f"{int(row['calls']):>6}"]
        if time:
            cells += [f"{row['time_ms']:>11.3f}",
                      f"{_interval(row.get('ci_low'), row.get('ci_high'), row['time_ms']):>18}"]
        if flops:
            cells.append(f"{row['gflops']:>10.3f}")
        cells.append(f"{row['out_mb']:>10.3f}")
        if memory:
            cells.append(f"{row['peak_mb']:>10.2f}")
        lines.append(f"{label:<44}" + "".join(cells))
    if len(table) > max_rows:
        lines.append(f"... {len(table) - max_rows} more stages in stages.csv")
    if totals is not None:
        lines += _total_lines(totals, bool(time), flops, bool(memory))
    lines += _footer(time, flops, bool(memory), table)
    return "\n".join(lines)


def _total_lines(totals: RunTotals, time: bool, flops: bool, memory: bool) -> list[str]:
    cells = [f"{'':>6}"]
    if time:
        if len(totals.forward_ms):
            median = float(np.median(totals.forward_ms))
            low, high = median_interval(totals.forward_ms)
            cells += [f"{median:>11.3f}", f"{_interval(low, high, median):>18}"]
        else:
            cells += [f"{'-':>11}", f"{'-':>18}"]
    if flops:
        cells.append(f"{totals.flops / 1e9:>10.3f}" if totals.flops is not None else f"{'-':>10}")
    cells.append(f"{totals.out_bytes / 1e6:>10.3f}")
    if memory:
        cells.append(f"{'':>10}")
    counts = ""
    if totals.macs is not None:
        counts = f", {totals.macs / 1e9:.3f} GMACs, {totals.flops / 1e9:.3f} GFLOPs"
    return [f"{'total (whole forward; out: model output)':<44}" + "".join(cells),
            f"total: {totals.parameters:,} parameters{counts}, input {totals.in_bytes / 1e6:.3f}"
            f" MB, output {totals.out_bytes / 1e6:.3f} MB"]


def _footer(time: Optional[str], flops: bool, memory: bool, table: pd.DataFrame) -> list[str]:
    note = (f"time: {time.split('_time')[0].upper()} time summed over a stage's calls, median "
            f"over the repeats" if time else "no timing")
    wide = 0
    if time and "ci_low" in table:
        reach = np.maximum(table["time_ms"] - table["ci_low"], table["ci_high"] - table["time_ms"])
        wide = int((reach > WIDE_INTERVAL * table["time_ms"]).sum())
    flagged = (f"! {wide} stage(s) with an interval wider than ±{WIDE_INTERVAL:.0%} of the "
               f"median; " if wide else "")
    lines = [f"({note}" + ("; 95% CI: order-statistics interval of the median" if time
                           else "") + ")"]
    if flagged:
        lines.append(flagged.rstrip("; "))
    lines.append("(" + ("GFLOPs: 1e9 floating-point operations; " if flops else "")
                 + "MB: 1e6 bytes; out: output payload"
                 + ("; peak: largest memory peak above a call's start" if memory else "") + ")")
    return lines
