"""Aggregation of stage calls over repeated forwards into one table."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..stages.payload import PayloadNode, format_shape, iter_leaves, payload_bytes
from ..stages.markers import StageCall
from .intervals import median_interval

__all__ = ["aggregate_stages", "repeat_table", "STATISTICS", "shapes_text", "first_column",
           "time_column", "stage_time_sums", "shown_calls"]

#: The statistics of each repeated metric, as column suffixes. ``median_ci95_low`` and
#: ``median_ci95_high`` bound the order-statistics 95% interval of the median
#: (:func:`profiling.statistics.median_interval`).
STATISTICS = ("mean", "median", "p10", "p90", "std", "median_ci95_low", "median_ci95_high")


def shapes_text(node: Optional[PayloadNode]) -> str:
    """The shapes of a payload's tensors, ``; ``-separated (``""`` for none)."""
    return "; ".join(format_shape(leaf.shape) for _, leaf in iter_leaves(node))


def first_column(stages: pd.DataFrame, *names: str) -> Optional[str]:
    """The first of ``names`` that is a column of ``stages`` holding a value, or ``None``: a
    column of missing values only (a metric no stage measured, a hand-edited file) is none
    to show."""
    return next((name for name in names
                 if name in stages.columns and stages[name].notna().any()), None)


def time_column(stages: pd.DataFrame, statistic: str = "median") -> Optional[str]:
    """The time column to show: CUDA time where it was measured, else CPU time."""
    return first_column(stages, f"cuda_time_ms_{statistic}", f"cpu_time_ms_{statistic}")


def _statistics(values: Sequence[float]) -> dict[str, float]:
    array = np.asarray(values, dtype=float)
    low, high = median_interval(array)
    return {"mean": float(array.mean()), "median": float(np.median(array)),
            "p10": float(np.percentile(array, 10)), "p90": float(np.percentile(array, 90)),
            "std": float(array.std(ddof=1)) if len(array) > 1 else 0.0,
            "median_ci95_low": low, "median_ci95_high": high}


def aggregate_stages(calls: Sequence[StageCall], timed: Sequence[Sequence[StageCall]]
                     ) -> pd.DataFrame:
    """One row per stage call of ``calls``, with the statistics of the repeated metrics.

    Rows are matched across forwards by ``(name, call_index)``. A metric measured in the
    repeated forwards ``timed`` becomes the columns ``{metric}_{statistic}`` of
    :data:`STATISTICS` (the interval of the median is NaN for one repeat);
    a metric measured once (in the analysis pass) stays one column. Probes are rows too, with
    payload only.
    """
    by_name = {c.index: c.name for c in calls}
    repeated: dict[tuple[str, int], dict[str, list[float]]] = {}
    for forward in timed:
        for call in forward:
            slot = repeated.setdefault(call.key, {})
            for metric, value in call.metrics.items():
                slot.setdefault(metric, []).append(value)
    rows = []
    for call in calls:
        row = {
            "stage": call.name, "kind": call.kind,
            "parent": by_name.get(call.parent, "") if call.parent is not None else "",
            "depth": call.depth, "call_index": call.call_index, "order": call.index,
            "in_shapes": shapes_text(call.inputs), "in_bytes": payload_bytes(call.inputs),
            "out_shapes": shapes_text(call.outputs), "out_bytes": payload_bytes(call.outputs),
        }
        measured = repeated.get(call.key, {})
        row.update({k: v for k, v in call.metrics.items() if k not in measured})
        for metric, values in measured.items():
            for statistic, value in _statistics(values).items():
                row[f"{metric}_{statistic}"] = value
        rows.append(row)
    return pd.DataFrame(rows)


def repeat_table(timed: Sequence[Sequence[StageCall]]) -> pd.DataFrame:
    """Every repeated measurement as it was taken: one row per stage call and timed forward.

    Columns ``stage``, ``call_index``, ``repeat`` (0 for the first timed forward), then one
    column per repeated metric (``cpu_time_ms``, ``cuda_time_ms``, ...). This is what
    intervals and comparisons are computed from (``times.csv`` of a run).
    """
    rows = [{"stage": call.name, "call_index": call.call_index, "repeat": repeat,
             **call.metrics} for repeat, forward in enumerate(timed) for call in forward
            if call.metrics]
    return pd.DataFrame(rows, columns=None if rows else ["stage", "call_index", "repeat"])


def shown_calls(stages: pd.DataFrame, max_depth: int, kinds: Sequence[str] = ("stage",)
                ) -> pd.DataFrame:
    """The rows of ``kinds`` down to ``max_depth`` that a table of one row per stage name
    shows: a name's calls at its shallowest depth only. Its deeper calls (a stage re-entered
    inside itself, a module called at the top and again inside another stage) are inside a
    shallower call's figures, so the rows of each level still add up to their total; the
    stage table has every call."""
    rows = stages[stages["kind"].isin(list(kinds)) & (stages["depth"] <= max_depth)]
    shallowest = rows.groupby("stage", sort=False)["depth"].transform("min")
    return rows[rows["depth"] == shallowest]


def stage_time_sums(rows: pd.DataFrame, time: str, times: Optional[pd.DataFrame]
                    ) -> pd.DataFrame:
    """Per stage name of ``rows``: ``time_ms``, the median over the repeats of the ``time``
    column's metric summed over the stage's calls (from the raw repeats ``times``; without
    them, the calls' medians summed), and its interval ``ci_low``, ``ci_high``."""
    metric = time[:-len("_median")]
    grouped = rows.groupby("stage", sort=False)
    if times is None or metric not in times:
        # without the raw repeats: the medians summed, the interval only for single calls
        single = grouped.size() == 1
        return pd.DataFrame({"time_ms": grouped[time].sum(),
                             "ci_low": grouped[f"{time}_ci95_low"].sum().where(single),
                             "ci_high": grouped[f"{time}_ci95_high"].sum().where(single)}
                            if f"{time}_ci95_low" in rows else {"time_ms": grouped[time].sum()})
    # the calls of ``rows`` only: a stage re-entered inside itself, or called at another
    # depth too, has calls that ``rows`` leave out (they are inside their parents' times)
    key = ["stage", "call_index"] if "call_index" in times and "call_index" in rows \
        else ["stage"]
    chosen = pd.MultiIndex.from_frame(times[key]).isin(pd.MultiIndex.from_frame(rows[key]))
    per_repeat = times[chosen].groupby(["stage", "repeat"], sort=False)[metric].sum()
    table = {}
    for name, values in per_repeat.groupby(level="stage", sort=False):
        low, high = median_interval(values.to_numpy())
        table[name] = {"time_ms": float(np.median(values)), "ci_low": low, "ci_high": high}
    return pd.DataFrame.from_dict(table, orient="index", columns=["time_ms", "ci_low", "ci_high"]
                                  ).reindex(list(grouped.groups))
