"""The split view of a run's page (issue 35): cuts after the stage calls at every depth the run
has, in the order they end, bytes on a log axis, latency ticks in ms or s, each line named at
its right end, and "fewest bytes" that says so where it is the network's output."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from profiling.reports.split_figures import label_heights, latency_ticks

pytest.importorskip("plotly", reason="the report extra (plotly) is not installed")

from profiling.reports.html.split_view import (  # noqa: E402
    cut_bytes_figure, fewest_bytes, latency_figure, stage_cuts)


def _stages(last_child_bytes: int = 20) -> pd.DataFrame:
    """Two top-level calls with nested ones, as a run with model.stage_depth=2 records them
    (in the order they started): A (10 ms) holds a1 (4 ms) and a2 (5 ms); B (6 ms) holds b1
    (6 ms), which ends where B does."""
    rows = [("A", 0, 100, 50, 10.0), ("a1", 1, 100, 80, 4.0), ("a2", 1, 80, 50, 5.0),
            ("B", 0, 50, 20, 6.0), ("b1", 1, 50, last_child_bytes, 6.0)]
    return pd.DataFrame([{"stage": stage, "call_index": 0, "depth": depth, "kind": "stage",
                          "order": order, "in_bytes": inputs, "out_bytes": output,
                          "cpu_time_ms_median": time}
                         for order, (stage, depth, inputs, output, time) in enumerate(rows)])


def test_cuts_follow_every_stage_call_in_the_order_calls_end():
    cuts = stage_cuts(_stages())
    assert list(cuts["cut"]) == ["input", "after a1", "after a2", "after A", "after b1",
                                 "after B"]
    assert list(cuts["depth"]) == [0, 1, 1, 0, 1, 0]
    # the output of the call before the cut or the input of the call that starts next
    assert list(cuts["raw_bytes"]) == [100, 80, 50, 50, 20, 20]
    assert list(cuts["top_index"]) == [0, 0, 0, 0, 1, 1]
    # inside A: a1's 4 of A's 10 ms, then a1 and a2's 9; b1 is all of B
    assert list(cuts["top_fraction"]) == [0.0, 0.4, 0.9, 1.0, 1.0, 1.0]
    assert list(cuts["last"]) == [False] * 5 + [True]


def test_a_nested_cut_s_latency_takes_the_share_its_calls_ended():
    """At 8 Mbit/s (1 byte per microsecond) with the server as fast: after a1, the device
    did 4 ms, sends 80 bytes (0.08 ms) and the server does A's other 6 and B's 6."""
    from profiling.reports.html.split_view import _latency

    latency = _latency(_stages(), stage_cuts(_stages()), 1, (8.0,)).set_index("cut")
    assert math.isclose(latency.loc["after a1", "latency_ms"], 4 + 0.08 + 12, rel_tol=1e-9)
    assert math.isclose(latency.loc["after a2", "latency_ms"], 9 + 0.05 + 7, rel_tol=1e-9)


def test_fewest_bytes_at_the_end_of_the_forward_says_it_is_the_output():
    cuts = stage_cuts(_stages())  # b1 and B both send 20 bytes: B ends the forward
    fewest, output_text = fewest_bytes(cuts)
    assert cuts.loc[fewest, "cut"] == "after B"
    assert output_text == "fewest bytes: the output of the network (nothing split)"
    inside = stage_cuts(_stages(last_child_bytes=10))
    fewest, text = fewest_bytes(inside)
    assert inside.loc[fewest, "cut"] == "after b1" and text == "fewest bytes"
    figure = cut_bytes_figure(cuts)
    assert figure.layout.yaxis.type == "log"  # even where bytes span less than 100x
    assert figure.layout.annotations[0].text == output_text
    assert figure.layout.annotations[0].x == figure.data[0].x[-1]  # on the last cut's bar
    assert list(figure.data[0].y) == [1e-4, 8e-5, 5e-5, 5e-5, 2e-5, 2e-5]  # MB


def test_latency_lines_are_named_at_their_right_ends_with_readable_ticks():
    stages = _stages()
    figure = latency_figure(stages, stage_cuts(stages))
    named = list(figure.layout.annotations)
    lines = [trace.name for trace in figure.data if trace.visible and trace.name != "best cut"]
    assert [a.text for a in named] == lines  # each line drawn named once, in forward order
    # the top-level cuts, and a nested one where it is the best (b1 ties B at 20 bytes)
    assert {"input", "after A", "after B", "after b1"} <= set(lines)
    assert all(a.x == 4.0 and a.xanchor == "left" for a in named)  # log10(10,000 Mbit/s)
    heights = sorted(a.y for a in named)
    assert min(np.diff(heights)) > 0  # no two labels at one height
    ticks = figure.layout.yaxis.ticktext
    assert ticks and all(t.endswith((" ms", " s")) and "e" not in t.split()[0] for t in ticks)
    # a button per server speed-up, each with its own labels
    buttons = figure.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["server as fast", "server 4\u00d7 faster",
                                          "server 16\u00d7 faster"]
    assert len(buttons[0].args[1]["annotations"]) == len(lines)
    assert all(len(b.args[1]["annotations"]) == sum(b.args[0]["visible"]) - 1  # less the band
               for b in buttons)


def test_latency_ticks_by_hand():
    assert latency_ticks(15, 3000) == ([20, 50, 100, 200, 500, 1000, 2000],
                                       ["20 ms", "50 ms", "100 ms", "200 ms", "500 ms", "1 s",
                                        "2 s"])
    assert latency_ticks(0.5, 20_000) == ([1, 10, 100, 1000, 10_000],
                                          ["1 ms", "10 ms", "100 ms", "1 s", "10 s"])


def test_end_labels_move_apart_only_where_they_meet():
    # 2 decades on 330 px: a 13 px line is 0.0788 decades; 10 and 10.1 are 0.0043 apart, so
    # their labels spread a line apart around their mean; 100's stays at its line
    gap = 2 * 13 / 330
    mean = (1 + math.log10(10.1)) / 2
    heights = label_heights([10.1, 100.0, 10.0], 2.0, 330.0)
    assert heights == pytest.approx([10 ** (mean + gap / 2), 100.0, 10 ** (mean - gap / 2)])
    assert label_heights([1.0, 10.0], 2.0, 330.0) == pytest.approx([1.0, 10.0])


@pytest.mark.parametrize("output_bytes, label", [
    (10, "fewest bytes inside the forward: a (the network's output sends no more)"),
    (50, "fewest bytes inside the forward: a")])
def test_the_timeline_png_says_when_the_output_sends_fewer(output_bytes, label):
    pytest.importorskip("matplotlib", reason="the plots extra is not installed")
    from profiling.reports.split_plots import _fewest_label

    cuts = pd.DataFrame({"cut": ["input", "a", "output"], "kind": ["input", "stage", "output"],
                         "raw_bytes": [100, 40, output_bytes], "min_cut": [False, True, False]})
    assert _fewest_label(cuts, cuts[cuts["min_cut"]]) == label


def test_log_ticks_write_each_number_in_full():
    """The comparison page's ratio axis: 0.2 and 0.5 written so, not plotly's bare 2 and 5."""
    from profiling.reports.numbers import log_ticks

    assert log_ticks(0.15, 6) == ([0.2, 0.5, 1, 2, 5], ["0.2", "0.5", "1", "2", "5"])
    assert log_ticks(0.004, 2500) == ([0.01, 0.1, 1, 10, 100, 1000],
                                      ["0.01", "0.1", "1", "10", "100", "1,000"])
    assert log_ticks(1.2, 1.5) == ([1.2, 1.5], ["1.2", "1.5"])  # narrower than a step: its ends
    assert log_ticks(0, 5) == ([], [])
