"""The charts of a run's page, as plotly figures: the stage icicle, the payload along the
forward and the roofline. Every point carries its stage call's key (``customdata``), by which
the page's script highlights a stage in every chart at once."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from ...statistics.aggregate import first_column, time_column
from ...counting.roofline import Ceilings, attainable_flops, stage_points
from ..colours import depth_colour
from .formatting import chart_labels, hover_number, indent, significant, stage_label
from .page import chart_label, escape
from .stage_tree import (CHAIN, ROOT, collapse_chains, exclusive_values, parent_keys,
                         stage_calls)

__all__ = ["icicle_metrics", "icicle_figure", "payload_figure", "roofline_figure",
           "memory_column", "axis_scale"]

#: The most legend entries drawn in a row above a chart.
_LEGEND_ABOVE = 8
#: An axis whose positive values span more than this ratio is drawn logarithmic.
_LOG_SPAN = 100.0


def _go() -> Any:
    import plotly.graph_objects as go

    return go


def memory_column(stages: pd.DataFrame) -> Optional[str]:
    """The memory peak to show: the CUDA allocator's where measured, else the CPU tensors'."""
    return first_column(stages, "cuda_peak_mb", "tensor_peak_mb")


def icicle_metrics(stages: pd.DataFrame, forward_ms: Optional[float],
                   total_flops: Optional[float]) -> list[tuple[str, str, str, Optional[float]]]:
    """The metrics the icicle can be sized by, those the run has and that add up (a parent
    is the sum of its parts): ``(label, column, unit, the whole forward's value or None)``;
    time first. Payload and memory peaks do not add up and are drawn as bars instead."""
    time = time_column(stages)
    candidates = [("time", time, "ms", forward_ms), ("FLOPs", "flops", "FLOP", total_flops)]
    return [(label, column, unit, total) for label, column, unit, total in candidates
            if column is not None and column in stages
            and pd.to_numeric(stages[column], errors="coerce").fillna(0).gt(0).any()]


#: The colour of the blocks that no stage names (``other``, the forward's own part).
OTHER_COLOUR = "#c4c9d2"
#: The pixels of one level of the icicle, enough for a line of 11 px text.
LEVEL_PX = 24


def self_colours(own: np.ndarray, other: np.ndarray) -> list[str]:
    """A colour per block from its own (self) value: pale yellow for none to deep red for
    the largest, on a square-root scale; :data:`OTHER_COLOUR` for ``other`` blocks."""
    top = float(own.max()) if len(own) and own.max() > 0 else 1.0
    heat = np.sqrt(np.clip(own / top, 0.0, 1.0))
    return [OTHER_COLOUR if grey else f"hsl({48 - 48 * t:.0f},90%,{90 - 42 * t:.0f}%)"
            for t, grey in zip(heat, other)]


#: About how wide the icicle is drawn on a 1400-pixel-wide window, and how wide a character of
#: its labels is (11-12 px text): what :func:`_block_text` fits a label to.
ICICLE_PX, CHARACTER_PX = 1290, 7


def _block_text(labels: list[str], values: pd.Series, unit: str, whole: float) -> list[str]:
    """What a block says: ``name · 12.3 ms · 4.5%`` where it fits, else ``name · 4.5%``, else
    ``name`` (a block's width is its share of the forward; plotly hides a label that does not
    fit, so a shorter one is shown where the whole one would be hidden)."""
    texts = []
    for label, value in zip(labels, values):
        share = f" \u00b7 {100 * value / whole:.1f}%" if whole > 0 else ""
        choices = [f"{label} \u00b7 {significant(value)} {unit}{share}", f"{label}{share}", label]
        room = ICICLE_PX * value / whole if whole > 0 else ICICLE_PX
        texts.append(next((text for text in choices if CHARACTER_PX * len(text) + 8 <= room),
                          choices[0]))
    return texts


def _hover(labels: list[str], values: pd.Series, unit: str, total: float,
           other: np.ndarray) -> list[str]:
    return [f"<b>{escape(label)}</b><br>{significant(value)} {unit}"
            + (f" ({100 * value / total:.1f}% of the forward)" if total > 0 else "")
            + ("<br>what its parent ran outside its stages" if grey else "")
            for label, value, grey in zip(labels, values, other)]


def icicle_figure(stages: pd.DataFrame, forward_ms: Optional[float] = None,
                  total_flops: Optional[float] = None) -> Optional[Any]:
    """An icicle of the stage calls under the whole forward, sized by time (a button
    switches to FLOPs); ``None`` when the run has neither.

    A block is as wide as the call, the forward's own part is what ran outside every stage,
    each block's colour is its self value (what no child of it ran), ``other`` blocks are
    grey, a label (``name · ms · %``) is hidden rather than shrunk where the block is too
    narrow, and a level is :data:`LEVEL_PX` high.
    """
    metrics = icicle_metrics(stages, forward_ms, total_flops)
    if not metrics:
        return None
    calls = stage_calls(stages, other=True)
    keep, parents, labels = collapse_chains(
        calls, parent_keys(calls),
        [stage_label(s, c) for s, c in zip(calls["stage"], calls["call_index"])])
    calls = calls[keep]
    parents = [p for p, kept in zip(parents, keep) if kept]
    labels = [label for label, kept in zip(labels, keep) if kept]
    shown = chart_labels(labels)
    innermost = [label.split(CHAIN)[-1] for label in shown]  # a chain's block says its last
    other = (calls["kind"] == "other").to_numpy()
    versions = []
    for label, column, unit, total in metrics:
        values = pd.to_numeric(calls[column], errors="coerce").fillna(0.0).clip(lower=0)
        top = float(values[calls["depth"] == 0].sum())
        whole = total if total is not None and total >= top else top
        own, root = exclusive_values(calls, parents, values, whole if total else None)
        outside = f"<br>outside every stage: {significant(root)} {unit}" if total else ""
        versions.append((label, [root, *own], {
            "hovertext": [f"<b>forward</b><br>{significant(whole)} {unit}{outside}",
                          *_hover(labels, values, unit, whole, other)],
            "text": [f"forward \u00b7 {significant(whole)} {unit}",
                     *_block_text(innermost, values, unit, whole)],
            "marker.colors": [OTHER_COLOUR, *self_colours(own, other)]}))
    go = _go()
    first = versions[0][2]
    figure = go.Figure(go.Icicle(
        ids=[ROOT, *calls["key"]], labels=["forward", *shown], parents=["", *parents],
        values=versions[0][1], branchvalues="remainder", customdata=[ROOT, *calls["key"]],
        hovertext=first["hovertext"], hovertemplate="%{hovertext}<extra></extra>",
        text=first["text"], texttemplate="%{text}", textposition="middle left",
        marker={"line": {"width": 1, "color": "#fff"}, "colors": first["marker.colors"]},
        tiling={"orientation": "v", "pad": 0}, pathbar={"visible": True, "thickness": 20},
        maxdepth=-1, sort=False))
    buttons = [{"label": label, "method": "restyle",
                "args": [{"values": [values], **{k: [v] for k, v in extra.items()}}]}
               for label, values, extra in versions]
    levels = int(calls["depth"].max()) + 2 if len(calls) else 1
    figure.update_layout(
        margin={"t": 40, "l": 10, "r": 10, "b": 10}, height=80 + LEVEL_PX * levels,
        uniformtext={"mode": "hide", "minsize": 11},
        updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons,
                      "x": 0, "y": 1.0, "xanchor": "left", "yanchor": "bottom",
                      "showactive": True, "pad": {"b": 4}}])
    return figure


def _decades(values: Any) -> Optional[int]:
    """A tick per decade (``dtick`` 1) on a log axis of ``values`` spanning more than 10x:
    plotly's own ticks write 2 and 5 between the decades, which read as 2 and 5, not 20 and
    50; ``None`` (plotly's ticks) for a narrower span."""
    positive = np.asarray(values, dtype=float)
    positive = positive[np.isfinite(positive) & (positive > 0)]
    return 1 if len(positive) > 1 and positive.max() / positive.min() > 10 else None


def axis_scale(values: np.ndarray) -> str:
    """``log`` where the positive ``values`` span more than 100x, else ``linear``."""
    positive = values[np.isfinite(values) & (values > 0)]
    wide = len(positive) > 1 and positive.max() / positive.min() > _LOG_SPAN
    return "log" if wide else "linear"


def payload_figure(stages: pd.DataFrame) -> Any:
    """The output payload of every stage call in forward order (colour: nesting depth), the
    bytes alive across each cut when the liveness collector ran, and a mark at the foot of
    each call whose output has no bytes (so that it does not look missing)."""
    go = _go()
    calls = stage_calls(stages)
    names = [stage_label(s, c) for s, c in zip(calls["stage"], calls["call_index"])]
    labels = [indent(d) + label
              for label, d in zip(chart_labels(names), calls["depth"])]
    hover = np.array([escape(name) for name in names], dtype=object)
    output = pd.to_numeric(calls["out_bytes"], errors="coerce").fillna(0).to_numpy(float)
    alive = (pd.to_numeric(calls["cut_bytes"], errors="coerce").to_numpy(float)
             if "cut_bytes" in calls else np.full(len(calls), np.nan))
    scale = axis_scale(np.concatenate([output, alive]) / 1e6)
    figure = go.Figure()
    for depth in sorted(calls["depth"].astype(int).unique()):
        chosen = (calls["depth"].astype(int) == depth).to_numpy()
        figure.add_bar(x=np.array(labels)[chosen], y=output[chosen] / 1e6,
                       name=f"output, depth {depth}", customdata=calls["key"][chosen],
                       marker_color=depth_colour(depth),
                       hovertext=hover[chosen],
                       hovertemplate="%{hovertext}<br>output " + hover_number("y")
                                     + " MB<extra></extra>")
    zero = output == 0
    if zero.any():
        positive = output[output > 0] / 1e6
        foot = positive.min() / 2 if scale == "log" and len(positive) else 0.0
        figure.add_scatter(x=np.array(labels)[zero], y=np.full(zero.sum(), foot),
                           mode="markers", marker={"symbol": "x", "size": 8, "color": "#666"},
                           name="output of 0 bytes", customdata=calls["key"][zero],
                           hovertext=hover[zero],
                           hovertemplate="%{hovertext}<br>output: 0 bytes<extra></extra>")
    if np.isfinite(alive).any():
        shown = np.isfinite(alive)
        figure.add_scatter(x=np.array(labels)[shown], y=alive[shown] / 1e6, mode="lines+markers",
                           name="alive across the cut after the call", line={"color": "#111"},
                           customdata=calls["key"][shown], hovertext=hover[shown],
                           hovertemplate="%{hovertext}<br>alive across the cut "
                                         + hover_number("y") + " MB"
                                         "<extra></extra>")
    figure.update_layout(
        barmode="overlay", height=360 + 6 * min(max(map(len, labels), default=0), 60),
        margin={"t": 40, "l": 70, "r": 10, "b": 10},
        yaxis={"title": {"text": "MB (1e6 bytes)"}, "type": scale,
               "dtick": 1 if scale == "log" else None},
        xaxis={"type": "category", "tickangle": -60, "automargin": True,
               "categoryorder": "array", "categoryarray": labels},  # forward order, not
        # each trace's (one per depth) categories after the one before
        legend=legend_layout(len(figure.data)),
        updatemenus=[{"type": "buttons", "direction": "right", "x": 0.6, "y": 1.0,
                      "xanchor": "left", "yanchor": "bottom", "showactive": True,
                      "active": 1 if scale == "log" else 0, "buttons": [
                          {"label": label, "method": "relayout",
                           "args": [{"yaxis.type": axis,
                                     "yaxis.dtick": 1 if axis == "log" else None}]}
                          for label, axis in (("linear bytes", "linear"),
                                              ("log bytes", "log"))]}])
    return figure


def legend_layout(entries: int) -> dict[str, Any]:
    """A legend above the chart for a few entries; right of it, where plotly scrolls it,
    for more (one per nesting depth of a 40-deep network covered the bars)."""
    if entries <= _LEGEND_ABOVE:
        return {"orientation": "h", "y": 1.08}
    return {"orientation": "v", "x": 1.02, "y": 1.0, "yanchor": "top"}


def roofline_figure(stages: pd.DataFrame, ceilings: Optional[Ceilings] = None,
                    dtype: str = "float32") -> Optional[Any]:
    """Every stage call at its arithmetic intensity and achieved FLOP/s, one colour per depth,
    its name and figures on hover, in GFLOP/s; the roof when the device's ``ceilings`` are
    known, else the best rate achieved as a dotted line, labelled as no ceiling.
    ``None`` without op counts or a time."""
    time = time_column(stages)
    if time is None or any(c not in stages for c in ("flops", "bytes_read", "bytes_written")):
        return None
    calls = stage_calls(stages)
    intensity, achieved = stage_points(calls, time)
    keep = (intensity > 0) & (achieved > 0) & np.isfinite(intensity) & np.isfinite(achieved)
    if not keep.any():
        return None
    go = _go()
    figure = go.Figure()
    for depth in sorted(calls.loc[keep, "depth"].astype(int).unique()):
        chosen = keep & (calls["depth"].astype(int) == depth)
        rows = calls[chosen]
        text = [f"<b>{escape(stage_label(s, c))}</b><br>{significant(f)} FLOP in "
                f"{significant(t)} ms"
                for s, c, f, t in zip(rows["stage"], rows["call_index"], rows["flops"],
                                      rows[time])]
        figure.add_scatter(x=intensity[chosen], y=achieved[chosen] / 1e9, mode="markers",
                           name=f"depth {depth}", customdata=rows["key"], text=text,
                           marker={"size": max(6, 13 - 2 * depth), "color": depth_colour(depth),
                                   "line": {"width": 1, "color": "#fff"}},
                           hovertemplate="%{text}<br>intensity " + hover_number("x")
                                         + " FLOP/byte<br>achieved " + hover_number("y")
                                         + " GFLOP/s<extra></extra>")
    low, high = float(intensity[keep].min()) / 4, float(intensity[keep].max()) * 4
    if ceilings is not None:
        high = max(high, ceilings.ridge_point(dtype) * 4)
        span = np.logspace(np.log10(low), np.log10(high), 120)
        figure.add_scatter(x=span, y=attainable_flops(span, ceilings, dtype) / 1e9,
                           mode="lines", name=f"roof: {chart_label(ceilings.name)} ({dtype})",
                           line={"color": "#111"}, hoverinfo="skip")
    else:  # no ceilings: the best rate a stage achieved, which the device reaches at least
        best = float(achieved[keep].max()) / 1e9
        figure.add_scatter(x=[low, high], y=[best, best], mode="lines", hoverinfo="skip",
                           line={"color": "#111", "dash": "dot"},
                           name=f"best achieved: {significant(best)} GFLOP/s (not a ceiling)")
    figure.update_layout(
        height=440, margin={"t": 20, "l": 70, "r": 10, "b": 50},
        xaxis={"type": "log", "dtick": _decades(intensity[keep]),
               "title": {"text": "arithmetic intensity (FLOP per byte read or written)"}},
        yaxis={"type": "log", "dtick": _decades(achieved[keep]),
               "title": {"text": f"achieved GFLOP/s (1e9 FLOP/s, "
                                 f"{time.split('_')[0].upper()} time)"}},
        legend=legend_layout(len(figure.data)))
    return figure
