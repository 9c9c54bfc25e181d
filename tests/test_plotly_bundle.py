"""The plotly.js a page holds: the installed bundle with only the page's trace types
registered (the browser tests draw every page with it), the whole bundle where it cannot be
read."""

from __future__ import annotations

import base64
import gzip

import pytest

pytest.importorskip("plotly")

from profiling.reports.html import plotly_bundle  # noqa: E402
from profiling.reports.html.plotly_bundle import (packed_plotly_js, page_traces,  # noqa: E402
                                                  partial_plotly_js, plotly_js, trace_entries)


def test_the_installed_bundle_s_trace_modules_are_found():
    register, entries = trace_entries(plotly_js())
    traces = [trace for _, trace in entries if trace is not None]
    assert {"bar", "icicle", "treemap", "heatmap", "scatter3d"} <= set(traces)
    assert "scatter" not in traces  # plotly's core registers it
    assert len(traces) == len(set(traces)) >= 40  # one module per trace type


def test_a_partial_bundle_registers_only_the_page_s_trace_types():
    whole = plotly_js()
    partial = partial_plotly_js(frozenset({"icicle", "bar"}))
    register, entries = trace_entries(partial)
    assert sorted(trace for _, trace in entries if trace) == ["bar", "icicle"]
    assert len(whole) - len(partial) == len(trace_entries(whole)[0].group(1)) - len(
        register.group(1))  # nothing else of the bundle changed
    packed = packed_plotly_js(frozenset({"icicle", "bar"}))
    assert gzip.decompress(base64.b64decode(packed)).decode() == partial


def test_a_bundle_of_another_shape_or_an_unknown_trace_type_is_kept_whole(monkeypatch):
    assert partial_plotly_js(frozenset({"no-such-trace"})) == plotly_js()
    odd = "var Plotly = {}; /* no register call */"
    monkeypatch.setattr(plotly_bundle, "plotly_js", lambda: odd)
    partial_plotly_js.cache_clear()
    try:
        assert trace_entries(odd) is None
        assert partial_plotly_js(frozenset({"bar"})) == odd
    finally:
        partial_plotly_js.cache_clear()


def test_a_page_s_trace_types_come_from_its_charts():
    charts = [{"data": [{"type": "icicle"}, {"type": "bar"}]}, {"data": [{"x": [1]}]}]
    assert page_traces(charts) == frozenset({"icicle", "bar", "scatter"})
