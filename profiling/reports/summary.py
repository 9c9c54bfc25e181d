"""The short per-stage summary printed in the terminal after a run."""

from __future__ import annotations

import pandas as pd

from ..aggregate import first_column, time_column

__all__ = ["format_summary"]


def format_summary(stages: pd.DataFrame, *, max_depth: int = 1, max_rows: int = 40) -> str:
    """A table of the stages down to ``max_depth``: calls, time, GFLOPs, output payload and
    memory, each column only when measured.

    Stages called several times are shown once: time, FLOPs and payload summed over their
    calls, the memory peak the largest of theirs.
    """
    time = time_column(stages)
    memory = first_column(stages, "cuda_mem_peak_mb", "cpu_mem_peak_mb")
    rows = stages[(stages["kind"] == "stage") & (stages["depth"] <= max_depth)]
    grouped = rows.groupby("stage", sort=False)
    table = pd.DataFrame({"calls": grouped.size(),
                          "depth": grouped["depth"].first(),
                          "out_mb": grouped["out_bytes"].sum() / 1e6})
    if time:
        table["time_ms"] = grouped[time].sum()
    flops = "flops" in rows and rows["flops"].notna().any()
    if flops:
        table["gflops"] = grouped["flops"].sum() / 1e9
    if memory:
        table["peak_mb"] = grouped[memory].max()
    lines = [f"{'stage':<44}{'calls':>6}"
             + (f"{'time ms':>12}" if time else "") + (f"{'GFLOPs':>10}" if flops else "")
             + f"{'out MB':>10}" + (f"{'peak MB':>10}" if memory else "")]
    for name, row in table.head(max_rows).iterrows():
        label = ("  " * int(row["depth"]) + str(name))[:43]
        line = f"{label:<44}{int(row['calls']):>6}"
        if time:
            line += f"{row['time_ms']:>12.3f}"
        if flops:
            line += f"{row['gflops']:>10.3f}"
        line += f"{row['out_mb']:>10.3f}"
        if memory:
            line += f"{row['peak_mb']:>10.2f}"
        lines.append(line)
    if len(table) > max_rows:
        lines.append(f"... {len(table) - max_rows} more stages in stages.csv")
    note = f"time: median of {time.split('_time')[0].upper()} time" if time else "no timing"
    lines.append(f"({note}; " + ("GFLOPs: 1e9 floating-point operations; " if flops else "")
                 + "out MB: output payload, 1e6 bytes; peak MB: memory peak above the "
                 "stage's start)")
    return "\n".join(lines)
