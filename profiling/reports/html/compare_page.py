"""The page of a comparison: every run against the first, stage by stage, with the ratio of
times, its 95% interval and the significance test of ``python -m zoo.compare``
(:func:`profiling.reports.comparison.compare_runs`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from ...errors import ProfilingError
from ..comparison import (FORWARD, MIN_CHANGE, compare_runs, config_differences,
                          significance_rule)
from ..labels import printable
from ..record import Run, RunRecord, as_record
from .formatting import chart_labels, factor, hover_number, indent, span, stage_key, stage_label
from .header import IGNORED_OPTIONS, model_name, noise_verdict
from .page import Page, Section, chart_placeholder, escape
from .tables import Column, Table, number_cell, text_cell

__all__ = ["comparison_page", "check_comparable", "run_letters"]


def run_letters(count: int) -> list[str]:
    """``A``, ``B``, ... for the runs of a comparison (``A`` the reference)."""
    return [chr(ord("A") + i) if i < 26 else f"R{i}" for i in range(count)]


def _names(record: RunRecord) -> list[str]:
    rows = record.stages[record.stages["kind"] == "stage"] if "kind" in record.stages \
        else record.stages
    return list(dict.fromkeys(rows["stage"].astype(str)))


def check_comparable(records: Sequence[RunRecord]) -> None:
    """Refuse, in one line, runs that cannot be compared stage by stage: fewer than two,
    a failed one, or runs of different models (saying which stages match by name)."""
    if len(records) < 2:
        raise ProfilingError("a comparison needs at least two runs")
    for record in records:
        if record.status != "ok":
            raise ProfilingError(printable(f"{record.label} is a failed run ({record.error}); "
                                           f"compare finished runs"))
    reference = records[0]
    for record in records[1:]:
        first, second = model_name(reference.config), model_name(record.config)
        if first == second:
            continue
        common = [n for n in _names(reference) if n in set(_names(record))]
        shown = ", ".join(common[:8]) + (", ..." if len(common) > 8 else "")
        raise ProfilingError(printable(
            f"{reference.label} ({first}) and {record.label} ({second}) profile "
            f"different models, which cannot be compared stage by stage: "
            f"{len(common)} of {len(_names(reference))} stages of {first} match by name"
            + (f" ({shown})" if common else "")))


def _time_metric(table: pd.DataFrame) -> str:
    for metric in ("cuda_time_ms_median", "cpu_time_ms_median"):
        if f"{metric}_a" in table and table[f"{metric}_a"].notna().any():
            return metric
    return ""


def _ratio_figure(tables: dict[str, pd.DataFrame], metric: str) -> Any:
    """Per stage call, the time ratio of each run to A with its 95% interval; significant
    changes drawn filled and red-edged, the others hollow."""
    import plotly.graph_objects as go

    figure = go.Figure()
    labels = None
    for letter, table in tables.items():
        rows = table[table["present"] == "both"].dropna(subset=["time_ratio"])
        names = [FORWARD if s == FORWARD else stage_label(s, c)
                 for s, c in zip(rows["stage"], rows["call_index"])]
        labels = [label if name == FORWARD else indent(d) + label
                  for name, label, d in zip(names, chart_labels(names), rows["depth"])]
        significant_rows = rows["significant"].fillna(False).astype(bool).to_numpy()
        figure.add_scatter(
            x=rows["time_ratio"], y=labels, mode="markers", name=f"{letter} / A",
            customdata=[stage_key(s, c) for s, c in zip(rows["stage"], rows["call_index"])],
            error_x={"type": "data", "symmetric": False,
                     "array": rows["time_ratio_ci95_high"] - rows["time_ratio"],
                     "arrayminus": rows["time_ratio"] - rows["time_ratio_ci95_low"]},
            marker={"size": 9, "symbol": np.where(significant_rows, "diamond",
                                                  "circle-open").tolist(),
                    "line": {"width": 2, "color": np.where(significant_rows, "#b91c1c",
                                                           "#64748b").tolist()}},
            text=np.where(significant_rows, "significant", "within the noise").tolist(),
            hovertext=[escape(name) for name in names],
            hovertemplate="%{hovertext}<br>ratio " + hover_number("x") + "<br>%{text}<extra>" + letter
                          + "/A</extra>")
    count = max(len(labels or []), 1)
    figure.add_vline(x=1.0, line_dash="dot", line_color="#111")
    figure.update_layout(
        height=120 + 22 * count,  # a row per stage call, every name shown
        margin={"t": 30, "l": 10, "r": 10, "b": 50},
        xaxis={"type": "log", "title": {"text": f"time ratio to A ({metric}), 95% interval"}},
        yaxis={"autorange": "reversed", "automargin": True, "type": "category",
               "tickmode": "linear", "dtick": 1},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
    return figure


def _table(letter: str, table: pd.DataFrame, metric: str) -> Table:
    columns = [Column("stage", text=True), Column("present", text=True)]
    if metric:
        columns += [Column("time A ms"), Column(f"time {letter} ms"), Column("change %"),
                    Column("ratio 95% CI", text=True), Column("significant", text=True)]
    columns += [Column("out MB A"), Column(f"out MB {letter}")]
    if "flops_a" in table:
        columns += [Column("GFLOPs A"), Column(f"GFLOPs {letter}")]
    result = Table(f"compare-{letter}", columns)
    for row in table.to_dict("records"):
        forward = row["stage"] == FORWARD
        name = FORWARD if forward else stage_label(row["stage"], row["call_index"])
        depth = 0 if pd.isna(row.get("depth")) else int(row["depth"])
        cells = [text_cell(indent(depth) + name, "name"), text_cell(row["present"])]
        if metric:
            first, second = row.get(f"{metric}_a"), row.get(f"{metric}_b")
            change = (100 * (second / first - 1) if pd.notna(first) and pd.notna(second)
                      and first else None)
            low, high = row.get("time_ratio_ci95_low"), row.get("time_ratio_ci95_high")
            interval = span(low, high)
            marked = bool(row.get("significant")) if pd.notna(row.get("significant")) else False
            cells += [number_cell(first), number_cell(second),
                      number_cell(change, digits=2, css="significant" if marked else ""),
                      text_cell(interval), text_cell("yes *" if marked else "no",
                                                     "text significant" if marked else "text")]
        cells += [number_cell(row.get("out_bytes_a"), 1e-6),
                  number_cell(row.get("out_bytes_b"), 1e-6)]
        if "flops_a" in table:
            cells += [number_cell(row.get("flops_a"), 1e-9), number_cell(row.get("flops_b"), 1e-9)]
        result.add(cells, key=None if forward else stage_key(row["stage"], row["call_index"]),
                   name=name, depth=depth)
    return result


def _only_in_one(letter: str, table: pd.DataFrame) -> str:
    lines = []
    for side, who in (("a only", "A"), ("b only", letter)):
        names = [stage_label(s, c) for s, c in
                 zip(table.loc[table["present"] == side, "stage"],
                     table.loc[table["present"] == side, "call_index"])]
        if names:
            lines.append(f"<li>only in {who} ({len(names)}): {escape(', '.join(names))}</li>")
    return ('<ul class="compact">' + "".join(lines) + "</ul>") if lines else \
        f"<p>Every stage call is in both A and {letter}.</p>"


def comparison_page(runs: Sequence[Run], *, min_change: float = MIN_CHANGE,
                    loaded: bool = False) -> Page:
    """The page comparing ``runs[1:]`` each with ``runs[0]`` (A): records, results in memory
    or run folders (:func:`~profiling.reports.record.as_record`)."""
    records = [as_record(run) for run in runs]
    check_comparable(records)
    letters = run_letters(len(records))
    reference = records[0]
    facts = []
    for letter, record in zip(letters, records):
        facts.append((f"run {letter}", f"{record.label} ({model_name(record.config)})"))
    for letter, record in zip(letters[1:], records[1:]):
        changes = [f"{k}: {a} -> {b}" for k, (a, b) in
                   config_differences(reference.config, record.config).items()
                   if not k.startswith(IGNORED_OPTIONS)]
        facts.append((f"A -> {letter}", "; ".join(changes) or "same options"))
    facts += [(f"noise {letter}", noise_verdict(record.meta))
              for letter, record in zip(letters, records)]
    page = Page("comparison", f"stagezoo comparison: {model_name(reference.config)}, "
                              f"{len(records)} runs", facts=facts)
    tables = {letter: compare_runs(reference, record, min_change=min_change, loaded=loaded)
              for letter, record in zip(letters[1:], records[1:])}
    metric = _time_metric(next(iter(tables.values())))
    withheld = {t["withheld"].iloc[0] for t in tables.values()
                if "withheld" in t and len(t) and t["withheld"].iloc[0]}
    page.warnings = [f"significance withheld: {w}" for w in sorted(withheld)]
    if metric:
        strictest = max(tables.values(), key=lambda t: float(t["min_change"].iloc[0])
                        if "min_change" in t and len(t) else min_change)
        page.charts["ratios"] = _ratio_figure(tables, metric)
        page.sections.append(Section(
            "Time ratios", chart_placeholder("ratios"), anchor="ratios",
            note=f"Each stage call's median time in a run over its median time in A, with the "
                 f"95% interval of the ratio (percentile bootstrap over both runs' repeats). "
                 f"Filled red diamonds are significant (the test of python -m zoo.compare): "
                 f"{significance_rule(strictest, metric, min_change)}; hollow circles are "
                 f"within the noise."))
    for letter, table in tables.items():
        result = _table(letter, table, metric)
        depths = sorted({int(d) for d in table["depth"].dropna()})
        page.sections.append(Section(
            f"A against {letter}", _only_in_one(letter, table) + result.controls(depths)
            + result.render(), anchor=f"table-{letter}",
            note="Counts and bytes are exact; times are medians. MB: 1e6 bytes."))
    page.data = {"runs": [r.label for r in records]}
    return page
