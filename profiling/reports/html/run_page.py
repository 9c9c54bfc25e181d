"""The page of one run: header, stage icicle, payload, roofline, split view and stage table."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pandas as pd

from ...statistics.aggregate import time_column
from ...statistics.coverage import OTHER
from ...errors import ProfilingError
from ..record import Run, as_record
from ...trace import TRACE_FILE
from ..runs import forward_median
from ..view import OTHER_RULE, forward_order, run_view
from .formatting import indent, span, stage_label
from .header import model_name, run_facts, run_strip
from .page import Page, Section, chart_placeholder, escape
from .run_charts import icicle_figure, memory_column, payload_figure, roofline_figure
from .split_view import best_cut_rows, cut_bytes_figure, latency_figure, stage_cuts
from .stage_detail import stage_details
from .stage_tree import stage_calls
from .tables import Column, Table, number_cell, text_cell

__all__ = ["run_page", "stage_table"]


def _share(value: Any, total: Optional[float]) -> Any:
    if total is None or total <= 0 or value is None or pd.isna(value):
        return None
    return 100.0 * float(value) / total


def stage_table(stages: pd.DataFrame, forward_ms: Optional[float],
                total_flops: Optional[float], table_id: str = "stages",
                interval: str = "95% CI") -> Table:
    """Every stage call, probe and ``other`` row in forward order, each ``other`` row under
    its parent (:func:`~profiling.reports.view.forward_order`): time with its interval
    (``interval``: its label, :attr:`~profiling.reports.view.RunView.interval_label`) and
    share of the forward, FLOPs and their share, MACs, payload in and out, bytes alive across
    the cut, the memory peak and the output shapes (the columns the run has)."""
    time, memory = time_column(stages), memory_column(stages)
    rows = forward_order(stages)
    top = rows[(rows["kind"] == "stage") & (rows["depth"] == 0)]
    if time is not None and forward_ms is None:
        forward_ms = float(top[time].sum())
    if "flops" in rows and not total_flops:
        total_flops = float(pd.to_numeric(top["flops"], errors="coerce").sum())
    low, high = (f"{time}_ci95_low", f"{time}_ci95_high") if time else ("", "")
    spec = [(Column("stage", "indented by nesting depth", text=True), None),
            (Column("call"), "call_index"), (Column("depth"), "depth"),
            (Column("kind", text=True), None)]
    if time:
        spec += [(Column("time ms", "median over the repeats"), time),
                 (Column(f"{interval} ms", "interval of the median"), None),
                 (Column("% of forward", "median time / the forward's median"), None)]
    if "flops" in rows:
        spec += [(Column("GFLOPs", "1e9 floating-point operations"), "flops"),
                 (Column("% of FLOPs"), None), (Column("GMACs"), "macs")]
    spec += [(Column("in MB", "input payload, 1e6 bytes"), "in_bytes"),
             (Column("out MB", "output payload, 1e6 bytes"), "out_bytes")]
    if "cut_bytes" in rows:
        spec.append((Column("alive across cut MB"), "cut_bytes"))
    if memory:
        spec.append((Column("peak MB", memory), memory))
    spec.append((Column("output shapes", text=True), "out_shapes"))
    table = Table(table_id, [column for column, _ in spec])
    for row in rows.to_dict("records"):
        name = stage_label(row["stage"], row["call_index"])
        cells = [text_cell(indent(row["depth"]) + name, "name"),
                 number_cell(row["call_index"], digits=1), number_cell(row["depth"], digits=1),
                 text_cell(row["kind"])]
        if time:
            interval = span(row.get(low), row.get(high))
            cells += [number_cell(row[time]), text_cell(interval, ""),
                      number_cell(_share(row[time], forward_ms), digits=2)]
        if "flops" in rows:
            cells += [number_cell(row["flops"], 1e-9),
                      number_cell(_share(row["flops"], total_flops), digits=2),
                      number_cell(row.get("macs"), 1e-9)]
        cells += [number_cell(row.get("in_bytes"), 1e-6), number_cell(row.get("out_bytes"), 1e-6)]
        if "cut_bytes" in rows:
            cells.append(number_cell(row.get("cut_bytes"), 1e-6))
        if memory:
            cells.append(number_cell(row.get(memory)))
        cells.append(text_cell(row.get("out_shapes")))
        key = (f"{row['stage']}#{int(row['call_index'])}" if row["kind"] in ("stage", OTHER)
               else None)  # linked to the charts: the icicle draws the other rows too
        table.add(cells, key=key, name=name, depth=int(row["depth"]))
    return table


def _split_section(stages: pd.DataFrame, page: Page) -> Optional[Section]:
    cuts = stage_cuts(stages)
    if len(cuts) < 2:
        return None
    page.charts["split-bytes"] = cut_bytes_figure(cuts)
    body = chart_placeholder("split-bytes")
    latency = latency_figure(stages, cuts)
    if latency is not None:
        page.charts["split-latency"] = latency
        body += chart_placeholder("split-latency")
        table = Table("best-cuts", [Column("server speed-up", text=True),
                                    Column("bandwidth (Mbit/s)"), Column("best cut", text=True),
                                    Column("sends (MB)"), Column("latency (ms)")])
        for row in best_cut_rows(stages, cuts):
            table.add([text_cell(row["server speed-up"]),
                       number_cell(float(row["bandwidth (Mbit/s)"].replace(",", ""))),
                       text_cell(row["best cut"]), text_cell(row["sends (MB)"], ""),
                       text_cell(row["latency (ms)"], "")], key=row["key"], name=row["best cut"])
        body += "<h3>The best cut</h3>" + table.render()
    source = ("bytes alive across each cut (liveness collector)" if "cut_bytes" in stages
              else "the larger of the output of the stage call before each cut and the "
                   "input of the call that starts next (a lower bound: tensors that jump over "
                   "it are not counted; collectors=[...,liveness] counts them)")
    deepest = int(cuts["depth"].max())
    where = ("each top-level stage call" if deepest == 0 else
             f"each stage call down to depth {deepest} (the run's stages; nested calls "
             f"indented, each cut before its parent's)")
    return Section("Split view", body, anchor="split",
                   note=f"Cutting the forward after {where}: {source}. Latency = device time "
                        f"up to the cut + transfer + server time after it, with this run's "
                        f"times on both sides (the server's divided by the speed-up chosen "
                        f"above the chart; inside a top-level call, the share its nested "
                        f"calls ended by then took); ticks in ms below a second, s above; "
                        f"each line named at its right end. python -m zoo.split analyses "
                        f"every boundary, codecs and a real server run.")


def run_page(run: Run, *, defaults: Optional[Mapping[str, Any]] = None) -> Page:
    """The page of a finished run: a :class:`~profiling.reports.RunRecord`, a
    :class:`~profiling.runner.ProfileResult` in memory or a run folder
    (:func:`~profiling.reports.record.as_record`).

    ``defaults``: the default config of the run's model, to list the options that differ
    from it (else the run's command-line overrides are listed).
    """
    record = as_record(run)
    if record.status != "ok":
        raise ProfilingError(f"{record.label} is a failed run ({record.error}); there is "
                             f"nothing to report")
    view = run_view(record)
    stages, meta = view.rows, record.meta
    forward_ms = forward_median(meta)
    total_flops = (meta.get("totals") or {}).get("flops")
    banner = view.noise if view.noise.startswith("UNRELIABLE") else ""
    facts = [(label, value) for label, value in run_facts(record, defaults)
             if not (banner and label == "noise")]  # said once, in the banner
    traced = record.config.get("trace") or (
        record.directory is not None and (record.directory / TRACE_FILE).is_file())
    page = Page("run", f"stagezoo run: {model_name(record.config)}", facts=facts,
                strip=run_strip(view), banner=banner,
                links=[(f"{TRACE_FILE}: the forward's trace (Perfetto, chrome://tracing; "
                        f"beside this page in the run folder)", TRACE_FILE)] if traced else [])
    icicle = icicle_figure(stages, forward_ms, total_flops)
    if icicle is not None:
        page.charts["icicle"] = icicle
        page.sections.append(Section(
            "Stages", chart_placeholder("icicle", icicle.layout.height), anchor="icicle",
            note="Each block is a stage call, under the stage that contains it, and each grey "
                 "'other' block what its parent ran outside its stages; width: time (button: "
                 "FLOPs), which adds up roughly (the blocks are medians); colour: the block's "
                 "self value, what none of its children ran (pale: little, red: most). A "
                 "label too long for its block is hidden: hover for it. Click a block to "
                 "zoom into it (the bar above it leads back) and pin it in every chart."))
    page.charts["payload"] = payload_figure(stages)
    page.sections.append(Section(
        "Payload across stage boundaries",
        chart_placeholder("payload", page.charts["payload"].layout.height), anchor="payload",
        note="What each stage call outputs (MB: 1e6 bytes), in forward order, coloured by "
             "nesting depth; an x marks an output of 0 bytes."))
    ceilings, dtype = record.ceilings, record.roofline_dtype
    roofline = roofline_figure(stages, ceilings, dtype)
    if roofline is not None:
        page.charts["roofline"] = roofline
        page.sections.append(Section(
            "Roofline", chart_placeholder("roofline", 440), anchor="roofline",
            note=("Each stage call at its arithmetic intensity and achieved FLOP/s; hover "
                  "for its name. " + (f"Roof: {ceilings.name}, {dtype}." if ceilings else
                                      "No roof: the run recorded no device ceilings "
                                      "(roofline.ceilings=...); the dotted line is the best "
                                      "rate a stage achieved, which the device reaches at "
                                      "least."))))
    split = _split_section(stages, page)
    if split is not None:
        page.sections.append(split)
    table = stage_table(stages, forward_ms, total_flops, interval=view.interval_label)
    depths = sorted(int(d) for d in stages["depth"].unique())
    page.sections.append(Section(
        "Stage table", '<p>highlighted: <span id="highlighted">none (hover or click a '
        'stage)</span></p>' + table.controls(depths) + table.render(), anchor="table", packed=True,
        note=f"Every stage call and probe in forward order, each 'other' row under its parent; "
             f"intervals: {view.interval_label}, the order-statistics interval of the median, "
             f"its true coverage for the {view.repeats} repeats made; shares are of the whole "
             f"forward (time) and of all counted FLOPs. {OTHER_RULE[0].upper()}{OTHER_RULE[1:]}."
             + (f" {view.coverage_line.splitlines()[0][0].upper()}"
                f"{view.coverage_line.splitlines()[0][1:]}." if view.coverage_line else "")))
    notes = [str(n) for n in meta.get("notes") or []]
    if notes:
        page.sections.append(Section("Notes", '<ul class="compact">' + "".join(
            f"<li>{escape(n)}</li>" for n in notes) + "</ul>", anchor="notes"))
    calls = stage_calls(stages)
    page.data = {"stages": list(calls["key"]), "details": stage_details(view)}
    return page
