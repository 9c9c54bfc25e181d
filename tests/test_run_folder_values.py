"""The values a run folder's tables may hold (profiling/reports, ``read_run``): an inf or negative
time, a fractional or too large count, a row pasted twice are refused naming the column and the
row, while what runs do write (a negative retained size, empty cells) is read; the tools refuse
such a folder and write nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from cli_runner import run_main
from profiling import ProfilingError
from profiling.reports import read_run
from report_runs import tiny_run
from zoo.tools import collect, compare


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    return tiny_run(tmp_path_factory.mktemp("audit") / "run")


def _edited(good_run: Path, folder: Path, name: str, edit) -> Path:
    shutil.copytree(good_run, folder)
    table = pd.read_csv(folder / name, keep_default_na=False)
    edit(table).to_csv(folder / name, index=False)
    return folder


def _cell(column: str, value, row: int = 0):
    def edit(table: pd.DataFrame) -> pd.DataFrame:
        table[column] = table[column].astype(object)
        table.loc[row, column] = value
        return table
    return edit


_EDITS = {
    "inf time": ("stages.csv", _cell("cpu_time_ms_median", "inf"),
                 "column cpu_time_ms_median, row 2 holds inf, not a finite number"),
    "-inf in times.csv": ("times.csv", _cell("cpu_time_ms", "-inf"),
                          "column cpu_time_ms, row 2 holds -inf, not a finite number"),
    "negative time": ("stages.csv", _cell("cpu_time_ms_p90", "-3"),
                      "column cpu_time_ms_p90, row 2 holds -3.0, a negative number where none "
                      "can be"),
    "fractional call index": ("stages.csv", _cell("call_index", "0.5"),
                              "column call_index, row 2 holds 0.5, not a whole number from 0 "
                              "to 2**63 - 1 (a count)"),
    "negative repeat": ("times.csv", _cell("repeat", "-1"),
                        "column repeat, row 2 holds -1, not a whole number from 0 to 2**63 - 1"),
    "a count past int64": ("stages.csv", _cell("depth", "99999999999999999999"),
                           "column depth, row 2 holds 99999999999999999999, not a whole number"),
    "a row pasted twice": ("stages.csv", lambda t: pd.concat([t, t.iloc[[1]]]),
                           "row 10 repeats an earlier row's stage=sizes, call_index=0 (each may "
                           "appear once)"),
    "a repeat pasted twice": ("times.csv", lambda t: pd.concat([t.iloc[[0]], t]),
                              "row 3 repeats an earlier row's stage=stem, call_index=0, "
                              "repeat=0"),
}


@pytest.mark.parametrize("case", list(_EDITS))
def test_a_run_folder_edited_into_what_no_run_writes_is_refused(good_run, tmp_path, case):
    """Before: each was read, compared and collected as if measured (an inf or negative time,
    a duplicated row counted twice); a count past int64 crashed zoo.report (exit 1)."""
    name, edit, problem = _EDITS[case]
    folder = _edited(good_run, tmp_path / "run", name, edit)
    with pytest.raises(ProfilingError) as raised:
        read_run(folder)
    assert str(raised.value) == f"{folder / name} is broken: {problem}" or \
        str(raised.value).startswith(f"{folder / name} is broken: {problem}")


def test_what_runs_write_is_still_read(good_run, tmp_path):
    """Memory may be freed (a negative retained size), cells may be empty (no time on a meta
    run), and NaN in forward_ms is refused while finite ones are read."""
    folder = _edited(good_run, tmp_path / "run", "stages.csv",
                     _cell("tensor_retained_mb", "-0.25"))
    _cell("cpu_time_ms_std", "")(pd.read_csv(folder / "stages.csv"))
    record = read_run(folder)
    assert record.stages["tensor_retained_mb"].iloc[0] == -0.25
    text = (folder / "meta.json").read_text()
    (folder / "meta.json").write_text(text.replace('"forward_ms": [', '"forward_ms": [NaN, '))
    with pytest.raises(ProfilingError, match="'forward_ms' must be a list of finite numbers"):
        read_run(folder)


@pytest.mark.parametrize("tool", ["compare", "collect"])
def test_the_tools_refuse_an_edited_run_and_write_nothing(good_run, tmp_path, capsys,
                                                           monkeypatch, tool):
    monkeypatch.chdir(tmp_path)
    folder = _edited(good_run, tmp_path / "edited", "stages.csv", _cell("flops", "inf"))
    out = tmp_path / "out" / "table.csv"
    argv = [str(good_run), str(folder)] if tool == "compare" else [str(folder)]
    main = compare.main if tool == "compare" else collect.main
    outcome = run_main(lambda: main([*argv, "--out", str(out)]), [], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line == (f"error: {folder / 'stages.csv'} is broken: column flops, row 2 "
                            f"holds inf, not a finite number") + (
        "; nothing written: give the other runs, or rerun the broken one"
        if tool == "collect" else "")
    assert not out.parent.exists()
