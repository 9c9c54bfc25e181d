"""Metrics declare themselves: a collector written outside the package shows its metric in the
stage table, stages.csv, meta.json, the terminal summary and the comparison, with no code of
its own in any of them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch
from torch import nn

from profiling import ProfileResult, profile_model, stage, write_run
from profiling.collectors import Collector, Metric, declared_metrics, registered_collectors
from profiling.reports import compare_runs, format_comparison, format_summary, read_run
from profiling.stages import iter_leaves


class InputTensors(Collector):
    """A toy collector: how many tensors enter each stage call."""

    name = "input_tensors"
    pass_name = "analysis"
    nesting_rank = 90
    metrics = (Metric("input_tensors", unit="tensors", kind="count", headline=True,
                      label="in tensors", description="tensors entering the stage"),)

    def exit(self, call) -> None:
        call.metrics["input_tensors"] = len(list(iter_leaves(call.inputs)))


class TwoStages(nn.Module):
    def __init__(self, pair: bool) -> None:
        super().__init__()
        self.pair = pair
        self.conv = nn.Conv2d(1, 2, 3, padding=1)

    def forward(self, x):
        with stage("encoder", x) as s:
            y = s.output(self.conv(x))
        with stage("head", (y, x) if self.pair else y) as s:
            out = s.output(y.sum(dim=1) + x[:, 0])
        return out


def _run(pair: bool, folder) -> ProfileResult:
    model = TwoStages(pair).eval()
    result = profile_model(model, (torch.ones(1, 1, 4, 4),),
                           collectors=["payload", InputTensors()], warmup=0, repeats=1)
    write_run(result, folder, model)
    return result


def _by_stage(stages: pd.DataFrame) -> dict:
    """The metric of each stage row (the ``other`` row measures nothing)."""
    rows = stages[stages["kind"] == "stage"]
    return dict(zip(rows["stage"], rows["input_tensors"]))


@pytest.fixture
def runs(tmp_path):
    return _run(False, tmp_path / "a"), _run(True, tmp_path / "b"), tmp_path


def test_the_metric_is_in_the_result_the_csv_and_meta_json(runs):
    result, _, folder = runs
    assert [str(m) for m in result.metrics] == ["input_tensors"]
    assert _by_stage(result.stages) == {"encoder": 1, "head": 1}
    assert _by_stage(pd.read_csv(folder / "a" / "stages.csv")) == {"encoder": 1, "head": 1}
    declared = json.loads((folder / "a" / "meta.json").read_text())["metrics"]
    assert declared == [{"name": "input_tensors", "unit": "tensors", "kind": "count",
                         "calls": "sum", "repeats": "once",
                         "description": "tensors entering the stage", "headline": True,
                         "label": "in tensors", "scale": 1.0}]
    assert read_run(folder / "a").metrics[0].label == "in tensors"


def test_the_summary_shows_the_metric_under_its_label(runs):
    result = runs[0]
    lines = format_summary(result.stages, metrics=result.metrics).splitlines()
    assert lines[0].endswith("in tensors") and lines[1].endswith("sum")
    assert lines[2].split()[0] == "encoder" and lines[2].split()[-1] == "1.00"
    assert "(in tensors: tensors entering the stage, tensors)" in lines


def test_the_comparison_holds_and_shows_the_metric(runs):
    folder = runs[2]
    first, second = read_run(folder / "a"), read_run(folder / "b")
    table = compare_runs(first, second)
    head = table[table["stage"] == "head"].iloc[0]
    assert (head["input_tensors_a"], head["input_tensors_b"]) == (1, 2)
    assert head["input_tensors_diff"] == 1 and head["input_tensors_ratio"] == 2
    text = format_comparison(table, first, second)
    header = next(line for line in text.splitlines() if line.startswith("stage"))
    assert header.endswith("in tensors B")
    assert next(line for line in text.splitlines() if line.startswith("head")).endswith(
        "2.00 (+100%)")


def test_the_plots_draw_the_metric(runs):
    pytest.importorskip("matplotlib")
    from profiling.reports import render_plots

    result = runs[0]
    plots, _ = render_plots(result)
    png = plots["plots/input_tensors.png"]
    assert png.startswith(b"\x89PNG")


def test_every_built_in_metric_is_declared_with_a_unit_and_its_repeats():
    """The built-in collectors declare their metrics (a bare name would get defaults), and
    a timed collector's metrics are the repeated ones."""
    for cls in registered_collectors().values():
        for metric in cls.metrics:
            assert isinstance(metric, Metric) and metric.unit, (cls.name, metric)
            assert (metric.repeats == "statistics") == (cls.pass_name == "timed"), metric
    names = [str(m) for m in declared_metrics(registered_collectors().values())]
    assert {"cpu_time_ms", "tensor_peak_mb", "flops", "cut_bytes"} <= set(names)


def test_a_bare_name_is_declared_with_the_defaults_of_its_pass():
    class Timer(Collector):
        pass_name = "timed"
        metrics = ("toy_ms",)

    (metric,) = declared_metrics([Timer])
    assert metric == "toy_ms" and metric.repeats == "statistics"
    assert metric.column == "toy_ms_median"
