"""One view of a run, many faces (issue 35): the terminal, stages.csv, meta.json, time.png and
the run's page state the same rows in the same order, the same interval label (its true
coverage) and the same numbers, for a PyTorch run and an ONNX Runtime int8 run. Every
expected figure is recomputed here from times.csv and meta.json, not taken from the view."""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from profiling import profile_model, write_run
from profiling.reports import format_summary, read_run
from profiling.reports.html.page import page_data, shown_html
from profiling.reports.numbers import significant
from profiling.reports.summary import RunTotals
from profiling.reports.view import forward_order, run_view
from report_runs import Tiny

pytest.importorskip("plotly")
pytest.importorskip("matplotlib")

#: The rows of Tiny's terminal table in forward order, each 'other' row under its parent.
TINY_ROWS = ["stem", "sizes", "body", "conv", "body/other", "head", "other"]
#: Tiny's stage calls and 'other' rows, as stages.csv and the page list them.
TINY_CALLS = ["stem", "sizes", "body", "conv", "body/other", "head", "head[1]", "other"]


def _torch_run(folder: Path, repeats: int = 5) -> Path:
    torch.manual_seed(0)
    model = Tiny().eval()
    result = profile_model(model, (torch.randn(1, 3, 16, 16),), warmup=1, repeats=repeats,
                           collectors=["payload", "tensor_memory", "op_counts", "cpu_time"])
    write_run(result, folder, model, config={"model": {"name": "tiny"},
                                             "run": {"repeats": repeats, "dtype": "float32"}},
              report=True, plots=True)
    return folder


def _terminal(folder: Path) -> list[str]:
    """What the command line prints for the run folder (zoo/tools/job.py's call)."""
    record = read_run(folder)
    totals = RunTotals(forward_ms=record.meta["forward_ms"], parameters=1, macs=None,
                       flops=(record.meta.get("totals") or {}).get("flops"), in_bytes=0,
                       out_bytes=0)
    return format_summary(record.stages, times=record.times, totals=totals,
                          coverage=record.meta.get("coverage"), meta=record.meta).splitlines()


def _terminal_rows(lines: list[str]) -> dict[str, tuple[str, str]]:
    """``{name: (time, share)}`` of the terminal table's rows, in their order."""
    rows = {}
    for line in lines[2:]:
        if line.startswith("total (whole forward"):
            break
        cells = line[41:].split()
        other = not line[41:47].strip()  # an other row has no call count
        rows[line[:41].strip()] = (cells[0 if other else 1],
                                   next(c for c in cells if c.rstrip("*").endswith("%")))
    return rows


def _page_table(page: str) -> tuple[list[str], list[tuple[str, dict[str, str]]]]:
    """The stage table's headers and rows: ``(data-name, {header: data-value or text})``."""
    table = page[page.index('id="stages"'):]
    table = table[:table.index("</table>")]
    headers = [html.unescape(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    rows = []
    for attributes, cells in re.findall(r"<tr([^>]*)>(.*?)</tr>", table.split("<tbody>")[1]):
        name = html.unescape(re.search(r'data-name="([^"]*)"', attributes).group(1))
        values = [value or html.unescape(text) for value, text in
                  re.findall(r'<td[^>]*?(?: data-value="([^"]*)")?>(.*?)</td>', cells)]
        rows.append((name, dict(zip(headers, values))))
    return headers, rows


def _expected_times(folder: Path) -> tuple[dict[str, float], float]:
    """Per row name, the median over the repeats of the calls' times summed (times.csv), and
    the forward's median (meta.json)."""
    times = pd.read_csv(folder / "times.csv")
    per_repeat = times.groupby(["stage", "repeat"])["cpu_time_ms"].sum()
    medians = {name: max(float(np.median(values)), 0.0)
               for name, values in per_repeat.groupby(level="stage")}
    forward = json.loads((folder / "meta.json").read_text())["forward_ms"]
    return medians, float(np.median(forward))


def _png_bars(folder: Path) -> dict[str, str]:
    """time.png's bars as drawn: ``{stage: its label}`` (the same figure the PNG is)."""
    from profiling.reports.time_plot import time_figure

    axes = time_figure(run_view(folder)).axes[0]
    names = [tick.get_text() for tick in axes.get_yticklabels()]
    texts = [text.get_text().strip() for text in axes.texts]
    return dict(zip(names, texts)), axes.get_title(loc="left")


def _check_faces(folder: Path, rows: list[str], calls: list[str], label: str,
                 precision: str) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    stages = pd.read_csv(folder / "stages.csv", keep_default_na=False)
    expected, forward = _expected_times(folder)
    lines = _terminal(folder)
    terminal = _terminal_rows(lines)
    page = shown_html((folder / "report.html").read_text())
    headers, table = _page_table(page)
    bars, title = _png_bars(folder)

    # rows and order: stages.csv, the terminal, the page's table and its icicle
    named = [s if not c else f"{s}[{c}]" for s, c in zip(stages["stage"], stages["call_index"])]
    assert named == calls
    assert list(terminal) == rows
    assert [name for name, _ in table] == calls
    icicle = page_data(page)["charts"]["icicle"]["data"][0]["labels"][1:]
    # each call a block, or with the only stage call inside it one block (body › conv)
    assert [name for label in icicle for name in label.split(" \u203a ")] == calls
    assert len(bars) >= 2 and set(bars) <= set(rows)  # time.png: the top level, or deeper

    # the interval's label, its true coverage for the repeats made, on every face
    assert meta["interval"]["label"] == label and meta["interval"]["repeats"] == len(
        meta["forward_ms"])
    assert f"{label} ms" in lines[0] and f"{label} ms" in headers
    assert f"whiskers: {label}" in title
    assert f"({label} " in html.unescape(page)  # the header's forward line

    # the numbers: each row's median time and share of the forward, recomputed from times.csv
    for name, (time, share) in terminal.items():
        assert time == significant(expected[name]), name
        assert share.rstrip("*") == f"{100 * expected[name] / forward:.1f}%", name
        if name in bars:
            assert bars[name] == f"{significant(expected[name])} ms  " \
                                 f"{100 * expected[name] / forward:.1f}%"
    by_call = stages.assign(name=named).set_index("name")
    for name, cells in table:
        median = by_call.loc[name, "cpu_time_ms_median"]
        assert float(cells["time ms"]) == pytest.approx(max(float(median), 0.0)), name
        assert float(cells["% of forward"]) == pytest.approx(100 * max(median, 0) / forward)
        if by_call.loc[name, "kind"] == "stage":  # the terminal's figures, with an en dash
            low, high = (by_call.loc[name, f"cpu_time_ms_median_ci95_{end}"]
                         for end in ("low", "high"))
            assert cells[f"{label} ms"] == f"{significant(low)}\u2013{significant(high)}"
        assert float(median) >= 0 or by_call.loc[name, "kind"] != "other"

    # coverage: 1 - other / forward, never above 100%, the same on the terminal and the page
    coverage = 1 - expected["other"] / forward
    assert meta["coverage"]["time"] == pytest.approx(coverage) and 0 <= coverage <= 1
    line = next(line for line in lines if line.startswith("coverage: "))
    percent = 100 * coverage
    shown = f"{math.floor(percent * 10) / 10:.1f}%" if 99 < percent < 100 else f"{percent:.0f}%"
    assert line.startswith(f"coverage: {shown} of the time")
    assert f"Coverage: {shown} of the time" in page
    # the precision that ran, the same on the terminal and the page's strip
    shown = next(line for line in lines if line.startswith("precision: "))[len("precision: "):]
    assert precision in shown.split()
    assert re.search(rf"<span>precision</span><b>{re.escape(html.escape(shown))}</b>", page)


def test_every_face_of_a_pytorch_run_states_the_same_rows_labels_and_numbers(tmp_path):
    folder = _torch_run(tmp_path / "run", repeats=5)
    _check_faces(folder, TINY_ROWS, TINY_CALLS, "93.7% CI", "float32")  # 1 - 2**-4


@pytest.mark.slow
@pytest.mark.runtimes
def test_every_face_of_an_onnxruntime_int8_run_states_the_same(tmp_path):
    from profiling.runtimes import profile_runtime
    from test_runtimes import ATTACH, _model_and_input

    model, x = _model_and_input()
    profiled = profile_runtime(model, (x,), runtime="onnxruntime", dtype="int8", repeats=5,
                               attach=ATTACH, calibration=[(torch.randn(1, 3, 16, 16),)] * 2,
                               workdir=tmp_path / "work")
    folder = tmp_path / "run"
    write_run(profiled.result, folder, model, report=True,
              config={"model": {"name": "staged"},
                      "run": {"runtime": "onnxruntime", "dtype": "int8", "repeats": 5}},
              metadata={"deployment": profiled.deployment})
    # encoder (its conv inside, attached by path), scale, shift twice, head; what the
    # runtime ran outside them is the other rows
    rows = list(run_view(folder).summary.index)
    assert rows == ["encoder", "conv", "encoder/other", "scale", "shift", "head", "other"]
    calls = [s if not c else f"{s}[{c}]" for s, c in
             zip(*(pd.read_csv(folder / "stages.csv")[k] for k in ("stage", "call_index")))]
    assert calls[-1] == "other" and "shift[1]" in calls
    _check_faces(folder, rows, calls, "93.7% CI", "int8")
    # the detail panel's operators: the runtime's nodes, a stage's with those inside it
    operators = run_view(folder).operators
    encoder, conv = (operators[operators["key"] == key] for key in ("encoder#0", "conv#0"))
    assert len(conv) and set(conv["operator"]) <= set(encoder["operator"])
    assert encoder["share"].sum() == pytest.approx(100)
    details = page_data((folder / "report.html").read_text())["details"]["encoder#0"]
    assert ["operators", "runtime nodes: median time (share of the call's node time)"] in \
        details
    # each node's time against ONNX Runtime's own profile: its kernel events in each of the
    # 5 timed runs (after the untimed ones, as many as the forward took to settle), summed,
    # their median
    events = json.loads(Path(profiled.backend.profile_file).read_text())
    warmed = profiled.result.noise["warmup"]["made"]
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e["name"] == "model_run")[warmed:]
    for row in conv.itertuples():
        node = re.sub(r" \((int8|float32)\)$", "", row.operator)
        per_run = [sum(e["dur"] for e in events if e.get("cat") == "Node"
                       and e["name"] == f"{node}_kernel_time" and start <= e["ts"] <= stop)
                   for start, stop in runs]
        assert len(per_run) == 5 and row.time_ms == pytest.approx(np.median(per_run) / 1e3)


@pytest.mark.slow
def test_the_page_in_a_browser_shows_the_rows_in_forward_order_and_weighs_under_2_5_mb(
        tmp_path):
    from browser import chromium, render

    if chromium() is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    folder = _torch_run(tmp_path / "run", repeats=5)
    page = folder / "report.html"
    assert page.stat().st_size < 2.5e6
    shown = render(page, tmp_path / "page.png")
    assert re.search(r'<body data-page="run"[^>]* data-charts-drawn="5"', shown.dom)
    assert re.search(r'data-charts-ms="\d+"', shown.dom)  # when the charts were drawn
    table = shown.dom[shown.dom.index('id="stages"'):]
    table = table[:table.index("</table>")]
    names = [html.unescape(name) for name in re.findall(
        r'<tr data-(?:key="[^"]*" data-)?name="([^"]*)"', table)]
    assert names == TINY_CALLS  # each other row under its parent, the top-level one last
    assert ">93.7% CI ms</th>" in table
    drawn = re.search(r'id="icicle".*?</svg>', shown.dom, re.S).group(0)
    assert ">body/other<" in drawn or "body/other" in drawn


def test_payload_png_and_the_page_colour_each_depth_alike(tmp_path):
    """payload.png's bars and the page's payload bars take one colour per nesting depth:
    every colour the page gives a depth is drawn in the PNG's pixels."""
    from matplotlib.image import imread

    folder = _torch_run(tmp_path / "run", repeats=2)
    traces = page_data((folder / "report.html").read_text())["charts"]["payload"]["data"]
    colours = {trace["name"]: trace["marker"]["color"] for trace in traces
               if trace["type"] == "bar"}
    assert set(colours) == {"output, depth 0", "output, depth 1"}
    assert colours["output, depth 0"] != colours["output, depth 1"]
    pixels = imread(folder / "plots" / "payload.png")[..., :3].reshape(-1, 3)
    drawn = {tuple(np.round(pixel * 255).astype(int)) for pixel in pixels}
    for name, colour in colours.items():
        assert tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5)) in drawn, name


def test_forward_order_puts_each_other_row_under_its_parent():
    # rows as a table of another order could hold them: others first, calls shuffled
    stages = pd.DataFrame({
        "stage": ["other", "a/other", "b/other", "a", "b", "c", "d"],
        "kind": ["other"] * 3 + ["stage"] * 4, "parent": ["", "a", "b", "", "a", "b", ""],
        "depth": [0, 1, 2, 0, 1, 2, 0], "order": [9, 8, 7, 0, 1, 2, 3], "call_index": 0})
    ordered = forward_order(stages)
    assert list(ordered["stage"]) == ["a", "b", "c", "b/other", "a/other", "d", "other"]


@pytest.mark.parametrize("repeats, label", [(2, "50% CI"), (3, "75% CI"), (5, "93.7% CI"),
                                            (6, "95% CI"), (20, "95% CI")])
def test_the_interval_label_is_its_true_coverage(repeats, label):
    from profiling.statistics import interval_label

    assert interval_label(repeats)[0] == label


@pytest.mark.parametrize("meta, shown", [
    ({}, "float32"),
    ({"config": {"run": {"dtype": "bfloat16"}}}, "bfloat16"),
    ({"config": {"run": {"dtype": "int8"}}, "deployment": {"dtype": "int8",
                                                             "executed_precision": {
                                                                 "float32": 0.3, "int8": 0.7}}},
     "int8 70% + float32 30% of node time"),
    ({"deployment": {"dtype": "float32", "executed_precision": {"f32": 1.0}}}, "f32"),
    ({"precision": {"executed": "bf16"}, "config": {"run": {"dtype": "float32"}}}, "bf16")])
def test_the_precision_shown_is_what_ran(meta, shown):
    from profiling.reports.view import executed_precision

    assert executed_precision(meta) == shown


def test_an_other_row_s_flops_never_read_below_zero_from_round_off():
    # 0.3 - (0.1 + 0.2) GFLOPs is -5.6e-17 in floating point: the FLOPs are whole numbers
    from profiling.reports.record import RunRecord

    stages = pd.DataFrame({"stage": ["a", "b", "other"], "kind": ["stage", "stage", "other"],
                           "parent": "", "depth": 0, "call_index": 0, "order": [0, 1, 2],
                           "out_bytes": 0, "flops": [1e8, 2e8, 0.0]})
    view = run_view(RunRecord(None, "ok", meta={"totals": {"flops": 3e8}}, stages=stages))
    assert view.summary.loc["other", "gflops"] == 0.0
    assert view.summary.loc["other", "share"] == 0.0 and view.share_of == "FLOPs"
