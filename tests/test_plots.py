"""Plots: every PNG written and not empty; those without data left out with a note."""

from __future__ import annotations

import io

import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")

from matplotlib.image import imread  # noqa: E402

from profiling.reports.plots import plot_layers, plot_split_latency, render_plots  # noqa: E402
from profiling.reports import RunRecord  # noqa: E402
from profiling.counting.roofline import ceilings  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def _stages(with_counts: bool) -> pd.DataFrame:
    table = pd.DataFrame({
        "stage": ["backbone", "conv", "head"], "kind": "stage", "depth": [0, 1, 0],
        "call_index": 0, "order": [0, 1, 2], "out_bytes": [4_000_000, 4_000_000, 1000],
        "cpu_time_ms_median": [8.0, 6.0, 1.0], "cpu_time_ms_mean": [8.1, 6.0, 1.0],
        "cpu_time_ms_p10": [7.0, 5.0, 0.9],
        "cpu_time_ms_p90": [9.0, 7.0, 1.2], "tensor_peak_mb": [12.0, 8.0, 0.5],
        "tensor_retained_mb": [4.0, 4.0, 0.001]})
    if with_counts:
        table["flops"] = [2e9, 1.8e9, 1e6]
        table["bytes_read"] = [3e7, 2e7, 5e6]
        table["bytes_written"] = [4e6, 4e6, 1e3]
    return table


def _is_drawn(png: bytes) -> bool:
    pixels = imread(io.BytesIO(png), format="png")
    return png.startswith(PNG) and pixels.shape[0] > 100 and pixels.std() > 0.01


def _layers(with_time: bool) -> pd.DataFrame:
    return pd.DataFrame({"module name": ["conv1", "relu", "fc", "total"],
                         "params": [1792.0, 0.0, 650.0, 2442.0],
                         "memory(MB)": [0.25, 0.25, 0.0, 0.5],
                         "duration[%]": [0.7, 0.1, 0.2, 1.0] if with_time else [None] * 4})


def test_run_plots_with_roofline_and_layers():
    record = RunRecord(None, "ok", stages=_stages(with_counts=True),
                       layers=_layers(with_time=True))
    plots, notes = render_plots(record, ceilings("h100"))
    assert sorted(plots) == ["plots/layers.png", "plots/memory.png", "plots/payload.png",
                             "plots/roofline.png", "plots/time.png"]
    assert all(_is_drawn(png) for png in plots.values())
    assert notes == []


def test_memory_plot_leaves_out_a_negligible_host_panel():
    from profiling.reports.plots import plot_memory

    table = _stages(with_counts=False)
    table["cuda_peak_mb"], table["cuda_retained_mb"] = 10.0, 2.0
    both = plot_memory(table)
    table["tensor_peak_mb"], table["tensor_retained_mb"] = 8e-6, 0.0  # a CUDA run's host side
    cuda_only = plot_memory(table)
    assert _is_drawn(both) and _is_drawn(cuda_only)
    height = imread(io.BytesIO(both), format="png").shape[0]
    assert imread(io.BytesIO(cuda_only), format="png").shape[0] < height


def test_layer_plot_panels_follow_the_table():
    with_time, without_time = plot_layers(_layers(True)), plot_layers(_layers(False))
    assert _is_drawn(with_time) and _is_drawn(without_time)
    # one panel fewer without times: a shorter figure
    height = imread(io.BytesIO(with_time), format="png").shape[0]
    assert imread(io.BytesIO(without_time), format="png").shape[0] < height
    assert plot_layers(_layers(True).iloc[-1:]) is None  # only the total row


def test_roofline_and_layers_left_out_without_counts():
    plots, notes = render_plots(RunRecord(None, "ok", stages=_stages(with_counts=False)))
    assert "plots/roofline.png" not in plots and "plots/time.png" in plots
    assert notes == ["no roofline plot: the roofline needs op counts "
                     "(collectors=[...,op_counts]) and a time on one device",
                     "no layers plot: the layer table needs op counts "
                     "(collectors=[...,op_counts])"]


def test_split_latency_plot():
    latency = pd.DataFrame({"cut": ["input", "input", "head", "head"], "encoding": "raw",
                            "bandwidth_mbit": [1.0, 100.0, 1.0, 100.0],
                            "latency_ms": [900.0, 30.0, 50.0, 45.0]})
    assert _is_drawn(plot_split_latency(latency))


@pytest.mark.slow
def test_plots_true_in_a_run(tmp_path):
    from zoo.tools.job import run_profile
    from zoo.tools.composition import compose_config
    from zoo.tools.plot import main

    cfg = compose_config(["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
                          "run.warmup=0", "run.repeats=1", "plots=true"])
    run = run_profile(cfg, tmp_path, print_summary=False)
    names = {p.relative_to(tmp_path).as_posix() for p in run.files}
    assert {"plots/time.png", "plots/payload.png", "plots/memory.png",
            "plots/layers.png"} <= names
    assert all(_is_drawn((tmp_path / n).read_bytes()) for n in names if n.endswith(".png"))
    for name in names:
        if name.endswith(".png"):
            (tmp_path / name).unlink()
    main([str(tmp_path)])
    assert _is_drawn((tmp_path / "plots" / "time.png").read_bytes())
    assert _is_drawn((tmp_path / "plots" / "layers.png").read_bytes())  # from layers.csv


def test_an_axis_is_logarithmic_only_beyond_two_decades():
    from matplotlib.figure import Figure

    from profiling.reports.plots import _log_if_wide

    axes = Figure().subplots()
    axes.set_ylabel("MB (1e6 bytes)")
    assert not _log_if_wide(axes, [0.05, 1.0, 5.0, 0.0])  # 100x: still linear
    assert axes.get_yscale() == "linear"
    assert _log_if_wide(axes, [0.01, 3.0, 0.0])  # 300x, the zero ignored
    assert axes.get_yscale() == "log" and axes.get_ylabel() == "MB (1e6 bytes) (log scale)"


def test_equal_split_curves_become_one_labelled_line():
    from profiling.reports.plots import _distinct_curves

    table = pd.DataFrame({"cut": ["a", "a", "b", "b", "c", "c"],
                          "bandwidth_mbit": [1, 10] * 3,
                          "latency_ms": [50.0, 20.0, 50.02, 20.01, 60.0, 20.0]})
    curves = _distinct_curves(table)
    assert [names for names, _ in curves] == [["a", "b"], ["c"]]
