"""One view of a run: what every face of it shows, built once by :func:`run_view`.

A run is shown in the terminal, in ``stages.csv`` and ``meta.json``, in the PNG plots and on
its page. Each face renders the :class:`RunView` of the run and derives nothing of its own,
so that all of them state the same rows in the same order with the same labels:

* ``rows``: every stage call, probe and ``other`` row in forward order, each ``other`` row
  right under its parent (after the parent's last descendant), the top-level one last;
* ``summary``: one row per stage name down to a depth, its calls summed (the terminal's and
  ``time.png``'s rows), in the same order;
* the interval's label with its true coverage for the repeats made (``93.7% CI`` for 5
  repeats, ``95% CI`` from 6), the noise verdict, the precision that ran and the coverage line;
* ``operators``: each stage call's operator breakdown where the run has one (the op
  counter's counts per operator, or a runtime's node times), with each operator's share.

An ``other`` row shows, on every face, the median over the repeats of what its parent (the
whole forward, at the top) spent outside its stages in each forward, never below zero; medians
of parts do not add up to the median of the whole, so the rows of a level add up to their
parent only roughly (``stages.csv``'s ``_mean`` columns add up exactly). The coverage is
``1 - other / forward`` for the same reason, never above 100%.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..statistics.aggregate import first_column, shown_calls, stage_time_sums, time_column
from ..statistics.coverage import OTHER, coverage_line
from ..statistics.intervals import interval_label
from ..statistics.noise import unreliable_reasons
from .record import Run, RunRecord, as_record

__all__ = ["RunView", "run_view", "forward_order", "interval_label", "noise_verdict",
           "executed_precision", "call_label", "OTHER_RULE", "OWN_METRICS",
           "extra_metrics", "operator_breakdown"]

#: The built-in metrics the terminal tables (this summary and the comparison) show with code
#: of their own: time with its interval, GFLOPs, the memory peak.
OWN_METRICS = ("cpu_time_ms", "cuda_time_ms", "flops", "tensor_peak_mb", "cuda_peak_mb")


def extra_metrics(metrics: Sequence[Any], columns: Any) -> list[Any]:
    """The declared headline metrics measured once that a terminal table shows in columns of
    their own: any but :data:`OWN_METRICS`, where ``columns`` holds them."""
    return [metric for metric in metrics if metric.headline and metric.repeats == "once"
            and str(metric) not in OWN_METRICS and metric.column in columns]

#: How every face says an ``other`` row is computed.
OTHER_RULE = ("other: the median over the repeats of the time its parent (the whole forward "
              "at the top) spent outside its stages, never below 0; medians do not add up, so "
              "a level's rows add up to its total only roughly (stages.csv's _mean columns "
              "add up exactly)")


@dataclass
class RunView:
    """What a run shows, on every face.

    Attributes:
        record: the run's record.
        rows: every stage call, probe and ``other`` row in forward order (the stage table's
            columns, with ``key``, the call's one name, and ``label``, ``name[i]``).
        summary: one row per stage name down to ``max_depth`` (index: the name), in forward
            order: ``calls``, ``depth``, ``kind``, ``parent``, ``out_mb``, and where measured
            ``time_ms`` with ``ci_low``/``ci_high``, ``share`` (% of the forward), ``gflops``,
            ``peak_mb``, and each extra metric.
        time: the time column shown (``cpu_time_ms_median`` or ``cuda_time_ms_median``).
        memory: the memory peak column shown, or ``None``.
        forward_ms: the whole forward's median time, or ``None`` when not timed.
        total_flops: the counted FLOPs of the whole forward, or ``None``.
        repeats: the timed forwards.
        interval_coverage: the true coverage of the median's interval for ``repeats``.
        interval_label: ``95% CI``, or the true coverage (``93.7% CI`` for 5 repeats).
        noise: the noise verdict (:func:`noise_verdict`).
        precision: the precision that ran (:func:`executed_precision`).
        share_of: what ``summary``'s ``share`` is a percentage of: ``time`` (the forward's
            median), ``FLOPs`` (the counted total, for an untimed run) or ``None``.
        coverage: the share of the time and FLOPs in named stages, each in [0, 1].
        coverage_line: the line that says it (``None`` when nothing was measured).
        operators: each stage call's operators (:func:`operator_breakdown`), or ``None``.
    """

    record: RunRecord
    rows: pd.DataFrame
    summary: pd.DataFrame
    time: Optional[str]
    memory: Optional[str]
    forward_ms: Optional[float]
    total_flops: Optional[float]
    repeats: int
    interval_coverage: float
    interval_label: str
    noise: str
    precision: str
    share_of: Optional[str] = None
    coverage: dict[str, float] = field(default_factory=dict)
    coverage_line: Optional[str] = None
    operators: Optional[pd.DataFrame] = None

    def share(self, value: Any) -> Optional[float]:
        """``value`` (ms) as a percentage of the forward's median, or ``None``."""
        if self.forward_ms is None or self.forward_ms <= 0 or value is None or pd.isna(value):
            return None
        return 100.0 * float(value) / self.forward_ms


def call_label(stage: Any, call_index: Any) -> str:
    """``name`` for a stage's first call, ``name[i]`` for a later one, as every face names
    a call."""
    index = 0 if call_index is None or pd.isna(call_index) else int(call_index)
    return f"{stage}[{index}]" if index else str(stage)


def noise_verdict(meta: Mapping[str, Any]) -> str:
    """``reliable`` or ``UNRELIABLE`` with the reasons and the forward's spread, or why there
    is no verdict."""
    noise = meta.get("noise") or {}
    if not noise:
        return "not timed" if not meta.get("forward_ms") else "not recorded (an older run)"
    reasons = unreliable_reasons(noise)
    cv = noise.get("forward_cv")
    spread = f"forward CV {cv:.1%}, " if cv is not None else ""
    load = (noise.get("load_average_before") or [None])[0]
    detail = f"{spread}load {load} on {noise.get('cores')} cores, {noise.get('repeats')} repeats"
    if reasons:
        return f"UNRELIABLE: {'; '.join(reasons)} ({detail})"
    return f"reliable ({detail})"


def executed_precision(meta: Mapping[str, Any]) -> str:
    """The precision the run executed: ``meta.json``'s ``precision`` (a text, or
    ``{"executed": ...}``); else the share of a runtime's node time in each precision as it
    reports them (``deployment.executed_precision``: ``int8 70% + float32 30% of node time``,
    one precision alone by its name); else the deployment's or the config's ``run.dtype``,
    else ``float32``."""
    recorded = meta.get("precision")
    if isinstance(recorded, Mapping):
        recorded = recorded.get("executed") or recorded.get("dtype")
    if recorded:
        return str(recorded)
    deployment = meta.get("deployment") if isinstance(meta.get("deployment"), Mapping) else {}
    shares = deployment.get("executed_precision")
    if isinstance(shares, Mapping) and shares:
        ordered = sorted(shares.items(), key=lambda item: -float(item[1]))
        if len(ordered) == 1 or float(ordered[0][1]) >= 0.9995:
            return str(ordered[0][0])
        return " + ".join(f"{kind} {float(share):.0%}" for kind, share in ordered) \
            + " of node time"
    run = (meta.get("config") or {}).get("run") or {}
    return str(deployment.get("dtype") or run.get("dtype") or "float32")


def forward_order(stages: pd.DataFrame) -> pd.DataFrame:
    """The stage table's rows in forward order: stage calls and probes as they started
    (``order``), each ``P/other`` row right after the last row inside ``P`` (deeper ones
    first), the top-level ``other`` last. A table without ``order`` keeps its row order."""
    if "kind" not in stages:
        return stages.reset_index(drop=True)
    others = stages[stages["kind"] == OTHER]
    calls = stages[stages["kind"] != OTHER]
    if "order" in calls:
        calls = calls.sort_values("order", kind="stable")
    calls = calls.reset_index(drop=True)
    last_inside: dict[str, int] = {}
    open_names: list[str] = []
    for position, (name, depth) in enumerate(zip(calls["stage"], calls["depth"].astype(int))):
        del open_names[depth:]
        open_names.append(str(name))
        for inside in open_names:
            last_inside[inside] = position
    others = others.reset_index(drop=True)
    after: dict[int, list[tuple[int, int]]] = {}
    for number, (parent, depth) in enumerate(zip(others.get("parent", [""] * len(others)),
                                                 others["depth"].astype(int))):
        parent = str(parent or "")
        anchor = last_inside.get(parent, len(calls) - 1) if parent else len(calls)
        after.setdefault(anchor, []).append((-depth, len(calls) + number))
    positions = list(after.pop(-1, []))  # under a parent of no call, in a table of none
    for position in range(len(calls) + 1):
        if position < len(calls):
            positions.append((0, position))
        positions += sorted(after.get(position, []))
    both = pd.concat([calls, others], ignore_index=True)
    return both.iloc[[position for _, position in positions]].reset_index(drop=True)


def _summary(stages: pd.DataFrame, max_depth: int, time: Optional[str],
             memory: Optional[str], times: Optional[pd.DataFrame],
             extras: Sequence[Any]) -> pd.DataFrame:
    """One row per stage (and ``other`` row) down to ``max_depth``, calls summed."""
    rows = shown_calls(stages, max_depth, ("stage", OTHER))
    grouped = rows.groupby("stage", sort=False)
    table = pd.DataFrame({"calls": grouped.size(), "depth": grouped["depth"].first(),
                          "kind": grouped["kind"].first(),
                          "parent": grouped["parent"].first() if "parent" in rows else "",
                          "out_mb": grouped["out_bytes"].sum() / 1e6})
    if time:
        table = table.join(stage_time_sums(rows, time, times))
        other = table["kind"] == OTHER
        table.loc[other, "time_ms"] = table.loc[other, "time_ms"].clip(lower=0)
    if "flops" in rows and rows["flops"].notna().any():
        table["gflops"] = grouped["flops"].sum(min_count=1) / 1e9
    if memory:
        table["peak_mb"] = grouped[memory].max()
    for metric in extras:  # calls add up as the metric declares
        table[str(metric)] = grouped[metric.column].agg(metric.calls) * metric.scale
    return table


def _count_remainders(table: pd.DataFrame, total_gflops: Optional[float]) -> None:
    """Each ``other`` row's GFLOPs as its parent's (the whole forward's at the top) minus the
    rows beside it: where a stage's deeper calls are inside a shallower one
    (:func:`~profiling.statistics.aggregate.shown_calls`), the rows shown still add up
    (counts are exact, so the remainder always stands)."""
    if "gflops" not in table:
        return
    for name, row in table[table["kind"] == OTHER].iterrows():
        siblings = table[(table["depth"] == row["depth"]) & (table["kind"] == "stage")
                         & (table["parent"] == row["parent"])]
        whole = total_gflops if row["depth"] == 0 else table["gflops"].get(row["parent"])
        if whole is not None and not pd.isna(whole):  # whole FLOPs: no round-off below 0
            flops = round((whole - siblings["gflops"].sum()) * 1e9)
            table.loc[name, "gflops"] = max(flops, 0) / 1e9


def _repeats(forward: Sequence[float], times: Optional[pd.DataFrame]) -> int:
    if len(forward):
        return len(forward)
    if times is not None and len(times) and "repeat" in times:
        return int(times["repeat"].max()) + 1
    return 0


def _coverage(recorded: Mapping[str, Any], summary: pd.DataFrame,
              forward_ms: Optional[float]) -> dict[str, float]:
    """The recorded coverage, its time share made ``1 - other / forward`` where the top-level
    ``other`` row is shown (so that the line and the row say the same), each in [0, 1]."""
    coverage = {str(name): float(value) for name, value in (recorded or {}).items()
                if value is not None and not pd.isna(value)}
    if "time_ms" in summary and OTHER in summary.index and forward_ms:
        other = summary.loc[OTHER, "time_ms"]
        if not pd.isna(other):
            coverage["time"] = 1.0 - float(other) / forward_ms
    return {name: min(max(value, 0.0), 1.0) for name, value in coverage.items()}


def _never_negative(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with the times of their ``other`` rows never below 0 (a run folder of an older
    version holds the medians of differences that clock noise made negative)."""
    if "kind" not in rows:
        return rows
    other = rows["kind"] == OTHER
    times = [column for column in rows.columns if "_time_ms_" in column
             and pd.api.types.is_numeric_dtype(rows[column])]
    rows = rows.copy()
    rows.loc[other, times] = rows.loc[other, times].clip(lower=0)
    return rows


def _with_keys(rows: pd.DataFrame) -> pd.DataFrame:
    from .html.formatting import stage_key

    calls = rows["call_index"] if "call_index" in rows else pd.Series(0, index=rows.index)
    return rows.assign(key=[stage_key(s, c) for s, c in zip(rows["stage"], calls)],
                       label=[call_label(s, c) for s, c in zip(rows["stage"], calls)])


def operator_breakdown(operators: Optional[pd.DataFrame]) -> Optional[pd.DataFrame]:
    """Each stage call's operators (``operators.csv``) with the call's ``key``, and each
    operator's ``share``: its percentage of the call's FLOPs (counted runs) or of the call's
    node time (``time_ms``, runtime runs); in each call the largest first, the calls in the
    table's order. ``None`` where the run has no breakdown."""
    if operators is None or not len(operators):
        return None
    from .html.formatting import stage_key

    measure = "time_ms" if "time_ms" in operators else "flops"
    table = operators.assign(key=[stage_key(s, c) for s, c in zip(operators["stage"],
                                                                    operators["call_index"])])
    values = pd.to_numeric(table[measure], errors="coerce").fillna(0.0)
    whole = values.groupby(table["key"], sort=False).transform("sum")
    table["share"] = (100.0 * values / whole).where(whole > 0)
    position = {key: number for number, key in enumerate(dict.fromkeys(table["key"]))}
    table["position"], table["weight"] = table["key"].map(position), -values
    return (table.sort_values(["position", "weight"], kind="stable")
            .drop(columns=["position", "weight"]).reset_index(drop=True))


def run_view(run: Run, *, max_depth: int = 1, metrics: Optional[Sequence[Any]] = None,
             coverage_hint: Optional[str] = None) -> RunView:
    """The view of ``run`` (a record, a result in memory or a run folder) that every face
    renders.

    Args:
        max_depth: the deepest stages of ``summary``.
        metrics: the declared metrics whose extra columns ``summary`` carries (the headline
            metrics beyond the built-in ones, :func:`~profiling.reports.summary.extra_metrics`);
            by default none.
        coverage_hint: how to name more stages, said by the coverage line when it is low.
    """
    record = as_record(run)
    meta = record.meta
    stages = _never_negative(forward_order(record.stages))
    time = time_column(stages)
    memory = first_column(stages, "cuda_peak_mb", "tensor_peak_mb")
    extras = extra_metrics(metrics or (), stages.columns)
    forward = [float(value) for value in meta.get("forward_ms") or []]
    forward_ms = float(np.median(forward)) if forward else None
    flops = (meta.get("totals") or {}).get("flops")
    total_flops = float(flops) if flops is not None else None
    summary = _summary(stages, max_depth, time, memory, record.times, extras)
    _count_remainders(summary, total_flops / 1e9 if total_flops is not None else None)
    share_of = "time" if "time_ms" in summary and forward_ms else (
        "FLOPs" if "gflops" in summary and total_flops else None)
    if share_of:
        summary["share"] = (100.0 * summary["time_ms"] / forward_ms if share_of == "time"
                            else 100.0 * summary["gflops"] * 1e9 / total_flops)
    repeats = _repeats(forward, record.times)
    label, coverage = interval_label(repeats)
    shares = _coverage(meta.get("coverage") or {}, summary, forward_ms)
    line = coverage_line(shares, *([coverage_hint] if coverage_hint else []))
    return RunView(record, _with_keys(stages), summary, time, memory, forward_ms, total_flops,
                   repeats, coverage, label, noise_verdict(meta), executed_precision(meta),
                   share_of, shares, line, operator_breakdown(record.operators))
