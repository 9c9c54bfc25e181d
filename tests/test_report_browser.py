"""Each kind of report page rendered by a real browser (Debian's chromium, headless): no
console errors, every stage in the rendered page, every chart drawn (issue 27). Skipped where
chromium is not installed (CI installs it)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("plotly")

from browser import chromium, render  # noqa: E402
from profiling.reports.html import write_report  # noqa: E402
from report_runs import STAGE_NAMES, tiny_run, tiny_sweep  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(chromium() is None, reason="chromium is not installed "
                                                            "(apt-get install chromium)")]


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    a, b = tiny_run(root / "a"), tiny_run(root / "b", width=16)
    return {"run": (write_report([a]), 5), "comparison": (write_report([a, b]), 1),
            "sweep": (write_report([tiny_sweep(root / "sweep")]), 2)}


@pytest.mark.parametrize("kind", ["run", "comparison", "sweep"])
def test_the_page_renders_with_its_charts_and_no_errors(kind, pages, tmp_path):
    page, charts = pages[kind]
    shown = render(page, tmp_path / f"{kind}.png")
    assert [line for line in shown.console if "rror" in line or "Uncaught" in line] == []
    assert not re.search(r"<body[^>]* data-errors=", shown.dom)
    assert re.search(rf'<body data-page="{kind}"[^>]* data-charts-drawn="{charts}"', shown.dom)
    assert shown.dom.count('class="main-svg"') >= charts  # plotly drew an SVG per chart
    names = {"run": STAGE_NAMES, "comparison": STAGE_NAMES, "sweep": ("stem", "sizes", "body",
                                                                      "head", "2_tiny")}[kind]
    for name in names:
        assert f">{name}<" in shown.dom or f">\u2003{name}<" in shown.dom, name
    assert shown.screenshot.stat().st_size > 30_000  # a drawn page, not a blank one
