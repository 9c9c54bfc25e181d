"""Each kind of report page rendered by a real browser (Debian's chromium, headless): no
console errors, every stage in the rendered page, every chart drawn (issue 27). Skipped where
chromium is not installed (CI installs it)."""

from __future__ import annotations

import html
import re

import pytest

pytest.importorskip("plotly")

from browser import chromium, render  # noqa: E402
from profiling.reports.html import write_report  # noqa: E402
from report_runs import STAGE_NAMES, tiny_run, tiny_sweep  # noqa: E402
from test_split_page import split_folder  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(chromium() is None, reason="chromium is not installed "
                                                            "(apt-get install chromium)")]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    a, b = tiny_run(root / "a"), tiny_run(root / "b", width=16)
    return {"run": (write_report([a]), 5), "comparison": (write_report([a, b]), 2),
            "sweep": (write_report([tiny_sweep(root / "sweep")]), 2),
            "split": (write_report([split_folder(root / "split")]), 2)}


@pytest.mark.parametrize("kind", ["run", "comparison", "sweep", "split"])
def test_the_page_renders_with_its_charts_and_no_errors(kind, pages, tmp_path):
    page, charts = pages[kind]
    shown = render(page, tmp_path / f"{kind}.png")
    assert [line for line in shown.console if "rror" in line or "Uncaught" in line] == []
    assert not re.search(r"<body[^>]* data-errors=", shown.dom)
    assert re.search(rf'<body data-page="{kind}"[^>]* data-charts-drawn="{charts}"', shown.dom)
    assert shown.dom.count('class="main-svg"') >= charts  # plotly drew an SVG per chart
    names = {"run": STAGE_NAMES, "comparison": STAGE_NAMES, "sweep": ("stem", "sizes", "body",
                                                                      "head", "2_tiny"),
             "split": ("input", "after stem", "bit-exact")}[kind]
    for name in names:
        assert f">{name}<" in shown.dom or f">\u2003{name}<" in shown.dom, name
    assert shown.screenshot.stat().st_size > 30_000  # a drawn page, not a blank one


def _rows(dom: str, table_id: str) -> list[str]:
    table = dom[dom.index(f'id="{table_id}"'):]
    table = table[:table.index("</table>")]
    return [html.unescape(name) for name in re.findall(
        r'<tr data-(?:key="[^"]*" data-)?name="([^"]*)"', table)]


@pytest.fixture(scope="module")
def shown(pages, tmp_path_factory):
    """Each page as the browser drew it."""
    root = tmp_path_factory.mktemp("shots")
    return {kind: render(page, root / f"{kind}.png").dom for kind, (page, _) in pages.items()}


def test_the_run_page_reads_in_forward_order_with_plain_numbers(shown):
    dom = shown["run"]
    # every 'other' row under its parent: body/other after body's conv, the forward's last
    assert _rows(dom, "stages") == ["stem", "sizes", "body", "conv", "body/other", "head",
                                    "head[1]", "other"]
    assert ">75% CI ms</th>" in dom  # 3 repeats: the interval's true coverage
    strip = dom[dom.index('class="strip"'):dom.index('class="facts"')]
    assert re.search(r"<span>forward</span><b>[\d,.]+ ms \(75% CI [\d,.]+\u2013[\d,.]+\)</b>",
                     strip)
    assert "<span>precision</span><b>float32</b>" in strip
    assert "<span>input</span><b>1\u00d73\u00d716\u00d716</b>" in strip
    # no scientific notation anywhere the browser drew text: cells, ticks, labels
    assert not re.search(r">[-\u2212]?\d+(\.\d+)?e[+-]\d+<", dom)
    assert re.search(r"<td[^>]*>[\d.,]+\u2013[\d.,]+</td>", dom)  # an interval, en dash
    assert "options (not default)</dt><dd>model.width=8</dd>" in dom


def test_the_comparison_puts_other_rows_under_their_parents(shown):
    dom = shown["comparison"]
    assert _rows(dom, "compare-B") == ["(forward)", "stem", "sizes", "body", "conv",
                                       "body/other", "head", "head[1]", "other"]
    assert "change of the median CPU time" in dom and "run / A" in dom  # axes in words
    assert not re.search(r">[-\u2212]?\d+(\.\d+)?e[+-]\d+<", dom)


def test_the_sweep_names_jobs_by_their_swept_values(shown):
    dom = shown["sweep"]
    assert "swept options</dt><dd>model.width</dd>" in dom
    assert ">model.width=4<" in dom and ">model.width=8<" in dom  # the stacked chart's jobs
    assert re.search(r"<th[^>]*>noise</th>", dom)
    # the metric chart starts on the forward against the first swept option, with whiskers
    assert ">forward ms against model.width<" in dom
    assert "interval of its median (75% CI: its true coverage" in dom


@pytest.mark.parametrize("kind", ["run", "comparison", "sweep"])
def test_every_page_weighs_under_2_5_mb_and_draws_the_charts_in_view_first(kind, pages,
                                                                          shown):
    page, _ = pages[kind]
    assert page.stat().st_size < 2.5e6
    view = re.search(r'<body[^>]* data-view-ms="(\d+)"', shown[kind])
    drawn = re.search(r'<body[^>]* data-charts-ms="(\d+)"', shown[kind])
    assert view and drawn and int(view.group(1)) <= int(drawn.group(1))


def test_a_pinned_stage_shows_its_operators(pages, tmp_path):
    """report.html#stage=conv%230 opens with body's conv pinned: its panel lists the
    operators the op counter saw in it (one 3x3 convolution)."""
    page, _ = pages["run"]
    dom = render(page, tmp_path / "pinned.png", fragment="stage=conv%230").dom
    panel = dom[dom.index('id="stage-detail"'):]
    panel = panel[:panel.index("</aside>")]
    assert "<dt>operators</dt><dd>counted: GFLOPs" in panel
    assert re.search(r"<dt>aten\.convolution</dt><dd>0\.000295 GFLOPs \(100\.0%\), ", panel)
