"""Stage-by-stage comparison of two runs (``python -m zoo.compare RUN_A RUN_B``)."""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

import numpy as np
import pandas as pd

from .runs import RunRecord, flatten_config, forward_median

__all__ = ["COMPARED_METRICS", "compare_stages", "config_differences", "format_comparison"]

#: The stage metrics compared, where at least one of the runs has them.
COMPARED_METRICS = ("cpu_time_ms_median", "cuda_time_ms_median", "cpu_mem_peak_mb",
                    "cuda_mem_peak_mb", "in_bytes", "out_bytes", "macs", "flops",
                    "bytes_read", "bytes_written")

_KEY = ["stage", "call_index"]


def compare_stages(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """One row per stage call of either table, matched by ``(stage, call_index)``.

    For each metric of :data:`COMPARED_METRICS` found in either table: ``{metric}_a``,
    ``{metric}_b``, ``{metric}_diff`` (b - a) and ``{metric}_ratio`` (b / a; empty where a is 0
    or either is missing). Stages of A come first in A's order, then those only in B.
    """
    metrics = [m for m in COMPARED_METRICS if m in a or m in b]
    sides = [table.reindex(columns=_KEY + ["kind", "depth", "order"] + metrics) for table in (a, b)]
    merged = sides[0].merge(sides[1], on=_KEY, how="outer", suffixes=("_a", "_b"),
                            indicator=True)
    merged["present"] = merged.pop("_merge").map(
        {"both": "both", "left_only": "a only", "right_only": "b only"}).astype(str)
    for column in ("kind", "depth"):
        merged[column] = merged[f"{column}_a"].combine_first(merged[f"{column}_b"])
    merged = merged.sort_values(["order_a", "order_b"], na_position="last", kind="stable")
    columns = {c: merged[c] for c in _KEY + ["kind", "depth", "present"]}
    for metric in metrics:
        first, second = (pd.to_numeric(merged[f"{metric}_{side}"], errors="coerce").astype(float)
                         for side in "ab")
        columns[f"{metric}_a"], columns[f"{metric}_b"] = first, second
        columns[f"{metric}_diff"] = second - first
        columns[f"{metric}_ratio"] = (second / first).where(first != 0)
    return pd.DataFrame(columns).reset_index(drop=True)


def config_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, tuple]:
    """``{key: (value_a, value_b)}`` for the flattened config keys that differ."""
    flat_a, flat_b = flatten_config(a), flatten_config(b)
    keys = dict.fromkeys(list(flat_a) + list(flat_b))
    return {k: (flat_a.get(k), flat_b.get(k)) for k in keys
            if json.dumps(flat_a.get(k), default=str) != json.dumps(flat_b.get(k), default=str)}


def _cell(value: float, scale: float = 1.0, digits: int = 3) -> str:
    return "-" if value is None or pd.isna(value) else f"{value * scale:.{digits}f}"


def _change(first: float, second: float) -> str:
    if pd.isna(first) or pd.isna(second) or first == 0:
        return "-"
    return f"{(second / first - 1) * 100:+.1f}%"


def format_comparison(table: pd.DataFrame, a: RunRecord, b: RunRecord, *,
                      max_depth: int = 1) -> str:
    """A terminal table of the main metrics down to ``max_depth``, under a header of totals.

    The header names the config keys that differ and compares the parameters and the whole
    forward's median time.
    """
    lines = [f"A: {a.directory}", f"B: {b.directory}"]
    for key, (first, second) in config_differences(a.config, b.config).items():
        if not key.startswith(("hydra", "summary", "plots", "trace")):
            lines.append(f"  {key}: {first} -> {second}")
    totals = [("parameters", a.meta.get("parameters"), b.meta.get("parameters")),
              ("forward median (ms)", forward_median(a.meta), forward_median(b.meta))]
    for name, first, second in totals:
        if first is not None or second is not None:
            change = _change(first or np.nan, second or np.nan)
            lines.append(f"{name}: {first} -> {second} ({change})")
    blocks = [(label, metric, scale) for label, metric, scale in (
        ("time ms", _first(table, "cuda_time_ms_median", "cpu_time_ms_median"), 1.0),
        ("out MB", "out_bytes", 1e-6),
        ("peak MB", _first(table, "cuda_mem_peak_mb", "cpu_mem_peak_mb"), 1.0),
        ("GFLOPs", "flops" if "flops_a" in table else None, 1e-9)) if metric]
    header = f"{'stage':<46}" + "".join(f"{label + ' A':>12}{label + ' B':>12}{'change':>10}"
                                        for label, _, _ in blocks)
    lines += ["", header]
    for _, row in table[table["depth"].fillna(0) <= max_depth].iterrows():
        label = ("  " * int(row["depth"] if pd.notna(row["depth"]) else 0) + str(row["stage"])
                 + (f"[{int(row['call_index'])}]" if row["call_index"] else ""))[:45]
        line = f"{label:<46}"
        for _, metric, scale in blocks:
            first, second = row[f"{metric}_a"], row[f"{metric}_b"]
            line += (f"{_cell(first, scale):>12}{_cell(second, scale):>12}"
                     f"{_change(first, second):>10}")
        lines.append(line)
    return "\n".join(lines)


def _first(table: pd.DataFrame, *metrics: str) -> Optional[str]:
    return next((m for m in metrics if f"{m}_a" in table and
                 (table[f"{m}_a"].notna().any() or table[f"{m}_b"].notna().any())), None)
