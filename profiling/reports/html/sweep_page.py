"""The page of a sweep: one row per job (options, status, headline figures; a failed job's
one-line reason), each job's top-level stages side by side, and any metric against any swept
option."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import pandas as pd

from ...statistics.aggregate import time_column
from ...statistics.intervals import interval_label, median_interval
from ...errors import ProfilingError
from ..labels import printable
from ..record import RunRecord, read_run
from ..runs import _option_values, find_runs, forward_median, noise_summary_cell, swept_options
from .formatting import chart_labels, hover_number, is_missing, stage_key
from .header import model_name
from .page import Page, Section, chart_label, chart_placeholder, escape
from .run_charts import memory_column
from .tables import Column, Table, number_cell, text_cell

__all__ = ["sweep_page", "read_sweep", "HEADLINES"]

#: The headline figures of a job: label -> how to get it from its record.
HEADLINES = ("forward ms", "GFLOPs", "parameters (M)", "peak MB", "output MB")


def read_sweep(folder: Union[str, Path]) -> list[RunRecord]:
    """Every job of the sweep in ``folder`` (finished or failed), in natural order.

    Raises:
        ProfilingError: when ``folder`` holds no job, or no finished one.
    """
    folder = Path(folder)
    directories = find_runs(folder) if folder.is_dir() else []
    if not directories:
        raise ProfilingError(f"{folder} is neither a run nor a sweep: no meta.json with "
                             f"stages.csv, nor error.json, at or below it")
    records = [read_run(d) for d in directories]
    if not any(r.status == "ok" for r in records):
        raise ProfilingError(f"the sweep in {folder} has no finished job ({len(records)} "
                             f"failed; their errors are in each job's error.json)")
    return records


def _headlines(record: RunRecord) -> dict[str, Any]:
    if record.status != "ok":
        return dict.fromkeys(HEADLINES)
    stages, meta = record.stages, record.meta
    top = stages[(stages["kind"] == "stage") & (stages["depth"] == 0)]
    memory = memory_column(stages)
    flops = (meta.get("totals") or {}).get("flops")
    last = top.sort_values("order")["out_bytes"].iloc[-1] if len(top) else None
    return {"forward ms": forward_median(meta),
            "GFLOPs": flops / 1e9 if flops is not None else None,
            "parameters (M)": meta["parameters"] / 1e6 if meta.get("parameters") else None,
            "peak MB": float(stages[memory].max()) if memory else None,
            "output MB": float(last) / 1e6 if last is not None else None}


def _interval(record: RunRecord) -> Optional[list[float]]:
    """The interval of the job's forward median (ms), drawn as its whisker."""
    forward = [float(v) for v in record.meta.get("forward_ms") or []] \
        if record.status == "ok" else []
    low, high = median_interval(forward) if len(forward) > 1 else (math.nan, math.nan)
    return None if math.isnan(low) else [low, high]


def _interval_labels(records: Sequence[RunRecord]) -> str:
    """The labels of the finished jobs' intervals (``75% CI``), each once."""
    labels = [interval_label(len(r.meta.get("forward_ms") or []))[0] for r in records
              if r.status == "ok" and len(r.meta.get("forward_ms") or []) > 1]
    return ", ".join(dict.fromkeys(labels)) or "no job timed twice"


def _job_label(values: dict[str, Any], options: Sequence[str], job: str) -> str:
    """A job as its swept values name it (``input.size=[64,128]``), else its folder."""
    shown = [f"{option}={values.get(option)}" for option in options if option != "job"]
    return ", ".join(shown) or job


def _job_name(record: RunRecord, folder: Path) -> str:
    try:
        return str(record.directory.resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(record.directory)


def _stacked_figure(records: Sequence[RunRecord], jobs: Sequence[str]) -> Any:
    """A stacked bar per finished job of its top-level stages (time, else FLOPs; buttons
    switch to FLOPs and output payload)."""
    import plotly.graph_objects as go

    finished = [(job, r) for job, r in zip(jobs, records) if r.status == "ok"]
    metrics = []
    for label, pick, scale in (("time (ms)", time_column, 1.0),
                               ("GFLOPs", lambda s: "flops" if "flops" in s else None, 1e-9),
                               ("output MB", lambda s: "out_bytes", 1e-6)):
        if any(pick(r.stages) for _, r in finished):
            metrics.append((label, pick, scale))
    names = list(dict.fromkeys(
        s for _, r in finished for s in r.stages.loc[(r.stages["kind"] == "stage")
                                                      & (r.stages["depth"] == 0), "stage"]))
    figure = go.Figure()
    versions = []
    for label, pick, scale in metrics:
        values = []
        for name in names:
            column = []
            for _, record in finished:
                metric = pick(record.stages)
                rows = record.stages[(record.stages["stage"] == name)
                                     & (record.stages["depth"] == 0)]
                column.append(float(pd.to_numeric(rows[metric], errors="coerce").sum()) * scale
                              if metric and len(rows) else None)
            values.append(column)
        versions.append((label, values))
    shown_jobs = chart_labels([job for job, _ in finished])
    for index, name in enumerate(names):
        figure.add_bar(x=shown_jobs, y=versions[0][1][index], name=chart_label(name),
                       customdata=[stage_key(name, 0)] * len(finished),
                       hovertemplate=f"{escape(name)}<br>%{{x}}: {hover_number('y')}"
                                     f"<extra></extra>")
    buttons = [{"label": label, "method": "update",
                "args": [{"y": values}, {"yaxis.title.text": label}]}
               for label, values in versions]
    figure.update_layout(
        barmode="stack", height=460, margin={"t": 60, "l": 70, "r": 10, "b": 10},
        yaxis={"title": {"text": versions[0][0] if versions else ""}},
        xaxis={"type": "category", "tickangle": -30, "automargin": True},
        updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons, "x": 0,
                      "y": 1.15, "xanchor": "left", "yanchor": "top"}])
    return figure


def _picker(options: Sequence[str], rows: list[dict[str, Any]]) -> str:
    metrics = [h for h in HEADLINES if any(not is_missing(r.get(h)) for r in rows)]
    option_list = "".join(f'<option value="{escape(o)}">{escape(o)}</option>' for o in options)
    metric_list = "".join(f'<option value="{escape(m)}">{escape(m)}</option>' for m in metrics)
    return (f'<div class="controls"><label>metric <select id="sweep-y">{metric_list}</select>'
            f'</label><label>against <select id="sweep-x">{option_list}</select></label></div>'
            f"{chart_placeholder('sweep-metric', 420)}")


def sweep_page(folder: Union[str, Path]) -> Page:
    """The page of the sweep whose jobs are at or below ``folder``: the swept options are
    those whose values differ between the jobs, and each job is named by its values."""
    folder = Path(folder)
    records = read_sweep(folder)
    options = swept_options(records) or ["job"]
    jobs = [_job_name(r, folder) for r in records]
    failed = sum(r.status != "ok" for r in records)
    models = sorted({model_name(r.config) for r in records if r.config})
    page = Page("sweep", f"stagezoo sweep: {', '.join(models) or folder.name}", facts=[
        ("sweep", str(folder)), ("jobs", f"{len(records)} ({failed} failed)"),
        ("swept options", ", ".join(options) if options != ["job"] else "none differ")])
    table = Table("jobs", [Column("job", text=True)]
                  + [Column(o, text=True) for o in options if o != "job"]
                  + [Column("status", text=True, tooltip="ok ! : finished, timings unreliable"),
                     Column("noise", text=True, tooltip="the forward's coefficient of variation"
                                                        " and whether the machine was loaded")]
                  + [Column(h) for h in HEADLINES] + [Column("reason", text=True)])
    rows, labels = [], []
    for job, record in zip(jobs, records):
        values = _option_values(record, options) if options != ["job"] else {"job": job}
        labels.append(_job_label(values, options, job))
        headline = _headlines(record)
        noise = noise_summary_cell(record.meta) if record.status == "ok" else ""
        status = f"{record.status} !" if noise.startswith("UNRELIABLE") else record.status
        rows.append({"job": labels[-1], **{o: values.get(o) for o in options if o != "job"},
                     **headline, "whisker": _interval(record)})
        table.add([text_cell(job, "name")]
                  + [text_cell(values.get(o)) for o in options if o != "job"]
                  + [text_cell(status, "text significant" if status.endswith("!") else "text"),
                     text_cell(noise or "-")]
                  + [number_cell(headline[h]) for h in HEADLINES]
                  + [text_cell(record.error or "")], name=job,
                  css="failed" if record.status != "ok" else "")
    page.sections.append(Section(
        "Jobs", table.controls(names="job") + table.render(), anchor="jobs", packed=True,
        note="One row per job with its swept options, status and headline figures: the "
             "forward's median time, all counted GFLOPs, parameters, the largest memory peak "
             "and the last top-level stage's output. 'ok !' is a finished job whose timings "
             "are unreliable (a loaded machine, or forward times that vary by more than 5%: "
             "the noise column says which). A failed job shows its one-line reason."))
    page.charts["stacked"] = _stacked_figure(records, labels)
    page.sections.append(Section(
        "Top-level stages per job", chart_placeholder("stacked", 460), anchor="stacked",
        note="Each finished job's top-level stages stacked (buttons: time, FLOPs, output "
             "payload); hover a stage to see it across the jobs."))
    page.sections.append(Section(
        "A metric against a swept option", _picker(options, rows), anchor="metric",
        note=f"Pick any headline figure and any swept option; the forward's whiskers are the "
             f"interval of its median ({_interval_labels(records)}: its true coverage for "
             f"the repeats made)."))
    page.data = {"sweep_plot": _plot_data(rows, options)}
    return page


def _plot_data(rows: list[dict[str, Any]], options: Sequence[str]) -> dict[str, Any]:
    """What the page's script plots a metric against an option from: per job its values and
    ``shown``, each value as the chart writes it; ``labels``, each option and metric as the
    chart writes it. Keyed by the names the page's pickers give back (printable)."""
    def value(v: Any) -> Any:
        return None if is_missing(v) else (v if isinstance(v, (int, float)) else str(v))

    return {"rows": [{**{printable(k): value(v) for k, v in row.items() if k != "whisker"},
                      "whisker": row.get("whisker"),
                      "shown": {printable(k): escape("-" if value(v) is None else value(v))
                                for k, v in row.items() if k != "whisker"}}
                     for row in rows],
            "options": [printable(o) for o in options],
            "labels": {printable(k): escape(k) for k in [*options, *HEADLINES]}}
