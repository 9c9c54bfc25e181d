"""The split analysis's timeline: bytes alive across every point of the forward."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["plot_split_timeline", "plot_executed_latency", "executed_latency_figure"]

#: above this many stage boundaries, only every n-th is labelled.
_MAX_LABELS = 40


def plot_split_timeline(timeline: np.ndarray, cuts: pd.DataFrame,
                        stage_spans: list[tuple[str, int, int, int]], title: str = ""
                        ) -> bytes:
    """PNG of the raw bytes alive after each operator of the forward (a step line), the
    candidate cuts of ``cuts`` (a :func:`profiling.split.cut_table`) on it, the Pareto front
    and the minimum-bytes cut highlighted, and the top-level stage boundaries as labelled
    vertical lines (``stage_spans``: ``(stage, call_index, first, last)``)."""
    figure = Figure(figsize=(12, 5.5))
    axes = figure.subplots()
    positions = np.arange(len(timeline))
    axes.step(positions, timeline / 1e6, where="post", color="0.35", linewidth=1,
              label="alive after each operator")
    candidates = cuts[~cuts["kind"].isin(["op"])]
    axes.plot(candidates["position"], candidates["raw_bytes"] / 1e6, "o", color="C0",
              markersize=3, label="candidate cuts")
    front = cuts[cuts["pareto"]]
    axes.plot(front["position"], front["raw_bytes"] / 1e6, "s", color="C2", markersize=6,
              markerfacecolor="none", label="Pareto front (bytes vs device FLOPs)")
    best = cuts[cuts["min_cut"]]
    axes.plot(best["position"], best["raw_bytes"] / 1e6, "*", color="C3", markersize=14,
              clip_on=False, zorder=4, label=_fewest_label(cuts, best))
    step = max(1, -(-len(stage_spans) // _MAX_LABELS))
    top = float(timeline.max() / 1e6) if len(timeline) else 1.0
    for index, (stage, call_index, _, last) in enumerate(stage_spans):
        axes.axvline(last, color="C1", linewidth=0.8, alpha=0.6)
        if index % step == 0:
            label = stage + (f"[{call_index}]" if call_index else "")
            axes.text(last, 1.01, label, rotation=90, fontsize=7, va="bottom", ha="center",
                      color="C1", transform=axes.get_xaxis_transform())
    axes.set_xlabel("operators run (position in the forward)")
    axes.set_ylabel("bytes alive across the cut (MB)")
    last = max(1, len(timeline) - 1)
    axes.set_xlim(-0.02 * last, last * 1.02)  # room for a marker on the first or last operator
    axes.set_ylim(-0.03 * top if top > 0 else 0.0, top * 1.05 if top > 0 else 1.0)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4)
    if title:
        figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


def _fewest_label(cuts: pd.DataFrame, best: pd.DataFrame) -> str:
    """The legend of the fewest-bytes mark: the cut inside the forward, and where the
    network's output sends no more, that saying so (the whole forward on the device)."""
    if not len(best):
        return "fewest bytes inside the forward"
    label = f"fewest bytes inside the forward: {best['cut'].iloc[0]}"
    output = cuts[cuts["kind"] == "output"]["raw_bytes"]
    if len(output) and output.iloc[0] <= best["raw_bytes"].iloc[0]:
        label += " (the network's output sends no more)"
    return label


def executed_latency_figure(executed: pd.DataFrame) -> Figure:
    """The figure of :func:`plot_executed_latency`, before it is a PNG (its lines and points
    are :func:`~profiling.reports.split_figures.executed_curves`, as the HTML page's are)."""
    from matplotlib.ticker import NullFormatter

    from .plots import _log_axes, distinct_colours, plot_label
    from .split_figures import executed_curves, latency_ticks

    panels_of = executed_curves(executed)
    figure = Figure(figsize=(6.5 * max(len(panels_of), 1) + 2, 4.8))
    panels = figure.subplots(1, max(len(panels_of), 1), squeeze=False).ravel()
    for axes, (encoding, curves) in zip(panels, panels_of.items()):
        colours = distinct_colours(len(curves))
        for colour, curve in zip(colours, curves):
            axes.plot(curve.bandwidth_mbps, curve.estimated_ms, color=colour, alpha=0.8,
                      label=plot_label(curve.cut, 40))
            axes.errorbar(curve.bandwidth_mbps, curve.measured_ms,
                          yerr=[np.subtract(curve.measured_ms, curve.low_ms),
                                np.subtract(curve.high_ms, curve.measured_ms)],
                          fmt="o", color=colour, markersize=5, capsize=3)
        _log_axes(axes)
        low, high = axes.get_ylim()
        values, labels = latency_ticks(low, high)
        if values:
            axes.yaxis.set_minor_formatter(NullFormatter())
            axes.set_yticks(values, labels)
        axes.set_xlabel("bandwidth (Mbit/s)")
        axes.set_ylabel("end-to-end latency")
        axes.set_title(f"Executed split, {encoding}: points measured, lines estimated")
        axes.grid(which="both", alpha=0.3)
    panels[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    figure.tight_layout()
    return figure


def plot_executed_latency(executed: pd.DataFrame) -> bytes:
    """PNG of an executed split (``executed.csv``'s rows on shaped links): per encoding, each
    cut's estimate against bandwidth as a line (the formula with its terms) and its measured
    end-to-end median as a point with its interval, in the same colour."""
    from .plots import _png

    return _png(executed_latency_figure(executed))
