"""Plots of a run and of a split analysis, as PNG bytes (matplotlib, no display needed).

:func:`render_plots` makes the plots of one run from its stage table: ``time.png`` (per-stage
time, CPU and CUDA), ``payload.png`` (the payload along the forward), ``memory.png`` (memory
along the forward), ``roofline.png`` (the stages against the device's roofline, when the
run counted operations) and ``layers.png`` (the torchstat table's parameters, memory and time
along the leaf layers, when given the table). :func:`plot_split_latency` draws a split
analysis's latency against bandwidth. Figures are built with :class:`matplotlib.figure.Figure`,
never with pyplot, so no GUI backend or global state is involved.

Every axis whose values span more than two decades is logarithmic (and says so), every colour
is in a legend, and MB is 1e6 bytes on every plot (the torchstat table's MiB are converted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from ..counting.roofline import stage_points
from ..statistics.aggregate import shown_calls, time_column
from .colours import depth_colour
from .layers_plot import plot_layers
from .plot_style import log_if_wide as _log_if_wide, plot_label, png as _png
from .record import Run, as_record
from .time_plot import plot_stage_times
from .view import extra_metrics, forward_order

if TYPE_CHECKING:
    from ..counting.roofline import Ceilings

__all__ = ["render_plots", "plot_metric", "plot_stage_times", "plot_payload", "plot_memory",
           "plot_roofline", "plot_layers", "plot_split_latency"]

#: the most stage calls the roofline lists in one column, and a monospace character's width
#: at 8 points (points).
_LIST_ROWS = 30
_MONO_CHAR_PT = 4.9
#: the height a name slanted at 60 degrees takes under an axis, per character at 8 points.
_SLANTED_IN_PER_CHAR = 0.05

_TIMES = (("cpu", "cpu_time_ms"), ("cuda", "cuda_time_ms"))
_MEMORY = (("CPU tensors", "tensor_peak_mb", "tensor_retained_mb"),
           ("CUDA allocator", "cuda_peak_mb", "cuda_retained_mb"))


def _legend_outside(axes: Any) -> None:
    """The legend right of the plot, where no bar or line can hide under it."""
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)


def _log_axes(axes: Any) -> None:
    """Both axes logarithmic; the in-between ticks that matplotlib labels (on an axis of a
    decade or two) are written as plain numbers (``3``, ``40``), not ``3 x 10^0``, whose width
    made neighbours run into each other."""
    axes.set_xscale("log")
    axes.set_yscale("log")
    for axis in (axes.xaxis, axes.yaxis):
        axis.set_minor_formatter(LogFormatter(labelOnlyBase=False))


def _stage_rows(stages: pd.DataFrame, max_depth: int, other: bool = False) -> pd.DataFrame:
    """The rows a plot draws, in the view's forward order
    (:func:`~profiling.reports.view.forward_order`), down to ``max_depth``."""
    return shown_calls(forward_order(stages), max_depth,
                       ("stage", "other") if other else ("stage",))


def _call_label(stage: Any, call_index: Any, depth: Any = 0) -> str:
    """A stage call as every plot names it: indented by depth, its call index after a later
    call, shortened and escaped (:func:`~profiling.reports.labels.plot_label`)."""
    return "  " * int(depth) + plot_label(f"{stage}[{int(call_index)}]" if call_index
                                          else stage)


def _call_labels(rows: pd.DataFrame) -> list[str]:
    return [_call_label(r.stage, r.call_index, r.depth) for r in rows.itertuples()]


def _bars_by_depth(rows: pd.DataFrame, values: np.ndarray, label: Any
                   ) -> tuple[Figure, Any, np.ndarray]:
    """A figure of one bar per stage call in forward order, coloured by nesting depth, each
    depth labelled ``label(depth)``: the figure, its axes and the bars' positions."""
    figure = Figure(figsize=(max(6.0, 0.28 * len(rows) + 2), 5))
    axes = figure.subplots()
    x = np.arange(len(rows))
    depths = rows["depth"].astype(int).to_numpy()
    for depth in sorted(set(depths)):
        chosen = depths == depth
        axes.bar(x[chosen], values[chosen], color=depth_colour(depth), label=label(depth))
    return figure, axes, x


def plot_payload(stages: pd.DataFrame, max_depth: int = 1) -> bytes:
    """The output payload of each stage call in forward order, with the bytes alive across
    each top-level cut when the liveness collector ran."""
    rows = _stage_rows(stages, max_depth)
    figure, axes, x = _bars_by_depth(
        rows, rows["out_bytes"].to_numpy() / 1e6,
        lambda depth: f"stage output, depth {depth}"
                      + (" (top-level stages)" if depth == 0 else " (nested)"))
    values = list(rows["out_bytes"].to_numpy() / 1e6)
    _mark_zero_bytes(axes, x, rows["out_bytes"].to_numpy(float))
    if "cut_bytes" in rows:
        alive = rows["cut_bytes"].astype(float) / 1e6
        axes.plot(x[alive.notna().to_numpy()], alive.dropna().to_numpy(), "k.-",
                  label="alive across the cut after the stage")
        values += list(alive.dropna().to_numpy())
    axes.set_xticks(x, _call_labels(rows), rotation=90, fontsize=7)
    axes.set_ylabel("MB (1e6 bytes)")
    _log_if_wide(axes, values)
    axes.set_title("Payload along the forward (colour: nesting depth)")
    axes.legend(fontsize=8, loc="best", framealpha=0.9)  # inside: the plot keeps the width
    axes.grid(axis="y", alpha=0.3)
    return _png(figure)


#: The colour of the mark of a stage whose output has no bytes (in no other plot element).
ZERO_MARK = "#c51b7d"


def _mark_zero_bytes(axes, x: np.ndarray, sizes: np.ndarray) -> None:
    """An x at the foot of each bar of 0 bytes (on the axis, whatever its scale), so that a
    stage without output does not look missing."""
    zero = sizes == 0
    if zero.any():
        axes.plot(x[zero], np.zeros(zero.sum()), "x", color=ZERO_MARK, markersize=8, mew=2,
                  clip_on=False, zorder=3, label="output of 0 bytes",
                  transform=axes.get_xaxis_transform())


#: A memory panel whose every figure is below this (MB) is left out when another has more: the
#: host panel of a CUDA run, where a few host scalars are all the CPU tensors there are.
NEGLIGIBLE_MB = 1e-3


def _memory_panels(rows: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The memory kinds to draw for ``rows``: those measured, less the negligible ones."""
    kinds = [k for k in _MEMORY if k[1] in rows and k[2] in rows
             and rows[k[1]].notna().any()]
    largest = {k: rows[[k[1], k[2]]].astype(float).abs().max().max() for k in kinds}
    shown = [k for k in kinds if largest[k] >= NEGLIGIBLE_MB]
    return shown or kinds


def plot_memory(stages: pd.DataFrame) -> Optional[bytes]:
    """Memory along the forward, per top-level stage call: the peak above the stage's start
    (bars) and the level the stages leave allocated, cumulated (line). ``None`` without memory
    measurements."""
    rows = _stage_rows(stages, 0)
    kinds = _memory_panels(rows)
    if not kinds:
        return None
    labels = _call_labels(rows)
    # each panel as tall as its bars plus the stage names slanted under them
    tall = 2.6 + _SLANTED_IN_PER_CHAR * max(map(len, labels), default=0)
    figure = Figure(figsize=(max(7.0, 0.5 * len(rows) + 1.5), tall * len(kinds)))
    panels = np.atleast_1d(figure.subplots(len(kinds), 1, squeeze=False)[:, 0])
    x = np.arange(len(rows))
    for axes, (label, peak, allocated) in zip(panels, kinds):
        level = rows[allocated].astype(float).cumsum()
        before = level - rows[allocated].astype(float)
        axes.bar(x, (before + rows[peak].astype(float)).to_numpy(), color="C1", alpha=0.6,
                 label="peak inside the stage")
        axes.plot(x, level.to_numpy(), "k.-", label="allocated after the stage")
        axes.set_ylabel("MB (1e6 bytes)")
        _log_if_wide(axes, list(before + rows[peak].astype(float)) + list(level))
        axes.set_title(f"Memory along the forward: {label} (above the forward's start)")
        axes.set_xticks(x, labels, rotation=60, ha="right", fontsize=8)
        axes.legend(fontsize=8, loc="upper left", framealpha=0.9)
        axes.set_xlim(-0.6, len(rows) - 0.4)
        axes.margins(y=0.25)  # room for the legend above the bars
        axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return _png(figure)


def plot_roofline(stages: pd.DataFrame, ceilings: Optional["Ceilings"] = None,
                  dtype: str = "float32", max_depth: int = 1) -> Optional[bytes]:
    """The stages on the roofline: arithmetic intensity against achieved FLOP/s.

    Needs ``flops``, ``bytes_read``, ``bytes_written`` (the op_counts collector) and a time;
    ``None`` otherwise. The roof is drawn when the device's ``ceilings`` are given.
    """
    time = time_column(stages)
    if time is None or any(c not in stages for c in ("flops", "bytes_read", "bytes_written")):
        return None
    rows = _stage_rows(stages, max_depth)
    intensity, achieved = stage_points(rows, time)
    keep = (intensity > 0) & (achieved > 0) & intensity.notna() & np.isfinite(achieved)
    if not keep.any():
        return None
    figure = Figure(figsize=(8, 5.5))
    axes = figure.subplots()
    for depth, group in rows[keep].groupby("depth"):
        axes.scatter(intensity[group.index], achieved[group.index], label=f"depth {depth}",
                     s=24, color=depth_colour(depth))
    _number_points(axes, rows[keep], intensity, achieved)
    if ceilings is None:
        # under the axis label, where neither the points nor the list of stages are
        axes.text(0.0, -0.13, "No roof drawn: no ceilings for this device. Give them with "
                  "roofline.ceilings= (a YAML from python -m zoo.calibrate, or a preset)\n"
                  "or zoo.plot --ceilings.", transform=axes.transAxes, fontsize=8,
                  va="top", ha="left",
                  bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "0.6"})
    else:
        from ..counting.roofline import attainable_flops
        span = np.logspace(np.log10(intensity[keep].min() / 4),
                           np.log10(max(intensity[keep].max() * 4,
                                        ceilings.ridge_point(dtype) * 4)), 200)
        axes.plot(span, attainable_flops(span, ceilings, dtype), "k-",
                  label=f"roofline {plot_label(ceilings.name)} ({dtype})")
    _log_axes(axes)
    axes.set_xlabel("arithmetic intensity (FLOP / byte read or written)")
    axes.set_ylabel(f"achieved FLOP/s ({time.split('_')[0].upper()} time)")
    axes.set_title("Roofline of the stages (numbers: every stage call, listed right)")
    axes.legend(fontsize=8, loc="upper left")
    axes.grid(which="both", alpha=0.3)
    return _png(figure)


def _number_points(axes, rows: pd.DataFrame, x: pd.Series, y: pd.Series) -> None:
    """Number the points of ``rows`` (offsets alternating around each point, so neighbours'
    numbers do not sit on each other) and list the numbers' stage names right of the axes,
    indented by nesting depth."""
    offsets = ((4, 4), (4, -10), (-12, 4), (-12, -10))
    names = []
    for number, index in enumerate(rows.index, start=1):
        axes.annotate(str(number), (x[index], y[index]), fontsize=8, fontweight="bold",
                      xytext=offsets[(number - 1) % len(offsets)], textcoords="offset points")
        names.append(f"{number:>2} " + _call_label(rows.at[index, "stage"],
                                                   rows.at[index, "call_index"],
                                                   rows.at[index, "depth"]))
    # in columns of at most _LIST_ROWS, side by side, so that hundreds of stage calls make a
    # wide figure instead of one many times taller than the plot
    width = (max(map(len, names), default=0) + 2) * _MONO_CHAR_PT
    for column, start in enumerate(range(0, len(names), _LIST_ROWS)):
        axes.annotate("\n".join(names[start:start + _LIST_ROWS]), (1.02, 1.0),
                      xycoords="axes fraction", xytext=(column * width, 0),
                      textcoords="offset points", fontsize=8, va="top", ha="left",
                      family="monospace")


_DASHES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "v", "D", "x", "+", "<", ">", "*")


def distinct_colours(count: int) -> list:
    """``count`` colours, no two alike: matplotlib's ten up to ten, else ``count`` steps
    along the ``turbo`` colour map."""
    if count <= 10:
        return [f"C{i}" for i in range(count)]
    from matplotlib import colormaps

    return [colormaps["turbo"](i / (count - 1)) for i in range(count)]


def _distinct_curves(table: pd.DataFrame) -> list[tuple[list[str], pd.DataFrame]]:
    """The cuts' latency curves, those equal within 0.1% at every bandwidth merged into one
    (their names together), in the order of their first cut."""
    curves: list[tuple[list[str], pd.DataFrame]] = []
    for cut, group in table.groupby("cut", sort=False):
        group = group.sort_values("bandwidth_mbit")
        for names, other in curves:
            if len(other) == len(group) and np.allclose(
                    other["latency_ms"].to_numpy(float), group["latency_ms"].to_numpy(float),
                    rtol=1e-3, atol=0.0):
                names.append(str(cut))
                break
        else:
            curves.append(([str(cut)], group))
    return curves


def plot_split_latency(latency: pd.DataFrame, encodings: Optional[Sequence[str]] = None
                       ) -> bytes:
    """End-to-end latency of every cut against bandwidth, one panel per encoding; the
    grey band under the lines is the best cut's latency (a table of
    :func:`profiling.split.split_latency`).

    Cuts whose latencies are the same at every bandwidth (within 0.1%) are one line labelled
    with all their names, and lines differ in colour, dash and marker, so none hides another.
    """
    encodings = list(encodings or latency["encoding"].unique())
    columns = min(2, len(encodings))
    rows = -(-len(encodings) // columns)
    figure = Figure(figsize=(6.5 * columns + 2, 4.5 * rows))
    panels = figure.subplots(rows, columns, squeeze=False).ravel()
    for axes, encoding in zip(panels, encodings):
        table = latency[latency["encoding"] == encoding]
        curves = _distinct_curves(table)
        colours = distinct_colours(len(curves))
        for i, (names, group) in enumerate(curves):
            shown = names[0] if len(names) == 1 else f"{names[0]} (= {', '.join(names[1:])})"
            axes.plot(group["bandwidth_mbit"], group["latency_ms"],
                      label=plot_label(shown, 60),
                      color=colours[i], linestyle=_DASHES[(i // 10) % len(_DASHES)],
                      marker=_MARKERS[i % len(_MARKERS)], markersize=4, alpha=0.85, zorder=2)
        best = table.groupby("bandwidth_mbit")["latency_ms"].min()
        axes.plot(best.index, best.to_numpy(), color="0.2", linewidth=7, alpha=0.22,
                  solid_capstyle="round", zorder=1, label="best cut (grey band, under the lines)")
        _log_axes(axes)
        axes.set_xlabel("bandwidth (Mbit/s)")
        axes.set_ylabel("end-to-end latency (ms)")
        axes.set_title(f"Split latency, {encoding} payload")
        axes.grid(which="both", alpha=0.3)
    for unused in panels[len(encodings):]:
        unused.set_visible(False)
    panels[columns - 1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    figure.tight_layout()
    return _png(figure)


def plot_metric(stages: pd.DataFrame, metric: Any, max_depth: int = 1) -> bytes:
    """Bars of a declared metric (:class:`~profiling.collectors.Metric`) for each stage call in
    forward order, coloured by nesting depth, labelled with its label, unit and scale."""
    rows = _stage_rows(stages, max_depth)
    values = pd.to_numeric(rows[metric.column], errors="coerce").to_numpy(float) * metric.scale
    figure, axes, x = _bars_by_depth(rows, values, lambda depth: f"depth {depth}")
    axes.set_xticks(x, _call_labels(rows), rotation=90, fontsize=7)
    scale = "" if metric.scale == 1 else f" x {metric.scale:g}"
    axes.set_ylabel(f"{metric.label} ({metric.unit or 'no unit'}{scale})")
    axes.set_title(f"{metric.label}: {metric.description or metric} (colour: nesting depth)")
    _legend_outside(axes)
    axes.grid(axis="y", alpha=0.3)
    return _png(figure)


def render_plots(run: Run, ceilings: Optional["Ceilings"] = None,
                 module_types: Optional[Mapping[str, str]] = None
                 ) -> tuple[dict[str, bytes], list[str]]:
    """The plots of one run as ``{"plots/NAME.png": bytes}``, and notes on those left out.

    ``run`` is a :class:`~profiling.reports.RunRecord`, a
    :class:`~profiling.runner.ProfileResult` or a run folder
    (:func:`~profiling.reports.record.as_record`). The roofline's roof is drawn for
    ``ceilings``, by default the run's own (those it was given or recorded), in the run's
    roofline data type; the record's layer table (a run that counted operations) adds
    ``layers.png``. Each declared headline metric that no plot above shows gets
    ``plots/NAME.png`` of its own (:func:`plot_metric`). ``module_types`` (module path ->
    type name) labels ``layers.png``'s blocks with the types of their layers.
    """
    record = as_record(run)
    stages, layers = record.stages, record.layers
    ceilings = ceilings if ceilings is not None else record.ceilings
    dtype = record.roofline_dtype
    plots, notes = {}, []
    made = {"time": plot_stage_times(record), "payload": plot_payload(stages),
            "memory": plot_memory(stages), "roofline": plot_roofline(stages, ceilings, dtype),
            "layers": plot_layers(layers, module_types) if layers is not None else None}
    reasons = {"time": "the run measured no time",
               "memory": "the run measured no memory",
               "roofline": "the roofline needs op counts (collectors=[...,op_counts]) and a "
                           "time on one device",
               "layers": "the layer table needs op counts (collectors=[...,op_counts])"}
    for name, png in made.items():
        if png is None:
            notes.append(f"no {name} plot: {reasons[name]}")
        else:
            plots[f"plots/{name}.png"] = png
    for metric in extra_metrics(record.metrics, stages.columns):
        plots[f"plots/{metric}.png"] = plot_metric(stages, metric)
    return plots, notes
