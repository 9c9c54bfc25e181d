"""The split view of a run's page: what a cut after each top-level stage would send, and the
end-to-end latency of each cut against the link's bandwidth, with the best cut.

The cuts are the input and the boundary after each top-level stage call. Their bytes are
those alive across the cut where the liveness collector ran (``cut_bytes``), else the larger
of the stage's output and the next stage's input (a lower bound: a tensor that jumps over the
next stage is not counted). The
latency is :func:`profiling.split.split_latency` with this run's times on the device
and, on the server, the same times divided by a speed-up (1, 4 or 16, picked with buttons);
the round-trip time is left out, being the same for every cut. ``python -m zoo.split`` does
the full analysis (every operator boundary, codecs, a real server run).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from ...statistics.aggregate import time_column
from ...split.latency import split_latency
from .formatting import chart_labels, hover_number, significant, stage_key, stage_label
from .page import chart_label, escape
from .run_charts import axis_scale

__all__ = ["top_level_cuts", "cut_colours", "cut_bytes_figure", "latency_figure",
           "best_cut_rows", "SPEED_UPS", "BANDWIDTHS_MBIT"]

#: The server speed-ups the latency chart offers (server time = device time / speed-up).
SPEED_UPS = (1, 4, 16)
#: The bandwidths of the latency chart (Mbit/s): 0.1 to 10 Gbit/s.
BANDWIDTHS_MBIT = tuple(float(b) for b in np.logspace(-1, 4, 26))
#: The bandwidths of the best-cut table.
TABLE_BANDWIDTHS_MBIT = (1.0, 10.0, 100.0, 1000.0)
INPUT_KEY = "(input)"


def top_level_cuts(stages: pd.DataFrame) -> pd.DataFrame:
    """The cut before the first top-level stage and after each top-level stage call, in the
    shape :func:`~profiling.split.split_latency` reads (``raw_bytes`` per cut) plus
    each cut's ``key`` (the stage call it follows)."""
    calls = stages[(stages["kind"] == "stage") & (stages["depth"] == 0)].sort_values("order")
    produced = pd.to_numeric(calls["out_bytes"], errors="coerce").to_numpy(float)
    needed = np.append(pd.to_numeric(calls["in_bytes"], errors="coerce").to_numpy(float)[1:],
                       0.0)
    crossing = pd.Series(np.fmax(produced, needed), index=calls.index)
    if "cut_bytes" in calls:
        crossing = pd.to_numeric(calls["cut_bytes"], errors="coerce").fillna(crossing)
    first_input = float(pd.to_numeric(calls["in_bytes"], errors="coerce").iloc[0]) \
        if len(calls) else 0.0
    rows = [{"cut": "input", "kind": "input", "depth": 0, "stage": "", "call_index": 0,
             "top_index": 0, "top_fraction": 0.0, "raw_bytes": first_input, "key": INPUT_KEY}]
    for index, (row, size) in enumerate(zip(calls.itertuples(), crossing)):
        rows.append({"cut": f"after {stage_label(row.stage, row.call_index)}", "kind": "stage",
                     "depth": 0, "stage": row.stage, "call_index": int(row.call_index),
                     "top_index": index, "top_fraction": 1.0,
                     "raw_bytes": float(size) if pd.notna(size) else np.nan,
                     "key": stage_key(row.stage, row.call_index)})
    return pd.DataFrame(rows)


def cut_colours(count: int) -> list[str]:
    """``count`` colours, every one different (hues evenly spaced around the wheel)."""
    return [f"hsl({round(360 * i / max(count, 1))},70%,{45 if i % 2 else 38}%)"
            for i in range(count)]


def cut_bytes_figure(cuts: pd.DataFrame) -> Any:
    """Bars of the bytes each cut sends, the fewest (excluding the input) marked."""
    import plotly.graph_objects as go

    sizes = cuts["raw_bytes"].to_numpy(float) / 1e6
    labels = chart_labels(list(cuts["cut"]))
    figure = go.Figure(go.Bar(x=labels, y=sizes, customdata=cuts["key"],
                              marker_color=cut_colours(len(cuts)),
                              hovertext=[escape(cut) for cut in cuts["cut"]],
                              hovertemplate="%{hovertext}<br>" + hover_number("y")
                                            + " MB<extra></extra>"))
    inner = cuts.index[1:] if len(cuts) > 1 else cuts.index
    fewest = cuts.loc[inner, "raw_bytes"].astype(float).idxmin()
    if pd.notna(fewest):
        last = fewest == cuts.index[-1]  # after the last stage: the network's output
        scale = axis_scale(sizes)
        figure.add_annotation(x=labels[fewest], y=np.log10(sizes[fewest]) if scale == "log"
                              and sizes[fewest] > 0 else sizes[fewest],  # log axes: log10
                              text="fewest bytes: the output (nothing split)" if last
                              else "fewest bytes", showarrow=True, arrowhead=2, ay=-30)
    figure.update_layout(height=360, margin={"t": 30, "l": 70, "r": 10, "b": 10},
                         yaxis={"title": {"text": "MB sent (1e6 bytes)"},
                                "type": axis_scale(sizes)},  # bytes span 1000x
                         xaxis={"type": "category", "tickangle": -45, "automargin": True},
                         showlegend=False)
    return figure


def _latency(stages: pd.DataFrame, cuts: pd.DataFrame, speed_up: float,
             bandwidths: tuple[float, ...]) -> pd.DataFrame:
    server = stages.copy()
    for column in [c for c in server.columns if c.startswith(("cpu_time_ms", "cuda_time_ms"))]:
        server[column] = pd.to_numeric(server[column], errors="coerce") / speed_up
    known = cuts[cuts["raw_bytes"].notna()]
    latency = split_latency(known, stages, server, bandwidths, rtt_ms=0.0)
    return latency.merge(known[["cut", "key"]], on="cut")


def latency_figure(stages: pd.DataFrame, cuts: pd.DataFrame) -> Optional[Any]:
    """End-to-end latency of each cut against bandwidth, one line per cut and a grey band for
    the best, for each server speed-up of :data:`SPEED_UPS` (buttons); ``None`` without
    times."""
    if time_column(stages) is None or cuts["raw_bytes"].notna().sum() == 0:
        return None
    import plotly.graph_objects as go

    colours = dict(zip(cuts["cut"], cut_colours(len(cuts))))
    figure = go.Figure()
    visibility = []
    latencies = [_latency(stages, cuts, speed_up, BANDWIDTHS_MBIT) for speed_up in SPEED_UPS]
    seconds = max(float(latency["latency_ms"].max()) for latency in latencies) > 10_000
    unit, scale = ("s", 1e-3) if seconds else ("ms", 1.0)
    for number, latency in enumerate(latencies):
        best = latency.groupby("bandwidth_mbit")["latency_ms"].min() * scale
        figure.add_scatter(x=best.index, y=best.to_numpy(), mode="lines", hoverinfo="skip",
                           line={"color": "rgba(60,60,60,0.25)", "width": 12},
                           name="best cut", visible=number == 0)
        for cut, group in latency.groupby("cut", sort=False):
            ends = [chart_label(cut)] + [""] * (len(group) - 1)  # named where lines part
            figure.add_scatter(x=group["bandwidth_mbit"], y=group["latency_ms"] * scale,
                               mode="lines+markers+text", name=chart_label(cut), text=ends,
                               textposition="top right", textfont={"size": 10},
                               visible=number == 0, line={"color": colours[cut]},
                               marker={"size": 4}, customdata=group["key"],
                               hovertemplate=f"{escape(cut)}<br>{hover_number('x')} Mbit/s: "
                                             f"{hover_number('y')} {unit}<extra></extra>")
        visibility.append(1 + latency["cut"].nunique())
    total = sum(visibility)
    buttons = []
    for number, speed_up in enumerate(SPEED_UPS):
        start = sum(visibility[:number])
        shown = [start <= i < start + visibility[number] for i in range(total)]
        buttons.append({"label": f"server {speed_up}\u00d7 faster" if speed_up != 1
                        else "server as fast", "method": "restyle",
                        "args": [{"visible": shown}]})
    figure.update_layout(
        height=440, margin={"t": 50, "l": 70, "r": 10, "b": 50},
        xaxis={"type": "log", "title": {"text": "bandwidth (Mbit/s)"}},
        yaxis={"type": "log", "title": {"text": f"end-to-end latency ({unit}, without the "
                                                f"round trip)"}, "dtick": 1},
        updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons, "x": 0,
                      "y": 1.18, "xanchor": "left", "yanchor": "top"}])
    return figure


def best_cut_rows(stages: pd.DataFrame, cuts: pd.DataFrame) -> list[dict[str, str]]:
    """The best cut at a few bandwidths for each server speed-up, as table rows."""
    if time_column(stages) is None or cuts["raw_bytes"].notna().sum() == 0:
        return []
    rows = []
    for speed_up in SPEED_UPS:
        latency = _latency(stages, cuts, speed_up, TABLE_BANDWIDTHS_MBIT)
        best = latency.loc[latency.groupby("bandwidth_mbit")["latency_ms"].idxmin()]
        for row in best.itertuples():
            rows.append({"server speed-up": f"{speed_up}\u00d7",
                         "bandwidth (Mbit/s)": significant(row.bandwidth_mbit),
                         "best cut": row.cut, "sends (MB)": significant(row.bytes / 1e6),
                         "latency (ms)": significant(row.latency_ms), "key": row.key})
    return rows
