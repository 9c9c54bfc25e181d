"""The file readers (profiling/files/reading.py): ``file_problem`` names what a path is when it is
no regular file; ``read_yaml``, ``read_json`` and ``read_table`` never open a FIFO or a device;
YAML that expands through aliases or nests too deep and JSON that nests too deep are refused
quickly with one line naming the file, also when the profile tool meets such an experiment."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cli_runner import run_main
from profiling import ProfilingError
from profiling.counting.roofline import load_ceilings
from profiling.files import file_problem, read_json, read_table, read_yaml
from special_paths import KINDS as _KINDS
from special_paths import odd_paths_in
from special_paths import within as _within
from zoo.options import ConfigError
from zoo.tools import composition as tool_cli
from zoo.tools.experiment_files import check_experiment_file
from zoo.tools.profile import main as profile_main


@pytest.fixture
def odd_paths(tmp_path) -> dict[str, Path]:
    """Paths that exist (or seem to) but are no regular file to read."""
    return odd_paths_in(tmp_path)


def test_file_problem_names_each_kind(odd_paths, tmp_path):
    for kind, path in odd_paths.items():
        assert file_problem(path) == _KINDS[kind], kind
    assert file_problem(tmp_path / "absent") == "does not exist"
    (tmp_path / "plain").write_text("x")
    assert file_problem(tmp_path / "plain") == ""


@pytest.mark.parametrize("reader", [read_yaml, read_json, read_table])
def test_readers_never_open_what_is_no_regular_file(odd_paths, reader):
    """Before: a FIFO was opened and waited on forever; a device read without end."""
    for kind, path in odd_paths.items():
        with _within(5), pytest.raises(ProfilingError) as raised:
            reader(path)
        assert str(raised.value) == f"{path} {_KINDS[kind]}; give a file"


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
