"""The page of a comparison: every run against the first, stage by stage, with the ratio of
times, its 95% interval and the significance test of ``python -m zoo.compare``
(:func:`profiling.reports.comparison.compare_runs`)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from ...errors import ProfilingError
from ..comparison import FORWARD, MIN_CHANGE, compare_runs, executed_as, measured_differences
from ..comparison_text import significance_rule
from ..labels import printable
from ..numbers import log_ticks
from ..record import Run, RunRecord, as_record
from .formatting import (chart_labels, factor, hover_number, indent, significant, span,
                         stage_key, stage_label)
from .header import model_name, noise_verdict
from .page import Page, Section, chart_placeholder, escape
from .tables import Cell, Column, Table, number_cell, text_cell

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


def _time_words(metric: str) -> str:
    """``median CPU time`` for ``cpu_time_ms_median``: a column as an axis names it."""
    return f"median {metric.split('_')[0].upper()} time"


def _ratio_ticks(drawn: list[pd.Series]) -> dict[str, list]:
    """The ratio axis's ticks over every interval drawn, written in full (``0.5``, not a bare
    ``5`` between two decades as plotly writes them)."""
    values = pd.concat(drawn).to_numpy(dtype=float) if drawn else np.array([])
    values = values[np.isfinite(values) & (values > 0)]
    ticks, texts = log_ticks(float(values.min()), float(values.max())) if len(values) else ([], [])
    return {"tickvals": ticks, "ticktext": texts} if ticks else {}


def _ratio_figure(tables: dict[str, pd.DataFrame], metric: str,
                  flops_ratios: Optional[dict[str, float]] = None) -> Any:
    """Per stage call, the time ratio of each run to A with its 95% interval; significant
    changes drawn filled and red-edged, the others hollow; each run's ratio of all counted
    FLOPs to A's as a dashed reference line (``flops_ratios``, by letter)."""
    import plotly.graph_objects as go

    figure = go.Figure()
    labels, drawn = None, []
    for letter, table in tables.items():
        rows = table[table["present"] == "both"].dropna(subset=["time_ratio"])
        drawn += [rows[column] for column in ("time_ratio_ci95_low", "time_ratio_ci95_high")]
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
            hovertemplate="%{hovertext}<br>ratio " + hover_number("x")
                          + "<br>%{text}<extra>" + letter
                          + "/A</extra>")
    count = max(len(labels or []), 1)
    figure.add_vline(x=1.0, line_dash="dot", line_color="#111")
    for letter, ratio in (flops_ratios or {}).items():  # a line in the legend, not a label
        figure.add_scatter(x=[ratio, ratio], y=[labels[0], labels[-1]] if labels else [],
                           mode="lines", line={"dash": "dash", "color": "#7c3aed"},
                           hoverinfo="skip", name=f"all FLOPs {letter}/A: {factor_text(ratio)}")
    figure.update_layout(
        height=120 + 22 * count,  # a row per stage call, every name shown
        xaxis={"type": "log", "title": {"text": f"{_time_words(metric)}, run / A (log), with "
                                                f"its 95% interval"},
               **_ratio_ticks(drawn)},
        yaxis={"range": [count - 0.5, -0.5], "automargin": True, "type": "category",
               "tickmode": "linear", "dtick": 1},
        **_axis_in_view(count, {"orientation": "h", "y": 1.02, "yanchor": "bottom"}))
    return figure


#: From this many rows a chart of rows is taller than a screen: its x axis goes on top, where
#: a reader sees it with the first rows.
TALL_ROWS = 25


def _axis_in_view(rows: int, legend: dict) -> dict:
    """The margins, the x axis's side and the legend of a chart of ``rows`` rows: for a tall
    one the x axis on top (under the chart's tool bar) and the legend under the chart, else
    the axis at the foot and ``legend``."""
    if rows < TALL_ROWS:
        return {"margin": {"t": 30, "l": 10, "r": 10, "b": 50}, "legend": legend}
    return {"margin": {"t": 90, "l": 10, "r": 10, "b": 40}, "xaxis_side": "top",
            "legend": {"orientation": "h", "y": 0, "yanchor": "top", "x": 0}}


def factor_text(ratio: float) -> str:
    """A ratio as a label writes it: ``0.812x``, ``4.00x``."""
    return f"{significant(ratio)}x"


#: The most stage calls the change chart shows (the largest changes; the table has them all).
CHANGES_SHOWN = 40


def _change_figure(tables: dict[str, pd.DataFrame], metric: str) -> Any:
    """Per stage call, how many ms each run's median time moved from A's, the
    :data:`CHANGES_SHOWN` largest changes on top (the whole forward left out: it would dwarf
    every stage); red where slower, green where faster, solid where significant."""
    import plotly.graph_objects as go

    figure = go.Figure()
    count = 1
    for letter, table in tables.items():
        rows = table[(table["present"] == "both") & (table["stage"] != FORWARD)].copy()
        rows["change"] = rows[f"{metric}_b"] - rows[f"{metric}_a"]
        rows = rows.dropna(subset=["change"])
        rows = rows.reindex(rows["change"].abs().sort_values(ascending=False).index)
        rows = rows.head(CHANGES_SHOWN)
        names = [stage_label(s, c) for s, c in zip(rows["stage"], rows["call_index"])]
        marked = rows["significant"].fillna(False).astype(bool).to_numpy()
        colours = np.where(rows["change"] > 0, "#b91c1c", "#15803d")
        figure.add_bar(
            x=rows["change"], y=chart_labels(names), orientation="h", name=f"{letter} \u2212 A",
            customdata=[stage_key(s, c) for s, c in zip(rows["stage"], rows["call_index"])],
            marker={"color": colours.tolist(), "opacity": np.where(marked, 1.0, 0.45).tolist()},
            hovertext=[escape(name) for name in names],
            hovertemplate="%{hovertext}<br>" + hover_number("x") + " ms<extra>" + letter
                          + " \u2212 A</extra>")
        count = max(count, len(rows))
    figure.update_layout(
        height=120 + 22 * count, barmode="group", showlegend=len(tables) > 1,
        xaxis={"title": {"text": f"change of the {_time_words(metric)} (ms; below 0: "
                                 f"faster)"}, "zeroline": True},
        yaxis={"autorange": "reversed", "automargin": True, "type": "category",
               "tickmode": "linear", "dtick": 1},
        **_axis_in_view(count, {}))
    return figure


def _flops_ratios(records: Sequence[RunRecord], letters: Sequence[str]) -> dict[str, float]:
    """Each run's counted FLOPs over A's, where both were counted."""
    def flops(record: RunRecord) -> Optional[float]:
        return (record.meta.get("totals") or {}).get("flops")

    reference = flops(records[0])
    return {letter: flops(record) / reference for letter, record in zip(letters[1:], records[1:])
            if reference and flops(record)}


def _table(letter: str, table: pd.DataFrame, metric: str) -> Table:
    columns = [Column("stage", text=True), Column("present", text=True)]
    if metric:
        columns += [Column("time A ms"), Column(f"time {letter} ms"),
                    Column("change", "from A, in percent; from 10x either way as a factor"),
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
            ratio = second / first if pd.notna(first) and pd.notna(second) and first else None
            low, high = row.get("time_ratio_ci95_low"), row.get("time_ratio_ci95_high")
            interval = span(low, high)
            marked = bool(row.get("significant")) if pd.notna(row.get("significant")) else False
            cells += [number_cell(first), number_cell(second),
                      Cell(factor(ratio), None if ratio is None else ratio,
                           "significant" if marked else ""),
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


def _unreliable_note(records: Sequence[RunRecord], withheld: bool) -> str:
    """What a mark still means when every run's timings are unreliable ("" otherwise)."""
    if not all(noise_verdict(r.meta).startswith("UNRELIABLE") for r in records):
        return ""
    if withheld:
        return (" Every run is unreliable and a machine was loaded, so no change is marked; "
                "the intervals still show how far each run's own repeats spread.")
    return (" Every run is unreliable: a mark still means that the runs' repeats differ by "
            "more than their own spread and the threshold (raised to the larger forward CV), "
            "but not that the change will repeat, since what disturbed the machine may have "
            "changed between the runs, which no repeat sees.")


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
        facts.append((f"run {letter}", f"{record.label} ({model_name(record.config)}, "
                                       f"{executed_as(record.meta)})"))
    for letter, record in zip(letters[1:], records[1:]):
        changes = [f"{k}: {a} -> {b}" for k, (a, b) in
                   measured_differences(reference.config, record.config).items()]
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
        flops_ratios = _flops_ratios(records, letters)
        page.charts["changes"] = _change_figure(tables, metric)
        page.charts["ratios"] = _ratio_figure(tables, metric, flops_ratios)
        page.sections.append(Section(
            "Time changes and ratios", '<div class="row">'
            + chart_placeholder("changes", page.charts["changes"].layout.height)
            + chart_placeholder("ratios", page.charts["ratios"].layout.height) + "</div>",
            anchor="ratios",
            note=f"Left: how many ms each stage call's median time moved from A, the "
                 f"{CHANGES_SHOWN} largest first (solid: significant). Right: its median time "
                 f"in a run over its median time in A, in forward order, with the 95% "
                 f"interval of the ratio "
                 f"(percentile bootstrap over both runs' repeats)"
                 + (", and the ratio of all counted FLOPs as a dashed line" if flops_ratios
                    else "") + ". "
                 f"Filled red diamonds are significant (the test of python -m zoo.compare): "
                 f"{significance_rule(strictest, metric, min_change)}; hollow circles are "
                 f"within the noise." + _unreliable_note(records, bool(withheld))))
    for letter, table in tables.items():
        result = _table(letter, table, metric)
        depths = sorted({int(d) for d in table["depth"].dropna()})
        page.sections.append(Section(
            f"A against {letter}", _only_in_one(letter, table) + result.controls(depths)
            + result.render(), anchor=f"table-{letter}", packed=True,
            note="Counts and bytes are exact; times are medians. MB: 1e6 bytes."))
    page.data = {"runs": [r.label for r in records]}
    return page
