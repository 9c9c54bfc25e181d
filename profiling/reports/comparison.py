"""Stage-by-stage comparison of two runs (``python -m zoo.compare RUN_A RUN_B``).

Counts and bytes are exact: their difference and ratio need no interval. Times are not: for
each stage call and for the whole forward, :func:`compare_runs` adds the ratio B/A of the
median times with its 95% interval, a percentile bootstrap of the ratio of medians over the two
runs' repeats (``times.csv`` and ``meta.json``'s ``forward_ms``; seeded, so the same runs give
the same interval), and ``significant``: the interval excludes 1 and the change is at least
``min_change`` (default 25%: above the drift between two processes that run one
configuration, a shift the repeats of either run cannot see; ``docs/statistics.md`` has the
measurements), raised to the larger forward CV of the two runs when that is larger
(:func:`change_threshold`; see ``docs/statistics.md``), and, for CPU times, the medians differ
by at least :data:`MIN_CPU_DIFFERENCE_MS`. Between runs whose machine was loaded
above its cores nothing is called significant (:func:`withheld_reason`). The terminal's table
of a comparison is :func:`~profiling.reports.comparison_text.format_comparison`.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ..statistics.intervals import coefficient_of_variation, is_significant, ratio_interval
from ..statistics.noise import loaded_reason
from ..statistics.paired import AB_MIN_CHANGE, paired_significance
from ..statistics.thresholds import MIN_CHANGE
from .record import Run, RunRecord, as_record
from .runs import flatten_config
from .view import executed_precision, forward_order

__all__ = ["PAYLOAD_COLUMNS", "compared_columns", "compare_stages",
           "compare_runs", "compare_paired_runs", "add_significance", "forward_comparison",
           "change_threshold", "withheld_reason", "config_differences", "declared_metrics_of",
           "measured_differences", "IGNORED_OPTIONS",
           "MIN_CHANGE", "MIN_CPU_DIFFERENCE_MS", "FORWARD", "executed_as"]

#: CPU time differences below this many ms are never significant: about one time slice of
#: the OS scheduler, by which a preemption moves a stage between two processes (the A/A
#: trials in ``docs/statistics.md``).
MIN_CPU_DIFFERENCE_MS = 1.0
#: The ``stage`` of the whole forward's row in :func:`compare_runs`'s table.
FORWARD = "(forward)"

#: The payload columns every comparison holds; the metrics the runs' collectors declare
#: follow them (:func:`compared_columns`).
PAYLOAD_COLUMNS = ("in_bytes", "out_bytes")

_KEY = ["stage", "call_index"]


def compared_columns(metrics: Sequence[Any]) -> list[str]:
    """The columns a comparison holds: the payload's, then each declared metric's column
    (``{name}_median`` for a repeated one), each once."""
    return list(dict.fromkeys([*PAYLOAD_COLUMNS, *(metric.column for metric in metrics)]))


def compare_stages(a: pd.DataFrame, b: pd.DataFrame, metrics: Optional[Sequence[Any]] = None
                   ) -> pd.DataFrame:
    """One row per stage call of either table, matched by ``(stage, call_index)``.

    For each of the columns of :func:`compared_columns` found in either table (the payload and
    the declared ``metrics``, by default those of every registered collector):
    ``{metric}_a``, ``{metric}_b``, ``{metric}_diff`` (b - a) and ``{metric}_ratio`` (b / a;
    empty where a is 0 or either is missing). Stages of A come first in A's forward order,
    each ``other`` row under its parent (:func:`~profiling.reports.view.forward_order`), then
    those only in B.
    """
    if metrics is None:
        from ..collectors import declared_metrics, registered_collectors

        metrics = declared_metrics(registered_collectors().values())
    metrics = [m for m in compared_columns(metrics) if m in a or m in b]
    # the rows in forward order, each 'other' row under its parent (its own 'order' is a
    # pseudo index after the last stage)
    sides = [_forward_positions(table).reindex(columns=_KEY + ["kind", "depth", "order"]
                                               + metrics) for table in (a, b)]
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


def _forward_positions(table: pd.DataFrame) -> pd.DataFrame:
    if "depth" not in table or "kind" not in table:
        return table
    ordered = forward_order(table)
    return ordered.assign(order=np.arange(len(ordered)))


def config_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, tuple]:
    """``{key: (value_a, value_b)}`` for the flattened config keys that differ."""
    flat_a, flat_b = flatten_config(a), flatten_config(b)
    keys = dict.fromkeys(list(flat_a) + list(flat_b))
    return {k: (flat_a.get(k), flat_b.get(k)) for k in keys
            if json.dumps(flat_a.get(k), default=str) != json.dumps(flat_b.get(k), default=str)}


#: Config keys that change what a run writes or prints, not what it measures: no face of a
#: comparison lists them among the options that differ between its runs.
IGNORED_OPTIONS = ("hydra", "summary", "plots", "trace", "report", "run.overwrite",
                   "device.collectors")


def measured_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, tuple]:
    """:func:`config_differences` but the keys of :data:`IGNORED_OPTIONS`: what the terminal
    and the page of a comparison list as changed from A."""
    return {key: values for key, values in config_differences(a, b).items()
            if not key.startswith(IGNORED_OPTIONS)}


def declared_metrics_of(a: RunRecord, b: RunRecord) -> list:
    """The metrics either run declares, each once, A's first."""
    found: dict[str, Any] = {}
    for metric in [*a.metrics, *b.metrics]:
        found.setdefault(str(metric), metric)
    return list(found.values())


def _time_metric(a: pd.DataFrame, b: pd.DataFrame) -> Optional[str]:
    """The repeated time both tables have: CUDA time where measured, else CPU time."""
    return next((m for m in ("cuda_time_ms", "cpu_time_ms")
                 if f"{m}_median" in a and f"{m}_median" in b), None)


def _interval_columns(rows: list[tuple[float, float, float]], min_change: float
                      ) -> dict[str, list]:
    return {"time_ratio": [r[0] for r in rows], "time_ratio_ci95_low": [r[1] for r in rows],
            "time_ratio_ci95_high": [r[2] for r in rows],
            "significant": [is_significant(low, high, ratio, min_change)
                            for ratio, low, high in rows]}


def add_significance(table: pd.DataFrame, times_a: Optional[pd.DataFrame],
                     times_b: Optional[pd.DataFrame], metric: str, *,
                     min_change: float = MIN_CHANGE, seed: int = 0) -> pd.DataFrame:
    """``table`` (of :func:`compare_stages`) with the time's ratio, its interval and
    ``significant`` per stage call, from the two runs' raw repeats of ``metric``.

    Columns ``time_ratio`` (median B / median A), ``time_ratio_ci95_low``/``_high``
    (:func:`profiling.statistics.ratio_interval`, ``seed`` fixed) and ``significant``
    (:func:`profiling.statistics.is_significant`); NaN and ``False`` where either run has no
    repeats of that stage call.
    """
    empty = pd.DataFrame(columns=["stage", "call_index", "repeat", metric])
    groups = [(t if t is not None and metric in t else empty).groupby(
        ["stage", "call_index"])[metric] for t in (times_a, times_b)]
    samples = [{key: values.to_numpy(float) for key, values in group} for group in groups]
    rows = [ratio_interval(samples[0][key], samples[1][key], seed=seed)
            if key in samples[0] and key in samples[1] else (np.nan, np.nan, np.nan)
            for key in zip(table["stage"], table["call_index"].astype(int))]
    extra = pd.DataFrame(_interval_columns(rows, min_change), index=table.index)
    return pd.concat([table, extra], axis=1)


def forward_comparison(a: Mapping[str, Any], b: Mapping[str, Any], *,
                       column: str = "forward_ms_median", min_change: float = MIN_CHANGE,
                       seed: int = 0) -> dict[str, Any]:
    """The whole forward of two runs (their ``meta.json``'s host times ``forward_ms``):
    medians as ``{column}_a``/``_b``, their difference and ratio, the ratio's interval and
    ``significant``, as one row of :func:`compare_runs`'s table."""
    first, second = (np.asarray(m.get("forward_ms") or [], dtype=float) for m in (a, b))
    ratio = ratio_interval(first, second, seed=seed)
    medians = [float(np.median(x)) if len(x) else np.nan for x in (first, second)]
    row = {"stage": FORWARD, "call_index": 0, "kind": "forward", "depth": 0,
           "present": "both", f"{column}_a": medians[0], f"{column}_b": medians[1],
           f"{column}_diff": medians[1] - medians[0], f"{column}_ratio": ratio[0]}
    row.update({k: v[0] for k, v in _interval_columns([ratio], min_change).items()})
    return row


def executed_as(meta: dict) -> str:
    """What ran a run's forward, and in which precision it executed
    (:func:`~.view.executed_precision`): ``torch float32``, ``onnxruntime int8 99% + float32 1%
    of node time``."""
    deployment = meta.get("deployment") or {}
    return f"{deployment.get('runtime') or 'torch'} {executed_precision(meta)}"


def compare_paired_runs(a: Run, b: Run, *, min_change: float = AB_MIN_CHANGE
                        ) -> pd.DataFrame:
    """Two runs timed in alternation, round by round (``zoo.compare --run A --run B``): the
    table of :func:`compare_runs`, its significance from the per-round ratios
    (:func:`profiling.statistics.paired.paired_significance`). Load is not a reason to
    withhold it: it hits both sides of each round alike."""
    a, b = as_record(a), as_record(b)
    table = compare_stages(a.stages, b.stages, declared_metrics_of(a, b))
    metric = _time_metric(a.stages, b.stages)
    if metric is None:
        return table
    keys = list(zip(table["stage"], table["call_index"].astype(int)))
    forward = (a.meta.get("forward_ms") or [], b.meta.get("forward_ms") or [])
    significance = paired_significance(keys, a.times, b.times,
                                       metric, forward, min_change=min_change)
    first, second = (float(np.median(x)) if len(x) else np.nan for x in forward)
    head = pd.DataFrame([{"stage": FORWARD, "call_index": 0, "kind": "forward", "depth": 0,
                          "present": "both", f"{metric}_median_a": first,
                          f"{metric}_median_b": second,
                          f"{metric}_median_diff": second - first,
                          f"{metric}_median_ratio": second / first if first else np.nan}])
    table = pd.concat([head, table], ignore_index=True)
    table = pd.concat([table, significance], axis=1)
    table["min_change"] = min_change
    table["confidence"] = significance.attrs["confidence"]
    table["withheld"] = ""
    table["executed_a"], table["executed_b"] = executed_as(a.meta), executed_as(b.meta)
    return table


def compare_runs(a: Run, b: Run, *, min_change: float = MIN_CHANGE,
                 seed: int = 0, loaded: bool = False) -> pd.DataFrame:
    """Every stage call of two runs compared (:func:`compare_stages`), with the significance
    of each time change (:func:`add_significance`) and the whole forward as a first row
    (``stage`` :data:`FORWARD`, its time the host time of the whole forward).

    A run is a :class:`~profiling.reports.RunRecord`, a
    :class:`~profiling.runner.ProfileResult` in memory or a run folder: each is read as its
    record (:func:`~profiling.reports.record.as_record`), so two results compare as their
    written folders do.

    When a run's machine was loaded above its cores (:func:`profiling.statistics.loaded_reason`),
    its times may move by any factor from one run to the next, whatever its repeats say:
    ``significant`` is then ``False`` throughout and ``withheld`` says why, unless ``loaded``
    asks for the significance anyway. Intervals are given either way.
    """
    a, b = as_record(a), as_record(b)
    table = compare_stages(a.stages, b.stages, declared_metrics_of(a, b))
    metric = _time_metric(a.stages, b.stages)
    if metric is None:
        return table
    threshold = change_threshold(a.meta, b.meta, min_change)
    table = add_significance(table, a.times, b.times, metric,
                             min_change=threshold, seed=seed)
    forward = pd.DataFrame([forward_comparison(a.meta, b.meta, column=f"{metric}_median",
                                               min_change=threshold, seed=seed)])
    table = pd.concat([forward, table], ignore_index=True)
    table["min_change"] = threshold
    if metric == "cpu_time_ms":
        too_small = table[f"{metric}_median_diff"].abs() < MIN_CPU_DIFFERENCE_MS
        table.loc[too_small.fillna(True), "significant"] = False
    table["withheld"] = "" if loaded else withheld_reason(a.meta, b.meta)
    if table["withheld"].iloc[0]:
        table["significant"] = False
    return table


def withheld_reason(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """Why no change between runs with these ``meta.json`` can be called significant: the
    runs whose machine was loaded above its cores (``""`` when neither was)."""
    reasons = [f"run {name}: {loaded_reason(meta.get('noise') or {})}"
               for name, meta in (("A", a), ("B", b)) if loaded_reason(meta.get("noise") or {})]
    return "; ".join(reasons)


def change_threshold(a: Mapping[str, Any], b: Mapping[str, Any],
                     min_change: float = MIN_CHANGE) -> float:
    """The smallest change called significant between runs with these ``meta.json``:
    ``min_change``, or the larger forward CV of the two runs when that is larger.

    The bootstrap sees the noise within each run only; a machine whose load moves the
    forward by 30% from one repeat to the next moves it as much from one run to the next,
    and a change smaller than that cannot be told from it.
    """
    spreads = [min_change]
    for meta in (a, b):
        cv = (meta.get("noise") or {}).get("forward_cv")
        if cv is None:
            cv = coefficient_of_variation(meta.get("forward_ms") or [])
        if cv is not None and not math.isnan(cv):
            spreads.append(float(cv))
    return max(spreads)
