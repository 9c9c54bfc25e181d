"""time.png renders the run's view: linear bars, slowest first and 'other' last, labelled in
ms and % of the forward; one level deeper where one stage holds over 80% (issue 35)."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from profiling.reports.record import RunRecord  # noqa: E402
from profiling.reports.time_plot import stage_time_rows, time_figure  # noqa: E402
from profiling.reports.view import run_view  # noqa: E402


def _view(backbone_ms: float):
    stages = pd.DataFrame({
        "stage": ["stem", "backbone", "conv", "backbone/other", "head", "other"],
        "kind": ["stage", "stage", "stage", "other", "stage", "other"],
        "parent": ["", "", "backbone", "backbone", "", ""], "depth": [0, 0, 1, 1, 0, 0],
        "call_index": 0, "order": [0, 1, 2, 5, 3, 6], "out_bytes": 0,
        "cpu_time_ms_median": [1.0, backbone_ms, backbone_ms - 2.0, 2.0, 3.0, 0.5]})
    forward = [1.0 + backbone_ms + 3.0 + 0.5] * 3
    return run_view(RunRecord(None, "ok", meta={"forward_ms": forward}, stages=stages))


def test_bars_are_sorted_with_other_last_and_labelled_in_ms_and_percent():
    view = _view(5.5)  # forward 10 ms: backbone 55%
    rows, opened = stage_time_rows(view)
    assert list(rows.index) == ["backbone", "head", "stem", "other"] and opened == []
    axes = time_figure(view).axes[0]
    assert axes.get_xscale() == "linear"
    assert [t.get_text().strip() for t in axes.texts] == [
        "5.50 ms  55.0%", "3.00 ms  30.0%", "1.00 ms  10.0%", "0.500 ms  5.0%"]
    assert "whiskers: 75% CI" in axes.get_title(loc="left")  # 3 repeats


def test_a_stage_over_80_percent_is_drawn_as_its_stages():
    view = _view(45.5)  # forward 50 ms: backbone 91%
    rows, opened = stage_time_rows(view)
    assert opened == ["backbone"]
    assert list(rows.index) == ["conv", "head", "stem", "backbone/other", "other"]
    assert "backbone holds over 80% of the forward" in time_figure(view).axes[0].get_title(
        loc="left")
