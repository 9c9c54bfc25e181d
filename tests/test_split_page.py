"""The page of a split analysis folder (``zoo.report`` of what ``zoo.split`` writes): the
executed cuts' measured medians with their intervals over the estimated lines, per encoding
and bandwidth, drawn from the same figures as split_latency.png."""

from __future__ import annotations

import pandas as pd
import pytest

from profiling.reports.split_figures import executed_curves
from profiling.reports.html.page import page_data
from test_report import _values

pytest.importorskip("plotly", reason="the report extra (plotly) is not installed")
pytest.importorskip("matplotlib", reason="the plots extra (matplotlib) is not installed")


def _executed() -> pd.DataFrame:
    """Two cuts, raw and zlib, at 20 and 200 Mbit/s on a shaped link (listed 200 first, as
    no run writes them, to show the curves sort by bandwidth), and one row of an unshaped
    link, which has no bandwidth to be drawn against."""
    rows = []
    for encoding, factor in (("raw", 1.0), ("zlib", 0.5)):
        for cut, base in (("input", 100.0), ("after stem", 60.0)):
            for bandwidth in (200.0, 20.0):
                transfer = 400 / bandwidth * factor
                rows.append({"cut": cut, "kind": "stage", "encoding": encoding,
                             "bandwidth_mbps": bandwidth, "shaped": True,
                             "link": f"tbf {bandwidth:g} Mbit/s, no netem here: RTT as measured",
                             "sent_bytes": 50_000, "measured_ms_median": base + transfer,
                             "measured_ms_low": base + transfer - 3,
                             "measured_ms_high": base + transfer + 5,
                             "estimated_terms_ms": base + transfer + 1,
                             "error_terms": 1 / (base + transfer), "output_exact": True,
                             "output_max_abs_diff": 0.0})
    rows.append({**rows[0], "bandwidth_mbps": float("nan"), "shaped": False,
                 "link": "unshaped loopback (not root)"})
    return pd.DataFrame(rows)


def test_executed_curves_by_hand():
    curves = executed_curves(_executed())
    assert list(curves) == ["raw", "zlib"]
    first = curves["raw"][0]
    assert (first.cut, first.bandwidth_mbps) == ("input", (20.0, 200.0))
    assert first.measured_ms == (120.0, 102.0) and first.estimated_ms == (121.0, 103.0)
    assert (first.low_ms, first.high_ms) == ((117.0, 99.0), (125.0, 107.0))
    assert curves["zlib"][1].measured_ms == (70.0, 61.0)
    assert executed_curves(_executed().assign(shaped=False)) == {}


def test_the_png_and_the_page_draw_the_same_figures():
    from profiling.reports.html.split_page import executed_figure
    from profiling.reports.split_plots import executed_latency_figure

    curves = executed_curves(_executed())
    page = executed_figure(_executed())
    png = executed_latency_figure(_executed())
    for panel, (encoding, lines) in zip(png.axes, curves.items()):
        drawn = [(list(line.get_xdata()), list(line.get_ydata())) for line in panel.lines
                 if line.get_linestyle() == "-"]
        points = [container.lines[0].get_ydata() for container in panel.containers]
        assert drawn == [(list(c.bandwidth_mbps), list(c.estimated_ms)) for c in lines]
        assert [list(p) for p in points] == [list(c.measured_ms) for c in lines]
    traces = [trace for trace in page.data]
    estimates = [(list(t.x), list(t.y)) for t in traces if t.mode == "lines"]
    measured = [t for t in traces if t.mode == "markers"]
    expected = [c for lines in curves.values() for c in lines]
    assert estimates == [(list(c.bandwidth_mbps), list(c.estimated_ms)) for c in expected]
    assert [list(t.y) for t in measured] == [list(c.measured_ms) for c in expected]
    assert [list(t.error_y.array) for t in measured] == [[5.0, 5.0]] * 4
    assert [list(t.error_y.arrayminus) for t in measured] == [[3.0, 3.0]] * 4
    assert page.layout.yaxis.type == "log" and page.layout.xaxis.type == "log"
    assert all(text.endswith(" ms") for text in page.layout.yaxis.ticktext)


def split_folder(folder):
    """A folder as ``zoo.split --execute`` leaves it: cuts.csv (a module cut of 0 bytes among
    them) and executed.csv (:func:`_executed`)."""
    folder.mkdir()
    pd.DataFrame({"cut": ["input", "stem", "layer1", "output"],
                  "kind": ["input", "stage", "module", "output"],
                  "raw_bytes": [49152, 32768, 0, 4000], "pareto": [True, True, True, True],
                  "min_cut": [False, False, True, False]}).to_csv(folder / "cuts.csv",
                                                                   index=False)
    _executed().to_csv(folder / "executed.csv", index=False)
    return folder


def test_zoo_report_of_a_split_folder(tmp_path, capsys):
    from zoo.tools.report import main

    folder = split_folder(tmp_path / "split")
    main([str(folder)])
    assert capsys.readouterr().out.strip() == f"report: {(folder / 'report.html').resolve()}"
    html = (folder / "report.html").read_text()
    data = page_data(html)
    assert sorted(data["charts"]) == ["split-bytes", "split-executed"]
    bars = data["charts"]["split-bytes"]["data"]
    assert _values(bars[0]["y"])[:2] == [0.049152, 0.032768] and bars[1]["name"] == "0 bytes"
    measured = [t for t in data["charts"]["split-executed"]["data"] if t["mode"] == "markers"]
    assert [_values(t["y"]) for t in measured][0] == [120.0, 102.0]
    assert "Executed: measured beside the estimate" in html
    assert html.count("bit-exact") >= 9  # every row, and the note


def test_a_cut_name_with_markup_is_text_on_the_page(tmp_path):
    """Markup or a plotly field in a cut's name is shown as text: escaped in the table and in
    every name and hover template (``{`` too, so ``%{y}`` is never read as a field)."""
    from profiling.reports.html import report_page
    from profiling.reports.html.split_page import executed_figure

    hostile = "<img src=x onerror=alert(1)>%{y}"
    folder = split_folder(tmp_path / "split")
    executed = _executed().replace({"cut": {"after stem": hostile}})
    executed.to_csv(folder / "executed.csv", index=False)
    assert "<img src=x" not in report_page([folder]).render()
    shown = [t for t in executed_figure(executed).data if "img" in t.hovertemplate]
    assert len(shown) == 4  # estimate and measurement, raw and zlib
    escaped = "&lt;img src=x onerror=alert(1)&gt;%&#123;y}"
    assert all(t.name == escaped and t.hovertemplate.startswith(escaped) for t in shown)
