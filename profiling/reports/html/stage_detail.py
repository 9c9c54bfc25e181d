"""The detail of each stage call that a run's page shows in a panel when the call is pinned
(a click on its block, bar, point or row): its calls, times per repeat, shapes, FLOPs,
payload and, where the run has them, its operators (the view's ``operators``), as plain
``label, value`` text that the page's script writes with ``textContent``."""

from __future__ import annotations

from typing import Any, Optional

import pandas as pd

from ..view import RunView
from .formatting import is_missing, significant, span, stage_label

__all__ = ["stage_details", "operator_lines", "OPERATORS_SHOWN"]

#: The most operators a stage call's panel lists (the largest; a last line counts the rest).
OPERATORS_SHOWN = 8


def _repeat_times(times: Optional[pd.DataFrame], column: Optional[str]) -> dict[tuple, str]:
    """Each call's times over the repeats in the order they ran (``times.csv``)."""
    if times is None or column is None or column not in times or not len(times):
        return {}
    ordered = times.sort_values("repeat") if "repeat" in times else times
    return {(str(stage), int(call)): ", ".join(significant(t) for t in group[column])
            for (stage, call), group in ordered.groupby(["stage", "call_index"], sort=False)}


def _line(label: str, value: Any, scale: float = 1.0, unit: str = "") -> Optional[list[str]]:
    if is_missing(value):
        return None
    return [label, f"{significant(float(value) * scale)}{unit}"]


def _operator_value(row: dict[str, Any]) -> str:
    share = "" if is_missing(row.get("share")) else f" ({row['share']:.1f}%)"
    if "time_ms" in row:
        return f"{significant(row['time_ms'])} ms{share}"
    moved = float(row.get("bytes_read") or 0) + float(row.get("bytes_written") or 0)
    gflops = significant(float(row["flops"]) / 1e9)
    return f"{gflops} GFLOPs{share}, {significant(moved / 1e6)} MB"


def operator_lines(view: RunView) -> dict[str, list[list[str]]]:
    """``{key: [[operator, its figures], ...]}``: each stage call's largest
    :data:`OPERATORS_SHOWN` operators of the view's breakdown, under a line that says what
    the breakdown is, and a last line counting the rest."""
    if view.operators is None:
        return {}
    timed = "time_ms" in view.operators
    head = (["operators", "runtime nodes: median time (share of the call's node time)"]
            if timed else ["operators", "counted: GFLOPs (share of the call's), MB read and "
                                        "written"])
    lines: dict[str, list[list[str]]] = {}
    for key, group in view.operators.groupby("key", sort=False):
        rows = group.to_dict("records")
        shown = [[str(row["operator"]) + (f" \u00d7{int(row['calls'])}"
                                          if not is_missing(row.get("calls"))
                                          and int(row["calls"]) > 1 else ""),
                  _operator_value(row)] for row in rows[:OPERATORS_SHOWN]]
        rest = len(rows) - OPERATORS_SHOWN
        if rest > 0:
            shown.append(["\u2026", f"{rest} more operator{'s' if rest > 1 else ''} "
                                     f"(operators.csv lists them all)"])
        lines[str(key)] = [head, *shown]
    return lines


def stage_details(view: RunView) -> dict[str, list[list[str]]]:
    """``{key: [[label, value], ...]}`` for every stage call and ``other`` row of ``view``."""
    rows = view.rows
    time = view.time
    raw = time.removesuffix("_median") if time else None
    repeats = _repeat_times(view.record.times, raw)
    calls = rows.groupby("stage")["stage"].transform("size") if len(rows) else rows.index
    details = {}
    operators = operator_lines(view)
    for (_, row), count in zip(rows.iterrows(), calls):
        name = stage_label(row["stage"], row["call_index"])
        lines = [["stage", name], ["kind", str(row.get("kind", "stage"))],
                 ["depth", str(int(row["depth"]))],
                 ["calls of this stage", str(int(count))]]
        if not is_missing(row.get("parent")) and row.get("parent"):
            lines.append(["inside", str(row["parent"])])
        if time:
            lines.append(_line("median time", row.get(time), unit=" ms"))
            low, high = row.get(f"{time}_ci95_low"), row.get(f"{time}_ci95_high")
            if not is_missing(low) and not is_missing(high):
                lines.append([view.interval_label, f"{span(low, high)} ms"])
            lines.append(_line("% of the forward", view.share(row.get(time)), unit="%"))
            key = (str(row["stage"]), int(row["call_index"]))
            if key in repeats:
                lines.append(["each repeat (ms)", repeats[key]])
        for label, column in (("input shapes", "in_shapes"), ("output shapes", "out_shapes")):
            if not is_missing(row.get(column)) and str(row.get(column)):
                lines.append([label, str(row[column])])
        lines += [_line("GFLOPs", row.get("flops"), 1e-9), _line("GMACs", row.get("macs"), 1e-9),
                  _line("input MB", row.get("in_bytes"), 1e-6),
                  _line("output MB", row.get("out_bytes"), 1e-6)]
        if view.memory:
            lines.append(_line("memory peak MB", row.get(view.memory)))
        lines += operators.get(str(row["key"]), [])
        details[str(row["key"])] = [line for line in lines if line is not None]
    return details
