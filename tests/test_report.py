"""The HTML report (issue 27): a page per run, comparison and sweep, from run folders, a
ProfileResult and the command line, self-contained; bad input is one line and exit 2."""

from __future__ import annotations

import re

import pandas as pd
import pytest

pytest.importorskip("plotly")

from profiling.reports import report_page, result_page  # noqa: E402
from profiling.reports.html.stage_tree import ROOT, exclusive_values, parent_keys, stage_calls  # noqa: E402
from profiling.reports import read_run  # noqa: E402
from profiling.reports.html.page import page_data, shown_html  # noqa: E402
from report_runs import STAGE_NAMES, tiny_run, tiny_sweep  # noqa: E402
from tests.cli_runner import run_main  # noqa: E402
from zoo.tools import report as report_tool  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return {"a": tiny_run(root / "a", report=True), "b": tiny_run(root / "b", width=16),
            "other": tiny_run(root / "other", name="other"), "sweep": tiny_sweep(root / "sweep")}


def _values(array) -> list:
    """A figure's array as a list (plotly writes numeric arrays as base64 typed arrays)."""
    if isinstance(array, dict) and "bdata" in array:
        import base64

        import numpy as np
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).tolist()
    return list(array)


def test_parents_are_the_last_open_call_one_level_up():
    stages = pd.DataFrame({"stage": ["a", "b", "c", "b", "d"], "kind": "stage",
                           "depth": [0, 1, 2, 1, 0], "call_index": [0, 0, 0, 1, 0],
                           "order": range(5), "flops": [10.0, 4.0, 3.0, 5.0, 2.0]})
    calls = stage_calls(stages)
    parents = parent_keys(calls)
    assert parents == [ROOT, "a#0", "b#0", "a#0", ROOT]
    own, root = exclusive_values(calls, parents, calls["flops"], total=15.0)
    assert own.tolist() == [1.0, 1.0, 3.0, 5.0, 2.0]  # a: 10 - 4 - 5; b#0: 4 - 3
    assert root == 3.0  # 15 - (10 + 2): outside every stage


def test_a_chain_of_only_children_is_one_block():
    """a holds only b, which holds only c (and b's 'other' row): one block a › b › c, with
    b/other under it; e, one of two children of d, stays a block of its own."""
    from profiling.reports.html.stage_tree import collapse_chains

    stages = pd.DataFrame({"stage": ["a", "b", "c", "b/other", "d", "e", "f"],
                           "kind": ["stage", "stage", "stage", "other", "stage", "stage",
                                    "stage"], "depth": [0, 1, 2, 2, 0, 1, 1],
                           "call_index": 0, "order": range(7),
                           "parent": ["", "a", "b", "b", "", "d", "d"]})
    calls = stage_calls(stages, other=True)
    keep, parents, labels = collapse_chains(calls, parent_keys(calls), list(calls["stage"]))
    assert [k for k, kept in zip(calls["key"], keep) if kept] == ["a#0", "b/other#0", "d#0",
                                                                   "e#0", "f#0"]
    assert labels[0] == "a \u203a b \u203a c"
    assert [p for p, kept in zip(parents, keep) if kept] == [ROOT, "a#0", ROOT, "d#0", "d#0"]


def test_an_icicle_block_says_as_much_as_fits_in_it():
    """A block's label is as wide as the block allows (7 px a character in a 1290-pixel
    icicle): the whole label in a wide block, without the time in a narrower one, the name
    alone in a narrow one; a block too narrow for any keeps the whole (plotly hides it)."""
    from profiling.reports.html.run_charts import _block_text

    values = pd.Series([50.0, 8.0, 2.0, 0.01])  # of 100: 645, 103, 25.8 and 0.13 px
    assert _block_text(["backbone", "fpn", "ab", "tiny"], values, "ms", 100.0) == [
        "backbone \u00b7 50.0 ms \u00b7 50.0%", "fpn \u00b7 8.0%", "ab",
        "tiny \u00b7 0.0100 ms \u00b7 0.0%"]


def test_a_run_page_holds_every_stage_chart_and_figure(runs):
    page_html = shown_html((runs["a"] / "report.html").read_text())
    data = page_data(page_html)
    assert sorted(data["charts"]) == ["icicle", "payload", "roofline", "split-bytes",
                                      "split-latency"]
    assert data["stages"] == ["stem#0", "sizes#0", "body#0", "conv#0", "head#0", "head#1"]
    icicle = data["charts"]["icicle"]["data"][0]
    # every 'other' block under its parent, in forward order; body's only stage, conv, is
    # drawn in one block with it (body › conv)
    assert icicle["ids"] == [ROOT, "stem#0", "sizes#0", "body#0", "body/other#0",
                             "head#0", "head#1", "other#0"]
    assert icicle["parents"] == ["", ROOT, ROOT, ROOT, "body#0", ROOT, ROOT, ROOT]
    assert icicle["labels"][3] == "body \u203a conv"
    flops = next(b for b in data["charts"]["icicle"]["layout"]["updatemenus"][0]["buttons"]
                 if b["label"] == "FLOPs")["args"][0]["values"][0]
    # hand counts: stem 2*55296, body's ReLU 2048 (its other block) beside its conv
    # 2*147456 (the body › conv block's own), head 2*4096, nothing outside the stages
    assert _values(flops) == [0.0, 110592, 0, 294912, 2048, 8192, 8192, 0]
    payload = data["charts"]["payload"]["data"]
    zero = next(t for t in payload if t["name"] == "output of 0 bytes")
    assert zero["customdata"] == ["sizes#0"]
    depth0 = next(t for t in payload if t["name"] == "output, depth 0")
    # stem 1x8x16x16 float32 = 8192 bytes; head 1x2x16x16 = 2048
    assert _values(depth0["y"]) == [0.008192, 0.0, 0.008192, 0.002048, 0.002048]
    for name in STAGE_NAMES:
        assert f'data-name="{name}"' in page_html
    assert "model.width=8" in page_html and "torch" in page_html
    assert not re.search(r'<(script|link|img)[^>]+(src|href)=', page_html)  # nothing loaded
    assert len(page_html.encode()) < 2.5e6  # plotly.js gzip-compressed inside the page


def test_a_profile_result_gives_the_same_page_without_a_folder():
    from profiling import profile_model
    import torch
    from report_runs import Tiny

    result = profile_model(Tiny().eval(), (torch.randn(1, 3, 16, 16),),
                           collectors=["payload", "op_counts"])
    data = page_data(result_page(result).render())
    assert data["stages"] == ["stem#0", "sizes#0", "body#0", "conv#0", "head#0", "head#1"]
    assert "roofline" not in data["charts"]  # not timed: no roofline, no latency
    assert "split-latency" not in data["charts"]


def test_a_comparison_marks_significance_and_lists_lone_stages(runs, tmp_path, capsys,
                                                              monkeypatch):
    out = tmp_path / "compare.html"
    done = run_main(lambda: report_tool.main(), [str(runs["a"]), str(runs["b"]), "--out",
                                                  str(out)], capsys, monkeypatch)
    assert done.code == 0 and done.stdout.strip() == f"report: {out.resolve()}"
    page_html = shown_html(out.read_text())
    data = page_data(page_html)
    ratios = data["charts"]["ratios"]["data"][0]
    assert ratios["name"] == "B / A" and "stem#0" in ratios["customdata"]
    assert "model.width: 8 -&gt; 16" in page_html
    assert "Every stage call is in both A and B." in page_html


def test_a_sweep_page_has_a_row_per_job_and_the_failed_reason(runs):
    page = report_page([runs["sweep"]])
    page_html = shown_html(page.render())
    rows = page.data["sweep_plot"]["rows"]
    assert [r["job"] for r in rows] == ["model.width=4", "model.width=8", "model.width=16"]
    assert [r["model.width"] for r in rows] == ["4", "8", "16"]
    assert rows[0]["GFLOPs"] == pytest.approx(2 * (3 * 9 * 4 + 4 * 9 * 4 + 4 * 2 * 2) * 256 / 1e9
                                              + 4 * 256 / 1e9)
    assert rows[2]["forward ms"] is None
    assert "RuntimeError: input.size=[1,1] is below the stem&#39;s kernel" in page_html
    stacked = page.charts["stacked"].to_plotly_json()["data"]
    assert [t["name"] for t in stacked] == ["stem", "sizes", "body", "head"]
    assert list(stacked[0]["x"]) == ["model.width=4", "model.width=8"]
    assert dict(page.facts)["swept options"] == "model.width"


def test_only_the_options_that_vary_are_swept():
    """``device=cpu`` given to every job is not a swept option."""
    from types import SimpleNamespace

    from profiling.reports.runs import swept_options

    records = [SimpleNamespace(overrides={"device": "cpu", "input.size": size}, config={})
               for size in ("[64,64]", "[128,128]")]
    assert swept_options(records) == ["input.size"]


@pytest.mark.parametrize("case, expected", [
    ("missing", "is not a folder; give run folders or a sweep folder"),
    ("empty", "is neither a run nor a sweep"),
    ("models", "profile different models, which cannot be compared stage by stage: "
               "5 of 5 stages of tiny match by name (stem, sizes, body, conv, head)"),
    ("failed", "has no finished job"),
    ("out", "give --out a file name ending in .html"),
])
def test_bad_input_is_one_line_and_exit_2(case, expected, runs, tmp_path, capsys, monkeypatch):
    (tmp_path / "empty").mkdir()
    failed = tmp_path / "failed"
    from profiling.reports import write_failure
    write_failure(failed / "0_x", ValueError("no"))
    argv = {"missing": [str(tmp_path / "nowhere")], "empty": [str(tmp_path / "empty")],
            "models": [str(runs["a"]), str(runs["other"])], "failed": [str(failed)],
            "out": [str(runs["a"]), "--out", str(tmp_path / "x.png")]}[case]
    done = run_main(lambda: report_tool.main(), argv, capsys, monkeypatch)
    assert done.code == 2
    assert expected in done.line


def test_options_that_differ_from_the_defaults_head_the_page(runs):
    record = read_run(runs["b"])
    defaults = {"model": {"name": "tiny", "width": 8}, "input": {"size": [16, 16], "batch": 1},
                "run": {"repeats": 5, "dtype": "float32"}, "device": {"name": "cpu"}}
    page = report_page([runs["b"]], defaults=lambda r: defaults)
    facts, strip = dict(page.facts), dict(page.strip)
    assert facts["options (not default)"] == "model.width=16 run.repeats=3"
    assert facts["model"] == "tiny" and strip["precision"] == "float32"
    assert record.meta["versions"]["torch"] == facts["torch"]
    assert strip["parameters"] == f"{record.meta['parameters']:,}"
    assert strip["input"] == "1\u00d73\u00d716\u00d716"  # what the first stage received


def test_a_run_page_lists_the_recorded_options_and_report_true():
    """meta.json's ``options`` (what differs from the defaults: no ``model=NAME`` that is the
    default) are listed as recorded, ``plots=true`` and ``report=true`` among them; a run
    that recorded none lists its overrides and ``report=true``, which says how the page was
    made."""
    from types import SimpleNamespace

    from profiling.reports.html.header import option_changes

    recorded = ["model.stage_depth=2", "plots=true", "report=true"]
    record = SimpleNamespace(meta={"options": recorded}, overrides={
        "model": "faster_rcnn", "model.stage_depth": "2", "plots": "true", "report": "true"},
        config={"report": True, "plots": True})
    assert option_changes(record) == recorded
    assert option_changes(record, defaults={"model": {"stage_depth": 1}}) == recorded
    record.meta = {}
    assert option_changes(record) == ["model=faster_rcnn", "model.stage_depth=2", "plots=true",
                                      "report=true"]


def test_the_page_lists_the_options_the_terminal_printed():
    """The page's options come from where the terminal's options line comes from
    (zoo.tools.changed_options), so that none is dropped: plots=true and report=true too."""
    from types import SimpleNamespace

    from profiling.reports.html.header import option_changes
    from zoo.tools.changed_options import changed_options, options_line

    overrides = ["model=swiftnet", "input.size=[64,128]", "plots=true", "report=true"]
    recorded = changed_options(overrides)
    record = SimpleNamespace(meta={"options": recorded}, overrides={}, config={"report": True})
    listed = option_changes(record)
    assert listed == ["model=swiftnet", "input.size=[64,128]", "plots=true", "report=true"]
    assert options_line(overrides) == f"options: {' '.join(listed)} (the rest are the defaults)"


def test_report_true_writes_the_page_with_the_run(tmp_path):
    from zoo.tools.job import run_profile
    from zoo.tools.composition import compose_config

    run = run_profile(compose_config(["model=swiftnet", "device=meta", "input.size=[64,128]",
                                      "report=true"]), tmp_path / "run", print_summary=False)
    assert "report.html" in [p.name for p in run.files]
    data = page_data((tmp_path / "run" / "report.html").read_text())
    assert data["stages"][:3] == ["encoder#0", "stem#0", "layer1#0"]


@pytest.mark.parametrize("given, shown", [([16, 24], "batch 2, size 16\u00d724"),
                                          (None, "batch 2, size the model default")])
def test_the_header_says_the_input_size_or_that_it_is_the_default(given, shown):
    from profiling.reports.html.header import run_facts

    record = read_run_like({"input": {"size": given, "batch": 2}})
    assert dict(run_facts(record))["input asked for"] == shown


def read_run_like(config: dict):
    """A record with only a config and an empty meta: what run_facts reads."""
    from types import SimpleNamespace

    return SimpleNamespace(meta={}, config=config, overrides=[])


def test_the_ratio_chart_gives_every_stage_call_a_labelled_row(runs):
    """A merge once swallowed the chart's margins into a comment: plotly's default margins
    then left a blank band over the rows and squeezed them until every other name was hidden."""
    pytest.importorskip("plotly")
    from profiling.reports.comparison import compare_runs
    from profiling.reports.html.compare_page import _ratio_figure

    table = compare_runs(runs["a"], runs["b"], loaded=True)
    figure = _ratio_figure({"B": table}, "cpu_time_ms_median")
    rows = len(figure.data[0].y)
    assert rows == len(table[table["present"] == "both"].dropna(subset=["time_ratio"]))
    assert figure.layout.height == 120 + 22 * rows
    assert (figure.layout.margin.t, figure.layout.margin.b) == (30, 50)
    assert (figure.layout.yaxis.tickmode, figure.layout.yaxis.dtick) == ("linear", 1)


@pytest.mark.parametrize("value, shown", [(3461.2, "3,461"), (1234567.8, "1,234,568"),
                                          (7.1e-4, "0.000710"), (12.345, "12.3"),
                                          (9.996, "10.0"), (0.5, "0.500"), (None, "-")])
def test_pages_write_numbers_plainly(value, shown):
    from profiling.reports.html.formatting import significant

    assert significant(value) == shown


def test_intervals_take_an_en_dash_and_large_changes_a_factor():
    from profiling.reports.html.formatting import factor, span

    assert span(3461, 3972) == "3,461\u20133,972" and span(None, 2) == "-"
    assert (factor(12.34), factor(0.05), factor(1.125), factor(0.8)) == (
        "12.3x", "1/20.0x", "+12.5%", "\u221220.0%")


def test_the_stage_detail_panel_holds_a_call_s_figures(runs):
    """What the panel shows for body's conv, against hand counts: 3x3 conv 8->8 channels on
    16x16, 2 * 8*8*9 * 256 FLOPs; an 8x16x16 float32 map in and out; the times of times.csv
    in the order the repeats ran."""
    from profiling.reports.html.formatting import significant
    from profiling.reports.html.run_page import run_page

    details = dict(map(tuple, run_page(runs["a"]).data["details"]["conv#0"]))
    assert details["inside"] == "body" and details["calls of this stage"] == "1"
    assert details["GFLOPs"] == "0.000295" and 2 * 8 * 8 * 9 * 256 == 294912
    assert details["input MB"] == details["output MB"] == "0.00819"  # 8*16*16*4 bytes
    assert details["output shapes"] == "[1, 8, 16, 16]"
    times = pd.read_csv(runs["a"] / "times.csv")
    conv = times[times["stage"] == "conv"].sort_values("repeat")["cpu_time_ms"]
    assert details["each repeat (ms)"] == ", ".join(significant(t) for t in conv)
    assert details["75% CI"].endswith(" ms") and "\u2013" in details["75% CI"]


def test_a_chart_of_many_rows_has_its_x_axis_on_top():
    """A comparison's chart taller than a screen (a row per stage call) shows its scale with
    its first rows: the x axis on top, the legend under it; a short one keeps them as they
    are."""
    from profiling.reports.html.compare_page import TALL_ROWS, _axis_in_view

    legend = {"orientation": "h", "y": 1.02}
    assert _axis_in_view(TALL_ROWS - 1, legend) == {
        "margin": {"t": 30, "l": 10, "r": 10, "b": 50}, "legend": legend}
    tall = _axis_in_view(TALL_ROWS, legend)
    assert tall["xaxis_side"] == "top" and tall["legend"]["y"] == 0
