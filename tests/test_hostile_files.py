"""Hostile and broken files for every tool (issue 23, section 5): YAML that expands through
aliases or nests too deep, a mapping where a number belongs, and run folders that are partial,
from another version or hand-edited, each refused with one line naming the file (exit 2)."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from cli_runner import run_main
from profiling import ProfilingError
from profiling.counting.roofline import load_ceilings
from profiling.files import read_json, read_yaml
from zoo.options import ConfigError
from zoo.tools import collect, compare, plot
from zoo.tools import composition as tool_cli
from zoo.tools.experiment_files import check_experiment_file
from zoo.tools.profile import main as profile_main

#: YAML that stands for billions of values, or nests past any parser's recursion
HOSTILE_YAML = {
    "aliases of aliases": "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10)),
    "a recursive alias": "a: &a [1, *a]\n",
    "deep flow nesting": "a: " + "[" * 20000 + "]" * 20000 + "\n",
    "deep block nesting": "".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300
                          + "v: 1\n",
    "deep mapping nesting": "a: " + "{b: " * 5000 + "1" + "}" * 5000 + "\n",
}
HOSTILE_PROBLEM = {"aliases of aliases": "expands through its aliases",
                   "a recursive alias": "expands through its aliases",
                   "deep flow nesting": "nests deeper than 50 levels",
                   "deep block nesting": "nests deeper than 50 levels",
                   "deep mapping nesting": "nests deeper than 50 levels"}


@pytest.mark.parametrize("case", list(HOSTILE_YAML))
def test_hostile_yaml_is_refused_quickly_with_one_line_naming_the_file(tmp_path, case):
    path = tmp_path / "hostile.yaml"
    path.write_text(HOSTILE_YAML[case])
    for reader, error in ((read_yaml, ProfilingError), (load_ceilings, ProfilingError),
                          (check_experiment_file, ConfigError)):
        started = time.perf_counter()
        with pytest.raises(error) as raised:
            reader(path)
        assert time.perf_counter() - started < 1.0
        message = str(raised.value)
        assert str(path) in message and HOSTILE_PROBLEM[case] in message and "\n" not in message


def test_a_json_file_that_nests_too_deep_is_refused(tmp_path):
    path = tmp_path / "meta.json"
    path.write_text('{"config": ' + "[" * 50000 + "]" * 50000 + "}")
    with pytest.raises(ProfilingError, match="nests deeper than 50 levels"):
        read_json(path)
    path.write_text('{"text": "' + "[" * 500 + '", "n": [1, [2]]}')  # brackets in a string
    assert read_json(path) == {"text": "[" * 500, "n": [1, [2]]}


@pytest.mark.parametrize("content, expected", [
    ("name: x\npeak_flops_per_s: {float32: 1.0e12}\nmemory_bandwidth_bytes_per_s: {a: 1}\n",
     "memory_bandwidth_bytes_per_s must be a number, got dict"),
    ("name: x\npeak_flops_per_s: {float32: {a: 1}}\nmemory_bandwidth_bytes_per_s: 1.0e+9\n",
     "peak_flops_per_s.float32 must be a number, got dict"),
    ("name: x\npeak_flops_per_s: [1, 2]\nmemory_bandwidth_bytes_per_s: 1.0e+9\n",
     "peak_flops_per_s must be a mapping"),
    ("name: x\npeak_flops_per_s: {float32: true}\nmemory_bandwidth_bytes_per_s: 1.0e+9\n",
     "peak_flops_per_s.float32 must be a number, got bool"),
])
def test_a_ceilings_file_with_a_mapping_where_a_number_belongs(tmp_path, content, expected):
    path = tmp_path / "device.yaml"
    path.write_text(content)
    with pytest.raises(ProfilingError, match=expected) as raised:
        load_ceilings(path)
    assert str(raised.value).startswith(str(path))


@pytest.mark.parametrize("content, expected", [
    ("# @package _global_\nrun:\n  repeats: {a: 1}\n", "run.repeats={'a': 1} is not accepted"),
    ("# @package _global_\ninput:\n  size: {h: 1, w: 2}\n", "input.size={'h': 1, 'w': 2} is not"),
    ("# @package _global_\nrun:\n  warmup: [1, 2]\n", "run.warmup=[1, 2] is not accepted"),
    ("- just\n- a list\n", "holds list, not a mapping of options"),
])
def test_an_experiment_file_with_a_value_of_the_wrong_type_names_the_file(tmp_path, content,
                                                                          expected):
    path = tmp_path / "mine.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[").replace("]", r"\]")
                       .replace("{", r"\{").replace("}", r"\}")) as raised:
        check_experiment_file(path)
    assert f"experiment file {path}" in str(raised.value)


@pytest.mark.parametrize("case", ["aliases of aliases", "deep flow nesting"])
def test_the_profile_tool_refuses_a_hostile_experiment_before_hydra_reads_it(
        tmp_path, monkeypatch, capsys, case):
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "bomb.yaml").write_text(HOSTILE_YAML[case])
    monkeypatch.setattr(tool_cli, "CONFIG_DIR", tmp_path)
    started = time.perf_counter()
    outcome = run_main(profile_main, ["model=swiftnet", "device=meta", "experiment=bomb"],
                       capsys, monkeypatch)
    assert time.perf_counter() - started < 5.0
    assert outcome.code == 2 and str(tmp_path / "experiment" / "bomb.yaml") in outcome.line
    assert HOSTILE_PROBLEM[case] in outcome.line


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
