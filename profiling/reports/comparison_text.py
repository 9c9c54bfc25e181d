"""The terminal's table of a comparison of two runs (``python -m zoo.compare RUN_A RUN_B``):
a header of totals, then per stage call the median times with the change and its interval
(marked ``*`` where :func:`~profiling.reports.comparison.compare_runs` calls it
significant), and B's exact figures beside their change; and the rule of the marks in
words (:func:`significance_rule`), which the HTML page's note quotes too."""

from __future__ import annotations

import textwrap
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from ..statistics.intervals import RATIO_CI_METHOD
from ..statistics.noise import unreliable_reasons
from ..statistics.paired import AB_RULE
from ..statistics.thresholds import MIN_CHANGE
from .comparison import (FORWARD, MIN_CPU_DIFFERENCE_MS, declared_metrics_of, executed_as,
                         measured_differences)
from .labels import printable, right_aligned, shorten
from .numbers import change_text, significant
from .record import Run, RunRecord, as_record
from .runs import forward_median
from .view import extra_metrics

__all__ = ["format_comparison", "significance_rule", "noise_summary"]

#: Widths of the terminal table's stage column and of each exact metric's column: the table
#: fits 120 columns.
LABEL, EXACT = 30, 15


def _cell(value: float, scale: float = 1.0) -> str:
    return "-" if value is None or pd.isna(value) else significant(value * scale)


def _percent(first: float, second: float, decimals: int = 1) -> str:
    """B's change from A as every face writes it (:func:`~profiling.reports.numbers.
    change_text`): ``+12.5%``, and from 10x either way the factor B/A, ``5,208,333,333x``
    (not ``+520833333233%``) or ``1/74.6x``."""
    return change_text(second / first, decimals)


def _change(first: float, second: float) -> str:
    if pd.isna(first) or pd.isna(second) or first == 0:
        return "-"
    return _percent(first, second)


def _time_change(row: pd.Series, metric: str, color: bool) -> tuple[str, str]:
    """The time's change and its interval, marked ``*`` when significant and put in
    parentheses (dimmed on a terminal) when within the noise."""
    change = _change(row[f"{metric}_a"], row[f"{metric}_b"])
    low, high = row.get("time_ratio_ci95_low", np.nan), row.get("time_ratio_ci95_high", np.nan)
    if change == "-" or pd.isna(low) or pd.isna(high):
        return change, "-"
    interval = f"{(low - 1) * 100:+.0f}..{(high - 1) * 100:+.0f}%"
    if row.get("significant"):
        return f"{change} *", interval
    quiet = f"({change})"
    return (f"\033[2m{quiet}\033[0m" if color else quiet), interval


def format_comparison(table: pd.DataFrame, a: Run, b: Run, *,
                      max_depth: int = 1, min_change: float = MIN_CHANGE,
                      color: bool = False) -> str:
    """A terminal table of the main metrics down to ``max_depth``, under a header of totals;
    ``a`` and ``b`` are the runs ``table`` compares (see
    :func:`~profiling.reports.comparison.compare_runs`).

    The header names the config keys that differ, each run's noise, and compares the
    parameters and the whole forward's median time. A time change is marked ``*`` when
    significant (:func:`~profiling.reports.comparison.compare_runs`) and shown in parentheses
    otherwise (dimmed when ``color``); payload, memory peak and FLOPs are exact and shown as
    they are.
    """
    a, b = as_record(a), as_record(b)
    lines = [f"A: {a.label} ({executed_as(a.meta)})", f"B: {b.label} ({executed_as(b.meta)})"]
    for key, (first, second) in measured_differences(a.config, b.config).items():
        lines.append(f"  {key}: {first} -> {second}")
    lines += [f"noise A: {noise_summary(a.meta)}", f"noise B: {noise_summary(b.meta)}"]
    first, second = a.meta.get("parameters"), b.meta.get("parameters")
    if first is not None or second is not None:
        lines.append(f"parameters: {first} -> {second} "
                     f"({_change(first or np.nan, second or np.nan)})")
    withheld = table["withheld"].iloc[0] if "withheld" in table and len(table) else ""
    if withheld:
        lines.append(f"significance withheld, the timings of a loaded machine can move by any "
                     f"factor between runs ({withheld}); re-run on a quiet machine, or compare "
                     f"with --loaded")
    lines = [printable(line) for line in lines]  # folders and options from the run folders
    forward = table[table["stage"] == FORWARD] if "stage" in table else table.iloc[:0]
    stages = table[(table["stage"] != FORWARD) & (table["depth"].fillna(0) <= max_depth)]
    time = _first(stages, "cuda_time_ms_median", "cpu_time_ms_median")
    lines.append(_forward_line(forward, a, b, time, color))
    exact = [(label, metric, scale) for label, metric, scale in (
        ("out MB", "out_bytes", 1e-6),
        ("peak MB", _first(table, "cuda_peak_mb", "tensor_peak_mb"), 1.0),
        ("GFLOPs", "flops" if "flops_a" in table else None, 1e-9)) if metric]
    compared = [column[:-2] for column in table.columns if column.endswith("_a")]
    exact += [(metric.label, metric.column, metric.scale)
              for metric in extra_metrics(declared_metrics_of(a, b), compared)]
    header = f"{'stage':<{LABEL}}"
    if time:
        header += f"{'time ms A':>10}{'time ms B':>10}{'change':>10}{_ci_label(table):>14}"
    header += "".join(f"{label + ' B':>{EXACT}}" for label, _, _ in exact)
    lines += ["", header]
    for _, row in stages.iterrows():
        label = _label(str(row["stage"]), row["depth"], row["call_index"])
        line = f"{label:<{LABEL}}"
        if time:
            change, interval = _time_change(row, time, color)
            pad = len(change) - len(_strip_color(change))
            line += (right_aligned(_cell(row[f'{time}_a']), 10)
                     + right_aligned(_cell(row[f'{time}_b']), 10)
                     + right_aligned(change, 10 + pad) + right_aligned(interval, 14))
        for _, metric, scale in exact:
            line += right_aligned(_transition(row[f'{metric}_a'], row[f'{metric}_b'], scale),
                                  EXACT)
        lines.append(line)
    rule = "* significant: " + significance_rule(table, time or "", min_change)
    lines += textwrap.wrap(f"({rule}; a change in parentheses is within the noise. Payload, "
                           f"memory peaks and GFLOPs are exact; MB: 1e6 bytes)", 119)
    return "\n".join(lines)


def significance_rule(table: pd.DataFrame, time: str, min_change: float = MIN_CHANGE) -> str:
    """The rule by which ``table``'s ``significant`` column was set, in words, for every
    legend that explains the marks (the terminal's and the HTML page's), so that the legend
    and the marks use one rule. ``time``: the compared time column (``cpu_time_ms_median``,
    ...); ``min_change`` unless the table records its own."""
    if "min_change" in table and len(table):
        min_change = float(table["min_change"].iloc[0])
    if "confidence" in table and len(table):
        return AB_RULE.format(confidence=f"{float(table['confidence'].iloc[0]):.2%}",
                              min_change=f"{min_change:.0%}").removeprefix("* significant: ")
    rule = (f"the {RATIO_CI_METHOD} B/A excludes 1 and the change is at least "
            f"{min_change:.0%} (--min-change, or a run's forward CV where larger)")
    if time.startswith("cpu_time_ms"):
        rule += f" and {MIN_CPU_DIFFERENCE_MS:g} ms of CPU time (a scheduler time slice)"
    return rule


def _ci_label(table: pd.DataFrame) -> str:
    """``95% CI``, or the confidence an A/B comparison's intervals really have."""
    if "confidence" in table and len(table):
        return f"{float(table['confidence'].iloc[0]):.1%} CI"
    return "95% CI"


def _label(stage: str, depth: Any, call_index: Any) -> str:
    """The indented stage name with its call index, shortened in its middle to fit."""
    indent = "  " * int(depth if pd.notna(depth) else 0)
    name = stage + (f"[{int(call_index)}]" if call_index else "")
    return indent + shorten(name, LABEL - 1 - len(indent))


def _transition(first: float, second: float, scale: float) -> str:
    """B's value, and its change from A when they differ (an exact metric needs no
    interval; ``compare.csv`` holds both values)."""
    if pd.isna(second):
        return "-"
    value = significant(second * scale)
    if pd.isna(first) or first == second:
        return value
    return f"{value} ({_percent(first, second, 0)})" if first else value


def _strip_color(text: str) -> str:
    return text.replace("\033[2m", "").replace("\033[0m", "")


def _forward_line(forward: pd.DataFrame, a: RunRecord, b: RunRecord, time: Optional[str],
                  color: bool) -> str:
    first, second = forward_median(a.meta), forward_median(b.meta)
    if first is None and second is None:
        return "forward median (ms): not timed"
    text = f"forward median (ms): {_cell(first)} -> {_cell(second)}"
    if forward.empty or time is None:
        return f"{text} ({_change(first or np.nan, second or np.nan)})"
    change, interval = _time_change(forward.iloc[0], time, color)
    return f"{text} {change}, {_ci_label(forward)} {interval}"


def _first(table: pd.DataFrame, *metrics: str) -> Optional[str]:
    return next((m for m in metrics if f"{m}_a" in table and
                 (table[f"{m}_a"].notna().any() or table[f"{m}_b"].notna().any())), None)


def noise_summary(meta: Mapping[str, Any]) -> str:
    """One run's noise in a few words: forward CV, load average and cores, and a warning."""
    noise = meta.get("noise") or {}
    if not noise:
        return "noise not recorded" if meta.get("forward_ms") else "not timed"
    cv = noise.get("forward_cv")
    load = noise.get("load_average_before") or [None]
    words = [f"forward CV {cv:.1%}" if cv is not None else "forward CV -",
             f"load {load[0]:.2f} on {noise.get('cores')} cores" if load[0] is not None
             else "load -", f"{noise.get('repeats')} repeats"]
    if unreliable_reasons(noise):
        words.append("UNRELIABLE")
    return ", ".join(words)
