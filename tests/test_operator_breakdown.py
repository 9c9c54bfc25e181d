"""Each stage call's operator breakdown: the op counter's counts per operator (operators.csv),
read back as written, shown in the page's detail panel from the run view; a runtime run's
node times in its place."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

from profiling import profile_model, stage, write_run
from profiling.reports import read_run, run_record, run_view
from profiling.reports.html.stage_detail import OPERATORS_SHOWN, operator_lines
from report_runs import tiny_run

pytest.importorskip("plotly")

#: Tiny's conv stage: a 3x3 convolution, 8 -> 8 channels on 16x16, no bias.
CONV_FLOPS = 2 * 8 * 8 * 9 * 16 * 16
#: Its bytes: the 8x16x16 float32 map read, the 8x8x3x3 weight read, the map written.
CONV_BYTES = (8 * 16 * 16 + 8 * 8 * 9) * 4 + 8 * 16 * 16 * 4


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return tiny_run(tmp_path_factory.mktemp("operators") / "run", report=True)


def test_operators_csv_holds_each_call_s_operators_and_adds_up_to_its_counts(run):
    operators = pd.read_csv(run / "operators.csv")
    stages = pd.read_csv(run / "stages.csv").set_index(["stage", "call_index"])
    conv = operators[operators["stage"] == "conv"]
    assert list(conv["operator"]) == ["aten.convolution"]
    assert conv["flops"].iloc[0] == CONV_FLOPS and conv["calls"].iloc[0] == 1
    assert conv["bytes_read"].iloc[0] + conv["bytes_written"].iloc[0] == CONV_BYTES
    # body holds its conv stage and the ReLU after it: inclusive, as body's own counts
    assert set(operators.loc[operators["stage"] == "body", "operator"]) == {
        "aten.convolution", "aten.relu"}
    for (name, call), rows in operators.groupby(["stage", "call_index"]):
        for column in ("flops", "macs", "bytes_read", "bytes_written"):
            assert rows[column].sum() == stages.loc[(name, call), column], (name, column)
    assert len(operators.groupby(["stage", "call_index"])) == 5  # sizes runs no operator


def test_the_breakdown_reads_back_as_it_was_made(tmp_path):
    from report_runs import Tiny

    torch.manual_seed(0)
    model = Tiny().eval()
    result = profile_model(model, (torch.randn(1, 3, 16, 16),), collectors=["payload",
                                                                             "op_counts"])
    write_run(result, tmp_path / "run", model)
    made = run_view(run_record(result, model)).operators
    read = run_view(tmp_path / "run").operators
    assert list(made.columns[-2:]) == ["key", "share"] and len(made) == 6
    pd.testing.assert_frame_equal(made, read, check_dtype=False)


def test_the_detail_panel_lists_the_operators_of_the_run_view(run):
    from profiling.reports.html.run_page import run_page

    view = run_view(run)
    assert view.operators is not None
    conv = view.operators[view.operators["key"] == "conv#0"]
    assert conv["share"].tolist() == [100.0]
    details = run_page(read_run(run)).data["details"]
    assert details["conv#0"][-2:] == [
        ["operators", "counted: GFLOPs (share of the call's), MB read and written"],
        ["aten.convolution", f"0.000295 GFLOPs (100.0%), {CONV_BYTES / 1e6:.3g} MB"]]
    body = dict(map(tuple, details["body#0"]))
    relu = 8 * 16 * 16  # one FLOP per element
    share = 100 * CONV_FLOPS / (CONV_FLOPS + relu)
    assert body["aten.convolution"].startswith(f"0.000295 GFLOPs ({share:.1f}%), ")
    assert body["aten.relu"].startswith(f"0.00000205 GFLOPs ({100 - share:.1f}%), ")
    assert "operators" not in dict(map(tuple, details["sizes#0"]))


class _Wide(nn.Module):
    """One stage that runs more kinds of operator than a panel lists."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with stage("many", x) as s:
            y = torch.tanh(torch.sigmoid(torch.exp(torch.sin(torch.cos(x)))))
            y = torch.abs(torch.neg(torch.sqrt(torch.relu(y) + 1) * 2))
            return s.output(y)


def test_a_panel_lists_the_largest_operators_and_counts_the_rest(tmp_path):
    model = _Wide().eval()
    result = profile_model(model, (torch.randn(1, 4),), collectors=["payload", "op_counts"])
    write_run(result, tmp_path / "run", model)
    view = run_view(tmp_path / "run")
    operators = view.operators[view.operators["key"] == "many#0"]
    assert len(operators) > OPERATORS_SHOWN
    lines = operator_lines(view)["many#0"]
    assert len(lines) == 1 + OPERATORS_SHOWN + 1
    rest = len(operators) - OPERATORS_SHOWN
    assert lines[-1] == ["\u2026", f"{rest} more operator{'s' if rest > 1 else ''} "
                                   f"(operators.csv lists them all)"]
    flops = operators["flops"].tolist()
    assert flops == sorted(flops, reverse=True)  # the largest first
