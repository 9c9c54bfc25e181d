"""Hostile and unusual input across the tools, from an outside audit (issue 23's promises):
option spellings that Hydra parses but means otherwise, files that are no regular files,
checkpoints that hold what no model saves, run folders edited into what no run writes, and
refused runs that must leave no folder behind. Each case is one line, exit 2, nothing written.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from cli_runner import run_main
from profiling import ProfilingError
from profiling.files import (check_output_file, check_replaceable, file_problem, read_json,
                             read_table, read_yaml)
from profiling.reports import read_run
from report_runs import tiny_run
from zoo.models.checkpoints import load_checkpoint, read_state_dict
from zoo.options import ConfigError
from zoo.inputs import resolve_image_files
from zoo.tools import collect, compare
from zoo.tools.composition import check_overrides
from zoo.tools.profile import _first_new_folder, _remove_empty_folders
from zoo.tools.profile import main as profile_main


@contextmanager
def _within(seconds: int):
    """Fail instead of hanging: a FIFO opened for reading waits for a writer forever."""
    def hang(*_):
        raise TimeoutError(f"still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def odd_paths(tmp_path) -> dict[str, Path]:
    """Paths that exist (or seem to) but are no regular file to read."""
    folder = tmp_path / "odd"
    folder.mkdir()
    os.mkfifo(folder / "fifo.pth")
    (folder / "folder.pth").mkdir()
    (folder / "loop_a.pth").symlink_to("loop_b.pth")
    (folder / "loop_b.pth").symlink_to("loop_a.pth")
    (folder / "dangling.pth").symlink_to("gone.pth")
    return {"a FIFO": folder / "fifo.pth", "a folder": folder / "folder.pth",
            "a looping link": folder / "loop_a.pth", "a dangling link": folder / "dangling.pth",
            "a device": Path("/dev/null")}


_KINDS = {"a FIFO": "is a FIFO (named pipe), not a regular file", "a folder": "is a folder",
          "a looping link": "is a symbolic link that loops",
          "a dangling link": "is a symbolic link to gone.pth, which does not exist",
          "a device": "is a device, not a regular file"}


# --- options -------------------------------------------------------------------------------

@pytest.mark.parametrize("override", ["~run", "~run.repeats", "~summary", "~input.size",
                                      "~model.num_classes", "~roofline.ceilings"])
def test_options_cannot_be_deleted(override):
    """Before: ``~run.repeats`` passed the checks and the job died on the missing key (exit 1,
    a traceback in a log); ``~model.num_classes`` quietly fell back to a builder default."""
    problem = check_overrides(["model=swiftnet", override])
    assert problem == (f"{override}: options cannot be deleted, every option has a value; set "
                       f"it instead ({override[1:]}=VALUE, or {override[1:]}=null where null "
                       f"is accepted)")


def test_only_the_optional_group_may_be_deleted():
    assert check_overrides(["model=swiftnet", "~experiment"]) is None
    assert check_overrides(["~device"]).startswith("the device group is required and cannot "
                                                   "be deleted (~device); choose one of: cpu, ")


@pytest.mark.parametrize("overrides, key", [(["+run.repeats=3"], "run.repeats"),
                                            (["+summary=false"], "summary"),
                                            (["model=swiftnet", "+model.in_channels=1"],
                                             "model.in_channels")])
def test_a_plus_before_an_existing_option_says_to_drop_it(overrides, key):
    """Before: "unknown option 'run.repeats' (did you mean run.repeats?)"."""
    assert check_overrides(overrides) == (f"{key} is an option already: set it without '+' "
                                          f"({key}=VALUE)")


@pytest.mark.parametrize("overrides, group", [(["model=null"], "model"),
                                              (["device=null"], "device"),
                                              (["input=null"], "input"),
                                              (["model=swiftnet,null"], "model")])
def test_a_group_set_to_null_lists_its_configs(overrides, group):
    """Before: "Config group override must be a string or a list. Got NoneType"."""
    problem = check_overrides(overrides)
    assert problem is not None and "choose one of: " in problem and "NoneType" not in problem
    assert problem.split("choose one of: ")[1].split(", ")[0] in {"faster_rcnn", "cpu",
                                                                  "default"}


@pytest.mark.parametrize("override, named", [
    ("model=swіftnet", "'і' is CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, not ASCII"),
    ("model=swiftnеt", "'е' is CYRILLIC SMALL LETTER IE, not ASCII"),
    ("model.checkpoint=/tmp/wéights.pth", "'é' is LATIN SMALL LETTER E WITH ACUTE, not ASCII"),
    ("run.seed", "missing EQUAL at '<EOF>'"),
    ("run.seed=[1", "no viable alternative at input '[1'"),
])
def test_an_override_that_cannot_be_parsed_names_why_and_what_is_accepted(override, named):
    """Before: "cannot parse the overrides: LexerNoViableAltException: model=swіftnet", with
    nothing to see in a look-alike letter."""
    problem = check_overrides(["model=swiftnet", override])
    assert problem.startswith(f"cannot parse {override!r}: ")
    assert named in problem and problem.endswith(
        "accepted: KEY=VALUE as Hydra's override grammar reads it (quote a value that holds "
        "spaces, non-ASCII letters or symbols: KEY='...')")


def test_a_quoted_non_ascii_value_is_accepted():
    assert check_overrides(["model=swiftnet", "model.checkpoint='/tmp/wéights.pth'"]) is None


@pytest.mark.parametrize("override, shown", [("model.num_classes=null", "null"),
                                             ("model.batch_norm=null", "null"),
                                             ("model.spp_grids=[8,null]", "[8, null]")])
def test_a_refused_value_is_shown_as_it_was_typed(override, shown):
    """Before: ``model.num_classes=None is not accepted``."""
    problem = check_overrides(["model=swiftnet", override])
    assert problem.startswith(f"{override.split('=')[0]}={shown} is not accepted; accepted: ")


def test_a_deleted_option_is_refused_by_the_tool_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = run_main(profile_main, ["model=swiftnet", "device=meta", "~run.repeats",
                                      f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2 and "~run.repeats: options cannot be deleted" in outcome.line
    assert list(tmp_path.iterdir()) == []


# --- a refused run leaves no folder ---------------------------------------------------------

@pytest.mark.parametrize("arguments, created, then", [
    ([], "results", "results/runs"),
    (["hydra.run.dir=new/a/run"], "new", "new/a"),
    (["hydra.run.dir=new/run_${zoo.stamp:}"], "new", None),
    (["-m", "hydra.sweep.dir=sweeps/one"], "sweeps", "sweeps/one"),
    (["-m"], "results", "results/sweeps"),
])
def test_the_folders_hydra_would_create_are_known_before_it_runs(tmp_path, monkeypatch,
                                                                 arguments, created, then):
    """The highest folder that does not exist yet (the run folder itself is known only to
    Hydra, and removed by the job when it stays empty)."""
    monkeypatch.chdir(tmp_path)
    assert _first_new_folder(arguments) == tmp_path / created
    (tmp_path / created).mkdir()
    assert _first_new_folder(arguments) == (tmp_path / then if then else None)


def test_only_empty_folders_are_removed(tmp_path):
    (tmp_path / "top" / "runs" / "empty").mkdir(parents=True)
    (tmp_path / "top" / "kept").mkdir()
    (tmp_path / "top" / "kept" / "file.txt").write_text("x")
    _remove_empty_folders(tmp_path / "top")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "top", "top/kept", "top/kept/file.txt"]
    _remove_empty_folders(tmp_path / "absent")  # nothing to do


@pytest.mark.parametrize("arguments", [["model.stage_depth=-1"],
                                       ["model.stage_depth=-1", "hydra.run.dir=new/a/run"],
                                       ["model.checkpoint=fifo.pth"]])
def test_a_run_refused_after_hydra_started_leaves_no_folder(tmp_path, capsys, monkeypatch,
                                                             arguments):
    """Refused while the model is built (after Hydra made the run folder): before, the empty
    ``results/runs/`` stayed in the working directory."""
    monkeypatch.chdir(tmp_path)
    os.mkfifo(tmp_path / "fifo.pth")
    outcome = run_main(profile_main, ["model=swiftnet", "device=meta", "input.size=[32,32]",
                                      "summary=false", *arguments], capsys, monkeypatch)
    assert outcome.code == 2, outcome
    assert [p.name for p in tmp_path.iterdir()] == ["fifo.pth"]


# --- files that are no regular files ---------------------------------------------------------

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


def test_a_checkpoint_that_is_no_regular_file_says_what_it_is(odd_paths):
    """Before: "checkpoint file not found" for each, though each exists."""
    for kind, path in odd_paths.items():
        with _within(5), pytest.raises(ConfigError) as raised:
            read_state_dict(str(path))
        assert str(raised.value) == (f"checkpoint {path} {_KINDS[kind]}; give the path of a "
                                     f"local .pth/.pt/.safetensors file")


def test_an_image_folder_holding_a_fifo_is_refused_not_waited_on(tmp_path, odd_paths):
    """Before: the FIFO ``a.png`` in a folder of images was opened and the run hung."""
    shutil.copy(Path(__file__).parents[1] / "zoo" / "inputs" / "sample" / "chelsea_0.png",
                tmp_path / "b.png")
    os.mkfifo(tmp_path / "a.png")
    with pytest.raises(ConfigError, match=r"a\.png \(in the folder .*\) is a FIFO \(named "
                                          r"pipe\), not a regular file; accepted: image"):
        resolve_image_files(str(tmp_path), "image")
    for kind, path in odd_paths.items():
        if kind != "a folder":  # a folder is a folder of images
            with pytest.raises(ConfigError, match=re.escape(f"input.images: {path} "
                                                            f"{_KINDS[kind]}")):
                resolve_image_files(str(path), "image")


# --- checkpoints ---------------------------------------------------------------------------

def _saved(tmp_path: Path, content, name: str = "weights.pth") -> str:
    path = tmp_path / name
    torch.save(content, path)
    return str(path)


@pytest.mark.parametrize("tensor, problem", [
    (torch.eye(3).to_sparse(), "a tensor of layout torch.sparse_coo"),
    (torch.eye(3).to_sparse_csr(), "a tensor of layout torch.sparse_csr"),
    (torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]), "a nested tensor"),
    (torch.quantize_per_tensor(torch.eye(3), 0.1, 0, torch.qint8), "a quantized tensor"),
    (torch.full((3,), float("nan")).to(torch.float8_e4m3fn), "non-finite values"),
])
def test_a_checkpoint_tensor_no_model_saves_is_refused(tmp_path, tensor, problem):
    """Before: sparse, nested and float8 tensors crashed the finiteness check
    (NotImplementedError, exit 1)."""
    path = _saved(tmp_path, {"weight": tensor})
    with pytest.raises(ConfigError) as raised:
        read_state_dict(path)
    assert str(raised.value).startswith(f"checkpoint {path} holds {problem} at weight; "
                                        f"expected dense, real, finite weights")


@pytest.mark.parametrize("key", [1, (1, 2), 2.5])
def test_a_checkpoint_key_that_is_no_name_is_refused(tmp_path, key):
    """Before: SwiftNet's key map met an int key (TypeError, exit 1)."""
    path = _saved(tmp_path, {"weight": torch.zeros(1), key: torch.zeros(1)})
    with pytest.raises(ConfigError) as raised:
        read_state_dict(path)
    assert str(raised.value) == (f"checkpoint {path} holds a tensor under the key {key!r} "
                                 f"({type(key).__name__}); a state dict's keys are parameter "
                                 f"names")


@pytest.mark.parametrize("wrap", [lambda sd: sd, lambda sd: {"state_dict": sd, "epoch": 3},
                                  lambda sd: {"model": sd}])
def test_a_data_parallel_checkpoint_loads(tmp_path, wrap):
    """``nn.DataParallel`` saves every key under ``module.``; before, only SwiftNet's key map
    dropped it, and every other model refused the file as 100% missing and unexpected."""
    torch.manual_seed(0)
    source = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    saved = {f"module.{k}": v for k, v in source.state_dict().items()}
    path = _saved(tmp_path, wrap(saved), "parallel.pth.tar")
    target = load_checkpoint(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)), path)
    for name, value in source.state_dict().items():
        assert torch.equal(target.state_dict()[name], value)


def test_a_model_whose_own_names_begin_with_module_keeps_them(tmp_path):
    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.module = nn.Linear(2, 2)

    saved = Wrapper().state_dict()
    assert list(saved) == ["module.weight", "module.bias"]
    loaded = load_checkpoint(Wrapper(), _saved(tmp_path, saved))
    assert torch.equal(loaded.module.weight, saved["module.weight"])


# --- run folders edited into what no run writes -----------------------------------------------

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


# --- experiment files ---------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "run:\n  repeats: 3\n", "# @package model\nrun:\n  seed: 1\n",
                                  "# a comment\nrun:\n  seed: 1\n# @package _global_\n"])
def test_an_experiment_without_the_global_header_is_refused(tmp_path, text):
    """Without ``# @package _global_`` Hydra put the file's options under ``experiment.*``;
    before, the run was refused as "unknown option 'experiment'" (an empty file) or the
    options were silently not set."""
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(text)
    problem = check_overrides(["model=swiftnet", f"hydra.searchpath=[file://{tmp_path}]",
                               "experiment=mine"])
    assert problem == (f"experiment file {tmp_path / 'experiment' / 'mine.yaml'} does not begin "
                       f"with the line '# @package _global_'; without it Hydra puts its options "
                       f"under experiment.* instead of setting them (see the shipped "
                       f"configs/experiment/*.yaml)")
    (tmp_path / "experiment" / "mine.yaml").write_text("# @package _global_\n" + text
                                                         if text.startswith("run") else
                                                         "# @package _global_\n")
    assert check_overrides(["model=swiftnet", f"hydra.searchpath=[file://{tmp_path}]",
                            "experiment=mine"]) is None


# --- output paths --------------------------------------------------------------------------

def test_an_output_through_a_looping_link_is_one_line(tmp_path, capsys, monkeypatch, good_run):
    """Before: Python's ``RuntimeError: Symlink loop`` ended zoo.compare as a failure (exit 1,
    a traceback in a log); the run folder check met the same."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for option, path in (("--out", tmp_path / "a"), ("--out", tmp_path / "a" / "c.csv")):
        with pytest.raises(ProfilingError, match="a symbolic link on the way loops"):
            check_output_file(path, option)
    with pytest.raises(ProfilingError, match="a symbolic link on the way loops"):
        check_replaceable(tmp_path / "b" / "run")
    outcome = run_main(lambda: compare.main([str(good_run), str(good_run.parent / "other"),
                                             "--out", str(tmp_path / "a")]), [], capsys,
                       monkeypatch)
    assert outcome.code == 2 and "a symbolic link on the way loops" in outcome.line


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


@pytest.mark.parametrize("overrides, problem", [
    (["roofline.ceilings=nope"], "roofline.ceilings=nope: no device ceilings named 'nope'"),
    (["roofline.ceilings=/nowhere/c.yaml"], "roofline.ceilings=/nowhere/c.yaml: ceilings file "
                                            "not found: /nowhere/c.yaml"),
    (["roofline.ceilings=h100_sxm", "roofline.dtype=int3"],
     "roofline.ceilings=h100_sxm: no int3 peak for h100_sxm; it has: float64, float32"),
    (["roofline.ceilings=raspberry_pi5", "run.dtype=bfloat16"],
     "roofline.ceilings=raspberry_pi5: no bfloat16 peak for raspberry_pi5; it has: float32"),
])
def test_ceilings_are_checked_before_the_work(overrides, problem):
    """Before: the ceilings were first read when the run folder was written, after every timed
    forward (a wrong name or type lost the run, or refused it after the model was built)."""
    assert check_overrides(["model=swiftnet", *overrides]).startswith(problem)
    assert check_overrides(["model=swiftnet", "roofline.ceilings=h100_sxm",
                            "run.dtype=int8"]) is None


@pytest.mark.parametrize("name", ["summary.csv", "table.parquet", "link.csv"])
def test_collect_replaces_an_existing_table_only_when_asked(good_run, tmp_path, capsys,
                                                            monkeypatch, name):
    """Before: ``zoo.collect SWEEP --out SWEEP/summary.csv`` replaced the sweep's own table
    without a word (zoo.compare asks for --overwrite)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept.csv").write_text("kept\n")
    out = tmp_path / name
    if name == "link.csv":
        out.symlink_to(tmp_path / "kept.csv")
    else:
        out.write_text("kept\n")
    outcome = run_main(lambda: collect.main([str(good_run), "--out", str(out)]), [], capsys,
                       monkeypatch)
    assert outcome.code == 2
    assert outcome.line == (f"error: {out} exists; choose another --out, or replace it with "
                            f"--overwrite")
    assert out.read_text() == "kept\n"
    if name.endswith(".csv"):
        outcome = run_main(lambda: collect.main([str(good_run), "--out", str(out),
                                                 "--overwrite"]), [], capsys, monkeypatch)
        assert outcome.code == 0 and pd.read_csv(out)["stage"].iloc[0] == "stem"


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


@pytest.mark.parametrize("after, problem", [
    (["~run.seed"], "~run.seed: options cannot be deleted"),
    (["run.seed=1,2"], "is a sweep; give one value per option"),
    (["model.in_channels=0.5"], "model.in_channels=0.5 is not accepted"),
])
def test_split_reads_overrides_given_after_its_flags(tmp_path, capsys, monkeypatch, after,
                                                     problem):
    """Before: ``zoo.split model=swiftnet --meta run.seed=1`` was refused as 'unrecognized
    arguments: run.seed=1' (argparse stops gathering positionals at a flag)."""
    from zoo.tools import split

    monkeypatch.chdir(tmp_path)
    outcome = run_main(lambda: split.main(["model=swiftnet", "--meta", "--depth", "1", *after]),
                       [], capsys, monkeypatch)
    assert outcome.code == 2 and problem in outcome.line, outcome
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, option", [(["--size", "1000000"], "--size"),
                                          (["--size", "99999999999"], "--size"),
                                          (["--megabytes", "100000000"], "--megabytes")])
def test_calibrate_refuses_buffers_larger_than_the_memory(tmp_path, capsys, monkeypatch, argv,
                                                          option):
    """Before: the allocation failed (exit 1, 'out of memory ... try a smaller input.size',
    an option calibrate does not have)."""
    from zoo.tools import calibrate

    outcome = run_main(lambda: calibrate.main(["--device", "cpu", "--seconds", "0.01", *argv]),
                       [], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line.startswith(f"error: {option}={argv[1]} needs ")
    assert outcome.line.endswith(f"GiB of cpu memory; give a smaller {option}")
