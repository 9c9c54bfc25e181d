"""zoo.compare's and zoo.report's arguments (zoo/tools/compare.py, zoo/tools/ab_compare.py): an A/B
comparison checks its output before the timed work, a side that cannot be split into overrides
is one line, and a run is never compared with itself (nor through a link to it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import run_main
from report_runs import tiny_run
from zoo.tools import compare


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    return tiny_run(tmp_path_factory.mktemp("audit") / "run")


@pytest.mark.parametrize("out, problem", [
    ("/dev/null", "--out=/dev/null: /dev/null is a device or special file, not a folder"),
    ("file.csv", "is a file, not a folder"),
    ("file.csv/deeper", "is a file, not a folder"),
    ("loop", "a symbolic link on the way loops"),
])
def test_an_ab_comparison_checks_its_output_before_the_work(tmp_path, capsys, monkeypatch, out,
                                                            problem):
    """Before: ``--run A --run B --out /dev/null`` timed both sides for minutes and failed only
    when writing."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.csv").write_text("x")
    (tmp_path / "loop").symlink_to("loop")
    outcome = run_main(lambda: compare.main(["--run", "model=swiftnet device=cpu", "--run",
                                             "model=swiftnet device=cpu", "--out", out]), [],
                       capsys, monkeypatch)
    assert outcome.code == 2 and problem in outcome.line, outcome


@pytest.mark.parametrize("side", ["model=swiftnet 'unbalanced", 'model="swiftnet',
                                  "model=swiftnet \\"])
def test_an_ab_side_that_cannot_be_split_is_one_line(tmp_path, capsys, monkeypatch, side):
    """Before: shlex's ``ValueError: No closing quotation`` ended the tool as a failure."""
    monkeypatch.chdir(tmp_path)
    outcome = run_main(lambda: compare.main(["--run", "model=swiftnet", "--run", side]), [],
                       capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line.startswith(f"error: --run B: cannot split {side!r} into overrides (")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("tool", ["compare", "report"])
def test_a_run_is_not_compared_with_itself(good_run, tmp_path, capsys, monkeypatch, tool):
    """Before: ``zoo.compare RUN RUN`` (or a link to RUN) wrote a table of ratios of 1, and
    ``zoo.report RUN RUN`` a page of them."""
    from zoo.tools import report

    main, out = (compare.main, "c.csv") if tool == "compare" else (report.main, "r.html")
    expected = (f"error: RUN_A and RUN_B are the same folder ({good_run.resolve()}); give two "
                f"runs to compare" if tool == "compare" else
                f"error: {good_run.resolve()} is given twice; a comparison takes different runs")
    (tmp_path / "link").symlink_to(good_run)
    for second in (good_run, tmp_path / "link", Path(str(good_run) + "/")):
        outcome = run_main(lambda: main([str(good_run), str(second), "--out",
                                         str(tmp_path / out)]), [], capsys, monkeypatch)
        assert outcome.code == 2 and outcome.line == expected
    assert not (tmp_path / out).exists()
