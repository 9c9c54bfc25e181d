"""Run folders that are partial, from another version or hand-edited, given to zoo.compare,
zoo.plot and zoo.collect (profiling/reports, ``read_run``): each is refused with one line naming
the wrong file (exit 2), and nothing is written."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from cli_runner import run_main
from zoo.tools import collect, compare, plot


@pytest.fixture(scope="module")
def timed_run(tmp_path_factory):
    """A finished CPU run with times.csv and layers.csv, to copy and break."""
    from zoo.tools.composition import compose_config
    from zoo.tools.job import run_profile

    folder = tmp_path_factory.mktemp("runs") / "good"
    run_profile(compose_config(["model=torchvision", "model.arch=resnet18", "device=cpu",
                                "input.size=[32,32]", "run.warmup=0", "run.repeats=2",
                                "summary=false"]), folder, print_summary=False)
    return folder


def _edit_csv(name: str, column: str, value: str):
    def edit(folder):
        path = folder / name
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
        table.loc[0, column] = value
        table.to_csv(path, index=False)
        return path
    return edit


def _remove(name: str):
    def remove(folder):
        (folder / name).unlink()
        return folder / name
    return remove


def _write(name: str, text: str):
    def write(folder):
        (folder / name).write_text(text)
        return folder / name
    return write


#: each break, and the file the line must name
BROKEN_RUNS = {
    "partial: no stages.csv": _remove("stages.csv"),
    "partial: no meta.json": _remove("meta.json"),
    "hand-edited stages.csv: text for a count": _edit_csv("stages.csv", "flops", "lots"),
    "hand-edited stages.csv: text for a time": _edit_csv("stages.csv", "cpu_time_ms_median",
                                                         "fast"),
    "hand-edited times.csv": _edit_csv("times.csv", "cpu_time_ms", "1.2.3"),
    "other version: times.csv without repeat": _write("times.csv", "stage,call_index,ms\n"
                                                                   "a,0,1.0\n"),
    "meta.json: a mapping for forward_ms": lambda folder: _edit_meta(folder, "forward_ms",
                                                                     {"a": 1}),
    "meta.json: a list for config": lambda folder: _edit_meta(folder, "config", [1]),
    "meta.json nests too deep": _write("meta.json", '{"config": ' + "[" * 100 + "]" * 100
                                       + "}"),
}


def _edit_meta(folder, key, value):
    path = folder / "meta.json"
    meta = json.loads(path.read_text())
    meta[key] = value
    path.write_text(json.dumps(meta))
    return path


def _broken_copy(timed_run, tmp_path, case):
    folder = tmp_path / "broken"
    folder.mkdir()
    for file in timed_run.iterdir():
        if file.is_file():
            (folder / file.name).write_bytes(file.read_bytes())
    return folder, BROKEN_RUNS[case](folder)


@pytest.mark.parametrize("case", list(BROKEN_RUNS))
def test_compare_names_the_wrong_file_of_a_broken_run(timed_run, tmp_path, case, capsys,
                                                      monkeypatch):
    folder, wrong = _broken_copy(timed_run, tmp_path, case)
    monkeypatch.chdir(tmp_path)
    outcome = run_main(compare.main, [str(timed_run), str(folder), "--out",
                                      str(tmp_path / "out.csv")], capsys, monkeypatch)
    assert outcome.code == 2 and str(wrong) in outcome.line, outcome.stderr
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("case", ["partial: no stages.csv", "partial: no meta.json",
                                  "hand-edited stages.csv: text for a count",
                                  "meta.json: a list for config"])
def test_plot_names_the_wrong_file_of_a_broken_run(timed_run, tmp_path, case, capsys,
                                                   monkeypatch):
    pytest.importorskip("matplotlib")
    folder, wrong = _broken_copy(timed_run, tmp_path, case)
    outcome = run_main(plot.main, [str(folder)], capsys, monkeypatch)
    assert outcome.code == 2 and str(wrong) in outcome.line, outcome.stderr
    assert not (folder / "plots").exists()


def test_plot_names_a_hand_edited_layers_table(timed_run, tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    folder, _ = _broken_copy(timed_run, tmp_path, "partial: no stages.csv")
    (folder / "stages.csv").write_bytes((timed_run / "stages.csv").read_bytes())
    wrong = _edit_csv("layers.csv", "params", "many")(folder)
    outcome = run_main(plot.main, [str(folder)], capsys, monkeypatch)
    assert outcome.code == 2 and f"{wrong} is broken: column params" in outcome.line


@pytest.mark.parametrize("case", ["partial: no stages.csv",
                                  "hand-edited stages.csv: text for a time",
                                  "meta.json: a mapping for forward_ms"])
def test_collect_names_the_wrong_file_and_writes_nothing(timed_run, tmp_path, case, capsys,
                                                           monkeypatch):
    folder, wrong = _broken_copy(timed_run, tmp_path, case)
    out = tmp_path / "all.csv"
    outcome = run_main(collect.main, [str(timed_run), str(folder), "--out", str(out)], capsys,
                       monkeypatch)
    assert outcome.code == 2 and str(wrong) in outcome.line and "nothing written" in outcome.line
    assert not out.exists()
