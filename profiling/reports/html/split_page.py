"""The page of a split analysis folder (what ``python -m zoo.split`` writes): the bytes each
cut sends, the estimated latency of each cut against bandwidth (with a server run) and, after
``--execute``, the measured end-to-end latency of every executed cut over the shaped link
beside its estimate.

The executed chart draws :func:`~profiling.reports.split_figures.executed_curves`, as
``split_latency.png`` does: per encoding, each cut's estimate with its terms as a line and its
measured median as a point with the interval of the median as whiskers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Union

import pandas as pd

from ...errors import ProfilingError
from ..split_figures import drawn_latency_cuts, executed_curves, latency_ticks
from .formatting import hover_number, span
from .page import Page, Section, chart_label, chart_placeholder, escape
from .split_view import cut_bytes_figure, cut_colours, latency_lines_figure
from .tables import Column, Table, number_cell, text_cell

__all__ = ["CUTS_FILE", "EXECUTED_FILE", "LATENCY_FILE", "is_split_folder", "split_page",
           "executed_figure"]

CUTS_FILE, LATENCY_FILE, EXECUTED_FILE = "cuts.csv", "latency.csv", "executed.csv"
#: The cut kinds the bytes chart draws (``op`` cuts are every operator: cuts.csv has them).
_DRAWN_KINDS = ("input", "stage", "module", "output")


def is_split_folder(folder: Union[str, Path]) -> bool:
    """Whether ``folder`` holds a split analysis (its ``cuts.csv``)."""
    return (Path(folder) / CUTS_FILE).is_file()


def _read(folder: Path, name: str) -> Optional[pd.DataFrame]:
    path = folder / name
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path)
    except (ValueError, OSError) as error:
        raise ProfilingError(f"{path} cannot be read as a table ({error})") from error


def _bytes_cuts(cuts: pd.DataFrame) -> pd.DataFrame:
    """The cuts the bytes chart draws, in the columns :func:`cut_bytes_figure` reads."""
    drawn = cuts[cuts["kind"].isin(_DRAWN_KINDS)].reset_index(drop=True)
    return drawn.assign(key=drawn["cut"], depth=(drawn["kind"] == "module").astype(int),
                        last=drawn["kind"] == "output")


def executed_figure(executed: pd.DataFrame) -> Optional[Any]:
    """Per encoding (a panel each), each executed cut's estimate with its terms against the
    shaped bandwidth as a line, and its measured median as a point with the interval of the
    median as whiskers, in the line's colour; ``None`` without a shaped row."""
    curves = executed_curves(executed)
    if not curves:
        return None
    from plotly.subplots import make_subplots

    figure = make_subplots(rows=1, cols=len(curves), shared_yaxes=True,
                           subplot_titles=[escape(e) for e in curves])
    values = []
    for column, (encoding, lines) in enumerate(curves.items(), start=1):
        colours = cut_colours(len(lines))
        for colour, curve in zip(colours, lines):
            name = chart_label(curve.cut)
            figure.add_scatter(x=curve.bandwidth_mbps, y=curve.estimated_ms, mode="lines",
                               line={"color": colour}, name=name, legendgroup=name,
                               showlegend=column == 1, customdata=[curve.cut] * len(
                                   curve.bandwidth_mbps),
                               hovertemplate=f"{escape(curve.cut)}, {escape(encoding)}, "
                                             f"estimated: {hover_number('y')} ms at "
                                             f"{hover_number('x')} Mbit/s<extra></extra>",
                               row=1, col=column)
            figure.add_scatter(
                x=curve.bandwidth_mbps, y=curve.measured_ms, mode="markers",
                marker={"color": colour, "size": 7}, name=name, legendgroup=name,
                showlegend=False, error_y={"type": "data", "symmetric": False,
                                           "array": [h - m for h, m in zip(curve.high_ms,
                                                                           curve.measured_ms)],
                                           "arrayminus": [m - low for m, low in zip(
                                               curve.measured_ms, curve.low_ms)]},
                hovertemplate=f"{escape(curve.cut)}, {escape(encoding)}, measured median: "
                              f"{hover_number('y')} ms at {hover_number('x')} "
                              f"Mbit/s<extra></extra>", row=1, col=column)
            values += [*curve.estimated_ms, *curve.low_ms, *curve.high_ms]
        bandwidths = sorted({b for curve in lines for b in curve.bandwidth_mbps})
        figure.update_xaxes(type="log", title_text="bandwidth (Mbit/s)", tickvals=bandwidths,
                            ticktext=[f"{b:g}" for b in bandwidths], row=1, col=column)
    positive = [v for v in values if v > 0]
    ticks, texts = latency_ticks(min(positive), max(positive)) if positive else ([], [])
    figure.update_yaxes(type="log", tickvals=ticks, ticktext=texts)
    figure.update_yaxes(title_text="end-to-end latency", row=1, col=1)
    figure.update_layout(height=460, margin={"t": 40, "l": 80, "r": 10, "b": 50})
    return figure


def _executed_table(executed: pd.DataFrame) -> Table:
    table = Table("executed", [
        Column("cut", text=True), Column("encoding", text=True), Column("link", text=True),
        Column("sent MB", "the request's bytes, 1e6"),
        Column("measured ms", "end-to-end median"),
        Column("interval ms", "interval of the median"),
        Column("estimate ms", "the formula with its terms"),
        Column("error", "(estimate - measured) / measured"),
        Column("output", "the tail's output against the unsplit forward's", text=True)])
    for row in executed.to_dict("records"):
        exact = "bit-exact" if bool(row["output_exact"]) else \
            f"max |diff| {row['output_max_abs_diff']:.3g}"
        table.add([text_cell(row["cut"]), text_cell(row["encoding"]), text_cell(row["link"]),
                   number_cell(row["sent_bytes"], 1e-6), number_cell(row["measured_ms_median"]),
                   text_cell(span(row["measured_ms_low"], row["measured_ms_high"]), ""),
                   number_cell(row["estimated_terms_ms"]),
                   text_cell(f"{row['error_terms']:+.1%}", ""), text_cell(exact)],
                  key=str(row["cut"]), name=str(row["cut"]))
    return table


def _latency_section(cuts: pd.DataFrame, latency: pd.DataFrame, page: Page) -> Section:
    drawn = drawn_latency_cuts(cuts)
    shown = latency[latency["cut"].isin(drawn)].assign(key=lambda t: t["cut"])
    colours = dict(zip(drawn, cut_colours(len(drawn))))
    variants = [(f"{encoding} payload", table) for encoding, table in
                shown.groupby("encoding", sort=False)]
    page.charts["split-latency"] = latency_lines_figure(variants, colours, "end-to-end latency")
    side = str(latency["device_side"].iloc[0]) if "device_side" in latency else "measured"
    return Section("Estimated latency", chart_placeholder("split-latency"), anchor="latency",
                   note=f"device time up to the cut + RTT + bytes * 8 / bandwidth + server "
                        f"time after it (the device side {side}), for the cuts "
                        f"split_latency.png draws; a button per encoding.")


def _executed_section(executed: pd.DataFrame, page: Page) -> Section:
    figure = executed_figure(executed)
    body = ""
    if figure is not None:
        page.charts["split-executed"] = figure
        body = chart_placeholder("split-executed", 460)
    links = "; ".join(dict.fromkeys(str(link) for link in executed["link"]))
    error = executed["error_terms"].abs().median()
    return Section("Executed: measured beside the estimate", body + _executed_table(
        executed).render(), anchor="executed",
        note=f"Each cut run for real, the head and the tail in two processes (links: "
             f"{links}). Points: the measured end-to-end median, whiskers: the interval of the "
             f"median; lines: the estimate with its terms (codec, skip, framing, slow start). "
             f"Median |error| {error:.1%}; every output "
             f"{'bit-exact' if executed['output_exact'].all() else 'NOT bit-exact'}.")


def split_page(folder: Union[str, Path]) -> Page:
    """The page of the split analysis in ``folder`` (see the module's docstring).

    Raises:
        ProfilingError: a folder without ``cuts.csv``, or a table that cannot be read.
    """
    folder = Path(folder)
    cuts = _read(folder, CUTS_FILE)
    if cuts is None:
        raise ProfilingError(f"{folder} holds no {CUTS_FILE}: not a split analysis")
    latency, executed = _read(folder, LATENCY_FILE), _read(folder, EXECUTED_FILE)
    page = Page("split", f"stagezoo split: {folder.resolve().name}",
                facts=[("folder", str(folder.resolve())), ("candidate cuts", str(len(cuts)))])
    drawn = _bytes_cuts(cuts)
    page.charts["split-bytes"] = cut_bytes_figure(drawn)
    page.sections.append(Section(
        "Bytes per cut", chart_placeholder("split-bytes"), anchor="bytes",
        note="Raw bytes alive across each cut (log axis), module cuts indented; cuts.csv has "
             "every candidate and encoding."))
    if latency is not None and len(latency):
        page.sections.append(_latency_section(cuts, latency, page))
    if executed is not None and len(executed):
        page.sections.append(_executed_section(executed, page))
    return page
