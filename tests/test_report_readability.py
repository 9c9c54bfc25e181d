"""Reports stay readable with extreme runs (profiling/reports): terminal cells never touch, counts
take SI suffixes up to exa, chart labels of long names are short and distinct, the roofline
lists many stage calls in columns, deep nesting indents at most eight levels, a long legend goes
beside the plot, and a column of missing values only is not shown."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from profiling.reports import format_summary, shorten
from profiling.reports.labels import right_aligned
from profiling.reports.modules_table import _si


@pytest.mark.parametrize("text, width, cell", [
    ("1.00", 6, "  1.00"), ("9.01e-04-0.00229!", 17, " 9.01e-04-0.00229!"),
    ("1000000000000", 10, " 1000000000000")])
def test_a_terminal_cell_never_touches_its_neighbour(text, width, cell):
    assert right_aligned(text, width) == cell


@pytest.mark.parametrize("value, text", [(1e15, "1P"), (2.5e18, "2.5E"), (3e12, "3T"),
                                         (999, "999")])
def test_module_counts_take_si_suffixes_up_to_exa(value, text):
    assert _si(value) == text


@pytest.mark.parametrize("names", [
    ["L" * 190 + "_000", "L" * 190 + "_001"],  # alike but for their end
    ["a" * 100 + "x" + "a" * 100, "a" * 100 + "y" + "a" * 100],  # alike but for the middle
    ["b" * 200, "c" * 200, "short"]])
def test_chart_labels_are_short_and_tell_every_name_apart(names):
    pytest.importorskip("plotly")
    from profiling.reports.html.formatting import chart_labels

    labels = chart_labels(names)
    assert len(set(labels)) == len(names)
    assert all(len(label) <= 48 for label, name in zip(labels, names)
               if len(set(shorten(n, 48) for n in names)) == len(names))


@pytest.mark.parametrize("count, columns", [(5, 1), (30, 1), (31, 2), (300, 10)])
def test_the_roofline_lists_its_stage_calls_in_columns(count, columns):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from profiling.reports.plots import _number_points

    rows = pd.DataFrame({"stage": [f"s{i}" for i in range(count)], "depth": 0,
                         "call_index": 0})
    axes = Figure().subplots()
    x = pd.Series(range(1, count + 1), dtype=float)
    _number_points(axes, rows, x, x)
    lists = [t for t in axes.texts if re.match(r"\s*\d+ s\d+", t.get_text())]
    assert len(lists) == columns
    assert sum(len(t.get_text().splitlines()) for t in lists) == count


@pytest.mark.parametrize("depth, spaces", [(0, 0), (3, 3), (8, 8), (39, 8)])
def test_deep_nesting_indents_at_most_eight_levels(depth, spaces):
    pytest.importorskip("plotly")
    from profiling.reports.html.formatting import indent

    assert indent(depth) == "\u2003" * spaces


@pytest.mark.parametrize("entries, side", [(1, "h"), (8, "h"), (9, "v"), (40, "v")])
def test_a_chart_with_many_legend_entries_puts_its_legend_beside_the_plot(entries, side):
    pytest.importorskip("plotly")
    from profiling.reports.html.run_charts import legend_layout

    layout = legend_layout(entries)
    assert layout["orientation"] == side and (side == "h" or layout["x"] > 1)


@pytest.mark.parametrize("columns, memory, time", [
    ({"tensor_peak_mb": [float("nan")] * 2}, None, "cpu_time_ms_median"),
    ({"cuda_peak_mb": [float("nan")] * 2, "tensor_peak_mb": [1.0, 2.0]}, "tensor_peak_mb",
     "cpu_time_ms_median"),
    ({"cuda_time_ms_median": [float("nan")] * 2, "cuda_peak_mb": [3.0, None]}, "cuda_peak_mb",
     "cpu_time_ms_median"),
    ({"cpu_time_ms_median": [float("nan")] * 2}, None, None)])
def test_a_column_of_missing_values_only_is_not_shown(columns, memory, time):
    from profiling.statistics.aggregate import first_column, time_column

    stages = pd.DataFrame({"stage": ["a", "b"], "cpu_time_ms_median": [1.0, 2.0], **columns})
    assert first_column(stages, "cuda_peak_mb", "tensor_peak_mb") == memory
    assert time_column(stages) == time
    summary = format_summary(stages.assign(kind="stage", depth=0, call_index=0, parent="",
                                           out_bytes=8, order=[0, 1]))
    assert ("peak MB" in summary.splitlines()[0]) == (memory is not None)
