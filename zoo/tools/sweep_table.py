"""The table a sweep prints at its end: one row per job, its swept options, and its forward
time and FLOPs, or the one-line reason it failed (the whole table is ``summary.csv``)."""

from __future__ import annotations

import pandas as pd

from profiling.reports import printable, significant

__all__ = ["format_sweep_table"]

#: The collected table's columns that follow the options (:func:`profiling.reports.collect_runs`).
_AFTER_OPTIONS = "device_name"


def _swept(runs: pd.DataFrame) -> list[str]:
    """The option columns whose values differ between the jobs."""
    columns = list(runs.columns)
    end = columns.index(_AFTER_OPTIONS) if _AFTER_OPTIONS in columns else 3
    return [c for c in columns[3:end]
            if runs[c].astype(str).nunique() > 1]


def _gflops(table: pd.DataFrame) -> pd.Series:
    """Each job's whole-forward GFLOPs: its top-level stage and ``other`` rows summed."""
    if "flops" not in table or "depth" not in table:
        return pd.Series(dtype=float)
    top = table[(table["depth"] == 0) & table["kind"].isin(["stage", "other"])]
    return top.groupby("run", sort=False)["flops"].sum(min_count=1) / 1e9


def _text(value) -> str:
    """A cell: missing as ``-``, anything else :func:`~profiling.reports.printable`."""
    return "-" if not isinstance(value, str) and pd.isna(value) else printable(value)


#: The mark of a finished job whose timings are unreliable, and the line that explains it.
UNRELIABLE_MARK = "!"
UNRELIABLE_LEGEND = (f"{UNRELIABLE_MARK} unreliable timings (a loaded machine, or forward times "
                     f"that vary by more than 5%): the noise column says which")


def _timed(runs: pd.DataFrame) -> bool:
    """Whether any job has a noise verdict worth a column (a timed one)."""
    return "noise" in runs and runs["noise"].dropna().map(
        lambda text: not str(text).startswith("not ")).any()


def format_sweep_table(table: pd.DataFrame) -> list[str]:
    """The terminal lines of a sweep's collected ``table`` (``summary.csv``): a header, then
    per job its folder, the options that differ between the jobs, ``ok`` with the forward's
    median time (ms, when timed), its noise (when timed; ``ok !`` where it is unreliable,
    explained under the table) and GFLOPs (when counted), or ``failed:`` and its error."""
    if table.empty:
        return ["sweep: no job wrote a run folder"]
    runs = table.drop_duplicates("run").set_index("run", drop=False)
    options = _swept(runs)
    gflops = _gflops(table)
    noise = _timed(runs)
    cells = [["job", *map(_text, options), "status", "forward ms",
              *(["noise"] if noise else []), "GFLOPs"]]
    failed = [False]
    for run, row in runs.iterrows():
        head = [_text(run), *(_text(row[c]) for c in options)]
        failed.append(row["status"] == "failed")
        if failed[-1]:
            cells.append(head + [f"failed: {_text(' '.join(str(row['error']).split()))}"])
        else:
            median, flops = row.get("forward_ms_median"), gflops.get(run, float("nan"))
            verdict = _text(row.get("noise")) if noise else ""
            marked = verdict.startswith("UNRELIABLE")
            cells.append(head + [f"{row['status']} {UNRELIABLE_MARK}" if marked
                                 else str(row["status"]),
                                 significant(median) if pd.notna(median) else "-",
                                 *([verdict] if noise else []),
                                 significant(flops) if pd.notna(flops) else "-"])
    status = len(options) + 1
    widths = [max(len(line[i]) for line, fail in zip(cells, failed)
                  if i < len(line) and not (fail and i == status))
              for i in range(len(cells[0]))]
    lines = []
    for line, fail in zip(cells, failed):
        parts = [cell if fail and i == status else
                 f"{cell:<{widths[i]}}" if i <= status or cells[0][i] == "noise"
                 else f"{cell:>{widths[i]}}"
                 for i, cell in enumerate(line)]
        lines.append("  ".join(parts).rstrip())
    if any(line[len(options) + 1].endswith(f" {UNRELIABLE_MARK}") for line, fail
           in zip(cells[1:], failed[1:]) if not fail):
        lines.append(UNRELIABLE_LEGEND)
    return lines
