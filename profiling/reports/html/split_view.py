"""The split view of a run's page: what a cut after each stage call would send, and the
end-to-end latency of each cut against the link's bandwidth, with the best cut.

The cuts are the input and the boundary after each stage call at every depth the run has
(``model.stage_depth``, ``stage_paths``), in the order the calls end (a nested call's cut
before its parent's). Their bytes are those alive across the cut where the liveness collector
ran (``cut_bytes``), else the larger of the call's output and the input of the call that
starts next (a lower bound: a tensor that jumps over that call is not counted). The
latency is :func:`profiling.split.split_latency` with this run's times on the device
and, on the server, the same times divided by a speed-up (1, 4 or 16, picked with buttons);
the round-trip time is left out, being the same for every cut. ``python -m zoo.split`` does
the full analysis (every operator boundary, codecs, a real server run).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from ...statistics.aggregate import time_column
from ...split.latency import split_latency
from ..numbers import log_ticks
from ..split_figures import label_heights, latency_ticks
from .formatting import chart_labels, hover_number, indent, significant, stage_label
from .page import chart_label, escape
from .stage_tree import stage_calls

__all__ = ["stage_cuts", "cut_colours", "cut_bytes_figure", "latency_figure", "fewest_bytes",
           "latency_lines_figure", "best_cut_rows", "SPEED_UPS", "BANDWIDTHS_MBIT"]

#: The server speed-ups the latency chart offers (server time = device time / speed-up).
SPEED_UPS = (1, 4, 16)
#: The bandwidths of the latency chart (Mbit/s): 0.1 to 10 Gbit/s.
BANDWIDTHS_MBIT = tuple(float(b) for b in np.logspace(-1, 4, 26))
#: The bandwidths of the best-cut table.
TABLE_BANDWIDTHS_MBIT = (1.0, 10.0, 100.0, 1000.0)
INPUT_KEY = "(input)"


def _ends(depths: list[int]) -> tuple[list[int], list[int]]:
    """For calls in the order they started (their nesting ``depths``): the order they end
    (children before their parent), and for each the call that starts after it and all of
    its children (-1 for none)."""
    ending, open_calls, after = [], [], [-1] * len(depths)
    for index, depth in enumerate(depths):
        while open_calls and depths[open_calls[-1]] >= depth:
            after[open_calls[-1]] = index
            ending.append(open_calls.pop())
        open_calls.append(index)
    ending += reversed(open_calls)
    return ending, after


def _done_shares(depths: list[int], times: np.ndarray, ending: list[int]) -> list[float]:
    """For each call in ``ending`` order: the share of its top-level call's time done when it
    ends, as the calls that ended by then add up (each counted once: a call's time replaces
    its children's)."""
    ancestors = np.maximum.accumulate([i if d == 0 else 0 for i, d in enumerate(depths)])
    done: dict[int, float] = {}  # the time ended at each depth inside the open top-level call
    shares = []
    for index in ending:
        depth = depths[index]
        done = {d: t for d, t in done.items() if d <= depth}
        if depth == 0:
            shares.append(1.0)
            continue
        done[depth] = done.get(depth, 0.0) + float(np.nan_to_num(times[index]))
        total = times[ancestors[index]]
        shares.append(min(sum(done.values()) / total, 1.0) if total > 0 else 0.0)
    return shares


def stage_cuts(stages: pd.DataFrame) -> pd.DataFrame:
    """The cut before the first stage call and after each stage call at every depth, in the
    order the calls end, in the shape :func:`~profiling.split.split_latency` reads
    (``raw_bytes``, ``top_index`` and ``top_fraction`` per cut) plus each cut's ``key`` (the
    stage call it follows) and ``last`` (the cut at the end of the forward: after the last
    top-level call, where nothing is split)."""
    calls = stage_calls(stages).reset_index(drop=True)
    depths = [int(d) for d in calls["depth"]]
    ending, after = _ends(depths)
    produced = pd.to_numeric(calls["out_bytes"], errors="coerce").to_numpy(float)
    inputs = pd.to_numeric(calls["in_bytes"], errors="coerce").to_numpy(float)
    crossing = np.fmax(produced, np.array([inputs[i] if i >= 0 else 0.0 for i in after]))
    if "cut_bytes" in calls:
        crossing = pd.to_numeric(calls["cut_bytes"], errors="coerce").fillna(
            pd.Series(crossing)).to_numpy(float)
    time = time_column(calls)
    times = (pd.to_numeric(calls[time], errors="coerce").to_numpy(float) if time
             else np.full(len(calls), np.nan))
    shares = _done_shares(depths, times, ending)
    tops = np.cumsum([d == 0 for d in depths]) - 1
    rows = [{"cut": "input", "kind": "input", "depth": 0, "stage": "", "call_index": 0,
             "top_index": 0, "top_fraction": 0.0,
             "raw_bytes": float(inputs[0]) if len(calls) else 0.0, "key": INPUT_KEY}]
    for index, share in zip(ending, shares):
        row = calls.iloc[index]
        rows.append({"cut": f"after {stage_label(row['stage'], row['call_index'])}",
                     "kind": "stage", "depth": depths[index], "stage": row["stage"],
                     "call_index": int(row["call_index"]), "top_index": int(tops[index]),
                     "top_fraction": share, "raw_bytes": crossing[index], "key": row["key"]})
    cuts = pd.DataFrame(rows)
    return cuts.assign(last=[False] * (len(cuts) - 1) + [len(cuts) > 1])


def cut_colours(count: int) -> list[str]:
    """``count`` colours, every one different (hues evenly spaced around the wheel)."""
    return [f"hsl({round(360 * i / max(count, 1))},70%,{45 if i % 2 else 38}%)"
            for i in range(count)]


def fewest_bytes(cuts: pd.DataFrame) -> tuple[Optional[int], str]:
    """The cut that sends the fewest bytes after the input (of equals, the latest: where the
    end of the forward sends no more than a cut inside it, nothing need be split) and what
    its mark says: ``fewest bytes``, or, at the end of the forward, that it is the network's
    output and nothing is split."""
    sizes = cuts["raw_bytes"].astype(float).iloc[1:] if len(cuts) > 1 else cuts["raw_bytes"]
    sizes = sizes[sizes.notna()]
    if sizes.empty:
        return None, ""
    fewest = sizes[sizes == sizes.min()].index[-1]
    if bool(cuts.loc[fewest].get("last", False)):
        return fewest, "fewest bytes: the output of the network (nothing split)"
    return fewest, "fewest bytes"


def cut_bytes_figure(cuts: pd.DataFrame) -> Any:
    """Bars of the bytes each cut sends on a log axis (bytes span decades), nested calls'
    cuts indented, a cut of 0 bytes marked with an x at the foot, and the fewest
    (:func:`fewest_bytes`) marked."""
    import plotly.graph_objects as go

    sizes = cuts["raw_bytes"].to_numpy(float) / 1e6
    labels = chart_labels([indent(depth) + cut for cut, depth in zip(cuts["cut"],
                                                                      cuts["depth"])])
    positive = sizes[np.isfinite(sizes) & (sizes > 0)]
    foot = float(positive.min()) / 2 if len(positive) else 1e-6
    figure = go.Figure(go.Bar(x=labels, y=np.where(sizes > 0, sizes, np.nan),
                              customdata=cuts["key"], marker_color=cut_colours(len(cuts)),
                              hovertext=[escape(cut) for cut in cuts["cut"]],
                              hovertemplate="%{hovertext}<br>" + hover_number("y")
                                            + " MB<extra></extra>", name="bytes sent"))
    zero = sizes == 0
    if zero.any():
        figure.add_scatter(x=np.array(labels)[zero], y=np.full(zero.sum(), foot),
                           mode="markers", marker={"symbol": "x", "size": 8, "color": "#666"},
                           name="0 bytes", customdata=cuts["key"][zero],
                           hovertemplate="%{x}: 0 bytes<extra></extra>")
    fewest, text = fewest_bytes(cuts)
    if fewest is not None:
        position = cuts.index.get_loc(fewest)
        figure.add_annotation(x=labels[position], y=np.log10(max(sizes[position], foot)),
                              text=text, showarrow=True, arrowhead=2, ay=-30)  # log: log10
    ticks, texts = log_ticks(foot, float(positive.max())) if len(positive) else ([], [])
    figure.update_layout(height=360 + 5 * min(max(map(len, labels), default=0), 60),
                         margin={"t": 30, "l": 70, "r": 10, "b": 10},
                         yaxis={"title": {"text": "MB sent (1e6 bytes)"}, "type": "log",
                                "tickvals": ticks, "ticktext": texts},
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


#: The height of a latency chart (px) and the part of it that is the plot.
_LATENCY_HEIGHT, _LATENCY_PLOT = 440, 330


def _end_labels(latency: pd.DataFrame, colours: Mapping[str, str], decades: float
                ) -> list[dict]:
    """An annotation per line at its right end (the highest bandwidth), in the line's colour,
    moved apart where ends meet (:func:`~profiling.reports.split_figures.label_heights`)."""
    ends = latency.sort_values("bandwidth_mbit").groupby("cut", sort=False).last()
    heights = label_heights(list(ends["latency_ms"]), decades, _LATENCY_PLOT)
    return [{"x": float(np.log10(row.bandwidth_mbit)), "y": float(np.log10(height)),
             "text": chart_label(cut, 32), "showarrow": False, "xanchor": "left",
             "xshift": 6, "font": {"size": 10, "color": colours[cut]}}
            for (cut, row), height in zip(ends.iterrows(), heights)]


def latency_lines_figure(variants: Sequence[tuple[str, pd.DataFrame]],
                         colours: Mapping[str, str], title: str) -> Any:
    """End-to-end latency of each cut against bandwidth, one line per cut named at its right
    end and a grey band under the best, for each variant (``(button label, table)``, the table
    with ``cut``, ``key``, ``bandwidth_mbit`` and ``latency_ms``; buttons choose one where there
    are several). Both axes log, the latency's ticks in ms or s
    (:func:`~profiling.reports.split_figures.latency_ticks`)."""
    import plotly.graph_objects as go

    figure = go.Figure()
    values = pd.concat([latency["latency_ms"] for _, latency in variants]).astype(float)
    low, high = float(values[values > 0].min()), float(values.max())
    decades = max(np.log10(high / low), 0.3) * 1.1
    counts, labels = [], []
    for number, (_, latency) in enumerate(variants):
        best = latency.groupby("bandwidth_mbit")["latency_ms"].min()
        figure.add_scatter(x=best.index, y=best.to_numpy(), mode="lines", hoverinfo="skip",
                           line={"color": "rgba(60,60,60,0.25)", "width": 12},
                           name="best cut", visible=number == 0)
        for cut, group in latency.groupby("cut", sort=False):
            figure.add_scatter(x=group["bandwidth_mbit"], y=group["latency_ms"],
                               mode="lines+markers", name=chart_label(cut), visible=number == 0,
                               line={"color": colours[cut]}, marker={"size": 4},
                               customdata=group["key"],
                               hovertemplate=f"{escape(cut)}<br>{hover_number('x')} Mbit/s: "
                                             f"{hover_number('y')} ms<extra></extra>")
        counts.append(1 + latency["cut"].nunique())
        labels.append(_end_labels(latency, colours, decades))
    buttons = []
    for number, (label, _) in enumerate(variants):
        start = sum(counts[:number])
        shown = [start <= i < start + counts[number] for i in range(sum(counts))]
        buttons.append({"label": label, "method": "update",
                        "args": [{"visible": shown}, {"annotations": labels[number]}]})
    ticks, texts = latency_ticks(low, high)
    widest = max((len(a["text"]) for a in labels[0]), default=0)
    figure.update_layout(
        height=_LATENCY_HEIGHT, annotations=labels[0], showlegend=False,
        margin={"t": 50, "l": 80, "r": 20 + 7 * widest, "b": 50},
        xaxis={"type": "log", "title": {"text": "bandwidth (Mbit/s)"}},
        yaxis={"type": "log", "title": {"text": title}, "tickvals": ticks, "ticktext": texts},
        updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons, "x": 0,
                      "y": 1.18, "xanchor": "left", "yanchor": "top"}]
        if len(variants) > 1 else [])
    return figure


def latency_figure(stages: pd.DataFrame, cuts: pd.DataFrame) -> Optional[Any]:
    """:func:`latency_lines_figure` of the run's cuts for each server speed-up of
    :data:`SPEED_UPS`: the input, the top-level cuts and each nested cut that is the best
    somewhere (more lines would hide each other); ``None`` without times."""
    if time_column(stages) is None or cuts["raw_bytes"].notna().sum() == 0:
        return None
    colours = dict(zip(cuts["cut"], cut_colours(len(cuts))))
    variants = [(f"server {speed_up}\u00d7 faster" if speed_up != 1 else "server as fast",
                 _latency(stages, cuts, speed_up, BANDWIDTHS_MBIT)) for speed_up in SPEED_UPS]
    best = {cut for _, latency in variants for cut in latency.loc[latency.groupby(
        "bandwidth_mbit")["latency_ms"].idxmin(), "cut"]}
    drawn = [cut for cut, depth in zip(cuts["cut"], cuts["depth"]) if depth == 0 or cut in best]
    variants = [(label, latency[latency["cut"].isin(drawn)]) for label, latency in variants]
    return latency_lines_figure(variants, colours, "end-to-end latency, without the round trip")


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
