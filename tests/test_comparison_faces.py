"""One comparison, many faces (issue 35): zoo.compare's terminal table, its compare.csv and the
comparison page state the same rows in the same order (each 'other' row under its parent), the
same interval and the same numbers. Every expected figure is recomputed here from the two runs'
times.csv and meta.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli_runner import run_main
from page_tables import page_rows
from profiling.reports.html import write_report
from profiling.reports.html.formatting import span
from profiling.reports.numbers import change_text, significant
from report_runs import tiny_run

pytest.importorskip("plotly")

#: Tiny's stage calls in forward order, each 'other' row under its parent.
CALLS = ["stem", "sizes", "body", "conv", "body/other", "head", "head[1]", "other"]


def _medians(folder: Path) -> dict[str, float]:
    times = pd.read_csv(folder / "times.csv", keep_default_na=False)
    return {(s if not c else f"{s}[{c}]"): float(np.median(group["cpu_time_ms"]))
            for (s, c), group in times.groupby(["stage", "call_index"], sort=False)}


def _terminal(out: str) -> tuple[str, dict[str, list[str]]]:
    """The header line and ``{row name: [time A, time B, change, interval]}`` in order."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("stage "))
    rows = {}
    for line in lines[start + 1:]:
        if line.startswith("(") or not line.strip():
            break
        rows[line[:30].strip()] = [line[30:40].strip(), line[40:50].strip(),
                                   line[50:60].strip(), line[60:74].strip()]
    return lines[start], rows


def test_every_face_of_a_comparison_states_the_same_rows_and_numbers(tmp_path, capsys,
                                                                      monkeypatch):
    from zoo.tools import compare as compare_tool

    a, b = tiny_run(tmp_path / "a"), tiny_run(tmp_path / "b", width=16)
    out = tmp_path / "compare.csv"
    done = run_main(lambda: compare_tool.main(), [str(a), str(b), "--out", str(out), "--depth",
                                                   "5", "--loaded"], capsys, monkeypatch)
    assert done.code == 0, done.stderr
    header, terminal = _terminal(done.stdout)
    table = pd.read_csv(out, keep_default_na=False)
    page = write_report([a, b], tmp_path / "page.html", loaded=True).read_text()
    shown = page_rows(page, "compare-B")

    # rows and order: each other row under its parent on every face; the forward first
    named = [s if not c else f"{s}[{c}]" for s, c in zip(table["stage"], table["call_index"])]
    assert named == ["(forward)", *CALLS]
    assert list(terminal) == CALLS
    assert [name for name, _ in shown] == ["(forward)", *CALLS]

    # the options that differ, alike: those that change what is measured
    head = done.stdout[:done.stdout.index("noise A:")].splitlines()
    changed = [line.strip() for line in head if line.startswith("  ")]
    assert changed == ["model.width: 8 -> 16"]
    assert "<dt>A -&gt; B</dt><dd>model.width: 8 -&gt; 16</dd>" in page

    # one interval, labelled alike: the bootstrap's 95% interval of the ratio B/A
    assert "95% CI" in header and "ratio 95% CI" in shown[0][1]
    assert {"time_ratio_ci95_low", "time_ratio_ci95_high"} <= set(table.columns)

    medians_a, medians_b = _medians(a), _medians(b)
    csv = table.assign(name=named).set_index("name")
    page_by_name = dict(shown)
    for name in CALLS:
        first, second = medians_a[name], medians_b[name]
        row, cells = csv.loc[name], page_by_name[name]
        time_a, time_b, change, interval = terminal[name]
        # the medians of times.csv, on every face
        assert row["cpu_time_ms_median_a"] == pytest.approx(first)
        assert row["cpu_time_ms_median_b"] == pytest.approx(second)
        assert (time_a, time_b) == (significant(first), significant(second)), name
        assert float(cells["time A ms"]) == pytest.approx(first)
        assert float(cells["time B ms"]) == pytest.approx(second)
        # the change, written by one rule (a fall with the page's minus sign)
        expected = change_text(second / first) if first > 0 else "-"
        assert change.strip("()* ") == expected, name
        assert cells["change text"].replace("\u2212", "-") == expected, name
        # the significance mark
        marked = bool(row["significant"])
        assert change.endswith("*") == marked == (cells["significant"] == "yes *"), name
        # the interval of the ratio: the terminal's in percent, the page's as ratios
        low, high = row["time_ratio_ci95_low"], row["time_ratio_ci95_high"]
        assert interval == f"{(low - 1) * 100:+.0f}..{(high - 1) * 100:+.0f}%", name
        assert cells["ratio 95% CI"] == span(low, high), name  # the CSV's, en dash
    forward = page_by_name["(forward)"]
    forwards = [float(np.median(json.loads((f / "meta.json").read_text())["forward_ms"]))
                for f in (a, b)]
    assert float(forward["time A ms"]) == pytest.approx(forwards[0])
    assert f"forward median (ms): {significant(forwards[0])} -> {significant(forwards[1])}" \
        in done.stdout
