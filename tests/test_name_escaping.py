"""Every output fed hostile or extreme runs: names that are markup, script, control
characters, mathtext or table syntax (from model code, a config or a hand-edited run folder)
are shown as written and never act, in the HTML pages and their charts, the terminal, the
text files and the PNG plots; huge numbers and long names keep tables and plots readable.

Each class is tried with at least three variants; the browser tests are marked slow."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from profiling import profile_model, stage, write_run
from profiling.reports.html.page import page_data, shown_html  # noqa: E402
from profiling.reports import (format_comparison, format_summary, compare_runs, markdown_cell,
                               plot_label, printable, read_run, write_failure)


#: Stage names that are markup or script in HTML (text, attributes, inside the page's JSON),
#: plotly's text markup or hover-template fields, or terminal control sequences.
MARKUP = ["<script>document.body.setAttribute('data-pwned','1')</script>",
          "</script><script>document.title='pwned'</script>",
          '"onmouseover="document.body.setAttribute(\'data-pwned\',\'1\')" x="',
          "<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">",
          '<a href="javascript:document.body.setAttribute(\'data-pwned\',\'1\')">link</a>',
          '<span style="font-size:300px">huge</span>', "<b>bold</b><br>break",
          "%{customdata}", "<!--", "&amp;"]


CONTROL = ["\x1b[2J\x1b[31mred", "line\nbreak", "\u202eevil\u202c", "nul\x00tab\t",
           "\u2066isolate\u2069"]


HOSTILE = MARKUP + CONTROL


#: Where names come from besides the stages: the model, an option value, the dtype.
MODEL_NAME = "<script>document.body.setAttribute('data-pwned','model')</script>\x1b[2J"


OPTION = "model.width=</script><script>document.title='pwned'</script>"


#: Characters that must never reach a terminal or text file raw.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


class Named(nn.Module):
    """One 1x1 convolution per name, each in a stage of that name."""

    def __init__(self, names, modules=()):
        super().__init__()
        self.names = list(names)
        self.convs = nn.ModuleList(nn.Conv2d(3, 3, 1) for _ in self.names)
        self.extra = nn.ModuleDict({key: nn.Identity() for key in modules})

    def forward(self, x):
        for name, conv in zip(self.names, self.convs):
            with stage(name, x) as s:
                x = s.output(conv(x))
        for module in self.extra.values():
            x = module(x)
        return x


def _run(folder: Path, names, *, model_name="named", modules=(), plots=False, report=False,
         overrides=()) -> Path:
    torch.manual_seed(0)
    model = Named(names, modules).eval()
    result = profile_model(model, (torch.randn(1, 3, 8, 8),), warmup=0, repeats=2,
                           collectors=["payload", "tensor_memory", "op_counts", "cpu_time"])
    config = {"model": {"name": model_name}, "device": {"name": "cpu"},
              "input": {"size": [8, 8], "batch": 1}, "run": {"repeats": 2, "dtype": "float32"}}
    write_run(result, folder, model, config=config, plots=plots, report=report,
              metadata={"overrides": list(overrides)})
    return folder


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A run whose stage, module, model and option names are all hostile."""
    folder = tmp_path_factory.mktemp("hostile") / "run"
    return _run(folder, HOSTILE, model_name=MODEL_NAME, modules=("a|b", "x\x1by"),
                overrides=[OPTION])


@pytest.mark.parametrize("text, shown", [
    ("\x1b[2J", "\\x1b[2J"), ("a\nb\r\t", "a\\nb\\r\\t"), ("\u202eabc", "\\u202eabc"),
    ("\x00\x7f\x9b", "\\x00\\x7f\\x9b"), ("\u2066x\u2069\u200f", "\\u2066x\\u2069\\u200f"),
    ("layer4.1.conv2[3]", "layer4.1.conv2[3]"), ("カメラ é ü", "カメラ é ü")])
def test_printable_writes_acting_characters_as_escapes_and_keeps_every_script(text, shown):
    assert printable(text) == shown
    assert printable(shown) == shown  # idempotent: escaping twice changes nothing


@pytest.mark.parametrize("text, shown", [
    ("<script>", "&lt;script&gt;"), ('"onmouseover=x', "&#34;onmouseover=x"),
    ("it's & %{y}", "it&#39;s &amp; %&#123;y}"), ("\x1b[2J<b>", "\\x1b[2J&lt;b&gt;"),
    ("&amp;", "&amp;amp;")])
def test_the_page_escape_covers_html_attributes_and_plotly_templates(text, shown):
    from profiling.reports.html.page import escape

    assert escape(text) == shown


@pytest.mark.parametrize("data", [
    {"a": "</script><script>alert(1)</script>"}, {"a": "<!--<script>"},
    {"a": "&lt;</SCRIPT >", "b": ["\u2028\u2029"]}])
def test_the_page_json_can_never_end_its_script_element(data):
    pytest.importorskip("plotly")
    from profiling.reports.html.page import to_json

    text = to_json(data)
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(text) == data


@pytest.mark.parametrize("name, label", [
    ("$\\alpha$", "\\$\\alpha\\$"), ("$\\undefinedcmd{$", "\\$\\undefinedcmd{\\$"),
    ("cost $5 and $6", "cost \\$5 and \\$6"), ("a\x1b$", "a\\x1b\\$")])
def test_plot_labels_are_never_mathtext(name, label):
    assert plot_label(name) == label


@pytest.mark.parametrize("text, cell", [("a|b", "a\\|b"), ("|", "\\|"),
                                        ("x||y\n", "x\\|\\|y\\n")])
def test_markdown_cells_escape_the_column_bar(text, cell):
    assert markdown_cell(text) == cell


def test_the_terminal_summary_and_comparison_show_hostile_names_escaped(hostile):
    record = read_run(hostile)
    summary = format_summary(record.stages, times=record.times, max_rows=100)
    comparison = format_comparison(compare_runs(hostile, hostile), hostile, hostile)
    for text in (summary, comparison):
        assert not RAW_CONTROL.search(text)
        for name in ("\\x1b[2J\\x1b[31mred", "line\\nbreak", "\\u202eevil\\u202c"):
            assert name in text
    rows = [line for line in summary.splitlines() if line.startswith(("line", "\\x1b"))]
    assert len(rows) == 2 and all(len(r.split()) == len(rows[0].split()) for r in rows)


def test_the_sweep_table_shows_failure_reasons_escaped(tmp_path):
    pytest.importorskip("hydra")
    from profiling.reports import collect_runs, find_runs
    from zoo.tools.sweep_table import format_sweep_table

    reasons = ["\x1b[2Jcleared", "bad\u202esize", "two\nlines\x07"]
    for number, reason in enumerate(reasons):
        write_failure(tmp_path / f"{number}_job", RuntimeError(reason),
                      overrides=[f"model.width={number}"],
                      config={"model": {"name": "tiny", "width": number}})
    lines = format_sweep_table(collect_runs(find_runs(tmp_path), root=tmp_path))
    text = "\n".join(lines)
    assert not RAW_CONTROL.search(text) and len(lines) == 4
    assert "failed: RuntimeError: \\x1b[2Jcleared" in text
    assert "failed: RuntimeError: bad\\u202esize" in text


def test_text_files_show_names_escaped_and_csvs_keep_them_verbatim(hostile):
    for name in ("payload.log", "layers.txt", "modules.txt"):
        assert not RAW_CONTROL.search((hostile / name).read_text()), name
    assert "\\x1b[2J\\x1b[31mred_out :: torch.Size" in (hostile / "payload.log").read_text()
    table = [line for line in (hostile / "modules.txt").read_text().splitlines()
             if line.startswith("|")]
    bars = {len(re.findall(r"(?<!\\)\|", line)) for line in table}
    assert bars == {7} and any("a\\|b" in line for line in table)
    # CSVs and meta.json are data: every name reads back exactly as the model wrote it
    record = read_run(hostile)
    assert list(record.stages.loc[record.stages["kind"] == "stage", "stage"]) == HOSTILE
    assert record.config["model"]["name"] == MODEL_NAME


@pytest.mark.parametrize("cell", ["=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)"])
def test_csv_cells_that_spreadsheets_read_as_formulas_are_kept_verbatim(cell, tmp_path):
    # the decision documented in docs/outputs.md: CSVs are data, read back by the tools;
    # a prefix would change the names (and negative numbers start with '-')
    record = read_run(_run(tmp_path / "run", [cell, "plain"]))
    assert list(record.stages.loc[record.stages["kind"] == "stage", "stage"]) == [cell, "plain"]
    assert pd.read_csv(tmp_path / "run" / "stages.csv")["stage"].iloc[0] == cell


def _strings(node, key=""):
    """Every (key, string) in a figure's JSON."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from _strings(value, name)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value, key)
    elif isinstance(node, str):
        yield key, node


#: The markup the pages' charts write themselves.
_OWN_MARKUP = re.compile(r"</?(b|br|extra)>")


def _check_page(page_html: str) -> None:
    """Only the page's own four script elements (its data, its script, plotly.js packed and
    the loader that unpacks it); no name's markup in the HTML outside the data, the packed
    tables put in place included, nor in any string of a chart's figure, nor a template field
    from a name."""
    page_html = shown_html(page_html)
    assert page_html.count("<script") == 4 and page_html.count("</script>") == 4
    head = page_html[:page_html.index("<script")]
    assert "<img" not in head and "<span style" not in head and "onmouseover=\"" not in head
    assert not RAW_CONTROL.search(head)
    for chart in page_data(page_html)["charts"].values():
        for key, text in _strings(chart):
            if key in ("customdata", "ids", "parents"):
                continue  # keys: never shown
            assert "<" not in _OWN_MARKUP.sub("", text), (key, text)
            assert "%{customdata}" not in text and not RAW_CONTROL.search(text), (key, text)


@pytest.mark.slow
def test_a_hostile_run_page_escapes_every_name(hostile):
    pytest.importorskip("plotly")
    from profiling.reports import report_page

    page_html = shown_html(report_page([hostile]).render())
    _check_page(page_html)
    assert "<title>stagezoo run: &lt;script&gt;" in page_html
    assert "model.width=&lt;/script&gt;&lt;script&gt;document.title=&#39;pwned&#39;" in page_html
    charts = page_data(page_html)["charts"]
    keys = charts["icicle"]["data"][0]["customdata"]
    rows = re.findall(r'<tr data-key="([^"]*)"', page_html)
    import html
    assert {html.unescape(k) for k in rows} >= set(keys[1:])  # tables and charts link up


def test_hostile_comparison_and_sweep_pages_escape_every_name(hostile, tmp_path):
    pytest.importorskip("plotly")
    from profiling.reports import report_page

    _check_page(report_page([hostile, hostile]).render())
    shutil.copytree(hostile, tmp_path / "0_ok")
    for number, reason in enumerate(["<img src=x onerror=alert(1)>", "\x1b[2J%{y}"], 1):
        write_failure(tmp_path / f"{number}_job", RuntimeError(reason),
                      overrides=[f"model.width=<b>{number}</b>"],
                      config={"model": {"name": MODEL_NAME, "width": f"<b>{number}</b>"}})
    page = report_page([tmp_path])
    page_html = page.render()
    _check_page(page_html)
    assert "RuntimeError: &lt;img src=x onerror=alert(1)&gt;" in shown_html(page_html)
    plot = page_data(page_html)["sweep_plot"]
    for row in plot["rows"]:
        assert all("<" not in text and "%{" not in text for text in row["shown"].values())
    assert all("<" not in text for text in plot["labels"].values())


@pytest.mark.slow
def test_plots_of_hostile_names_draw_without_warnings(tmp_path, recwarn):
    pytest.importorskip("matplotlib")
    names = ["$\\undefinedcmd{$", "$\\alpha$", "cost $5 and $6", "\x1b[2J", "L" * 200]
    folder = _run(tmp_path / "run", names, plots=True)
    assert sorted(p.name for p in (folder / "plots").iterdir()) == [
        "layers.png", "memory.png", "payload.png", "roofline.png", "time.png"]
    assert [str(w.message) for w in recwarn if "Glyph" in str(w.message)
            or "layout" in str(w.message)] == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["run", "comparison", "sweep"])
def test_a_hostile_page_runs_no_script_in_a_browser(kind, hostile, tmp_path):
    pytest.importorskip("plotly")
    from browser import chromium, render
    from profiling.reports import write_report

    if chromium() is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    if kind == "sweep":
        shutil.copytree(hostile, tmp_path / "sweep" / "0_ok")
        write_failure(tmp_path / "sweep" / "1_job", RuntimeError(MARKUP[3]),
                      overrides=["model.width=1"], config={"model": {"name": "x", "width": 1}})
        folders, charts = [tmp_path / "sweep"], 2
    else:
        folders, charts = ([hostile], 5) if kind == "run" else ([hostile, hostile], 2)
    page = write_report(folders, tmp_path / f"{kind}.html")
    shown = render(page, tmp_path / f"{kind}.png")
    body = re.search(r"<body[^>]*>", shown.dom).group(0)
    assert "pwned" not in body and "data-errors" not in body
    assert f'data-charts-drawn="{charts}"' in body
    title = re.search(r"<title>(.*?)</title>", shown.dom, re.S).group(1)
    assert title.startswith(f"stagezoo {kind}")  # not set by a name's script
    assert [line for line in shown.console if "rror" in line or "Uncaught" in line] == []
    # the page's four and the two its loader adds (plotly.js unpacked, the page's script):
    # no element was added by a name
    assert shown.dom.count("<script") == 6
    assert '<tspan style="font-size:300px">' not in shown.dom  # plotly drew no name's markup


@pytest.mark.parametrize("field, value", [
    ("model", "\x1b[2J\x1b[31mEVIL"), ("model", "two\nlines"), ("model", "\u202eledom")])
def test_comparison_header_and_refusal_show_run_folder_content_escaped(field, value, hostile,
                                                                       tmp_path):
    pytest.importorskip("plotly")
    from profiling import ProfilingError
    from profiling.reports import report_page

    other = tmp_path / "other"
    shutil.copytree(hostile, other)
    meta = json.loads((other / "meta.json").read_text())
    meta["config"][field]["name"] = value
    (other / "meta.json").write_text(json.dumps(meta))
    header = format_comparison(compare_runs(hostile, other), hostile, other)
    assert not RAW_CONTROL.search(header) and printable(value) in header
    with pytest.raises(ProfilingError) as refused:
        report_page([hostile, other])
    assert not RAW_CONTROL.search(str(refused.value)) and printable(value) in str(refused.value)


@pytest.mark.parametrize("name, shown", [
    ("カメラ_backbone", "\\u30ab\\u30e1\\u30e9_backbone"), ("\U0001f525hot", "\\U0001f525hot"),
    ("conv\u4e00", "conv\\u4e00"), ("é ü ß", "é ü ß")])
def test_plots_write_characters_their_fonts_lack_as_escapes(name, shown):
    pytest.importorskip("matplotlib")
    from profiling.reports.plots import plot_label as drawn_label

    assert drawn_label(name) == shown


@pytest.mark.parametrize("name", ["\x1b[2J", "a\x07b", "x\u202ey"])
def test_an_error_line_never_carries_control_characters(name, capsys):
    from zoo.tools.cli import fail

    with pytest.raises(SystemExit):
        fail(f"no run folder {name}/meta.json")
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and line.startswith("error: no run folder ")
    assert not any(ch in line for ch in ("\x1b", "\x07", "\u202e")), repr(line)
