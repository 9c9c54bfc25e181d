"""Where the tools write (zoo/tools/profile.py, profiling/files ``check_output_file``): an output
that is a device, under a file, read-only, through a looping link or cannot be resolved is
refused before the work (exit 2); ``hydra.run.dir`` given twice is checked as Hydra will use
it; an existing ``zoo.collect --out`` is replaced only with ``--overwrite``."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from cli_runner import run_main
from meta_overrides import ANY_MODEL_META_32 as META
from profiling import ProfilingError, reports
from profiling.files import check_output_file, check_replaceable
from profiling.reports.html import report as report_page_module
from report_runs import tiny_run
from zoo.tools import calibrate, collect, compare, job, model_build, report, split
from zoo.tools.composition import compose_config
from zoo.tools.profile import main


def test_the_output_folder_given_last_is_the_one_checked_before_the_work(tmp_path, capsys,
                                                                          monkeypatch):
    """``hydra.run.dir`` given twice: Hydra writes into the last, so the check made before
    the work (a long run is not lost at its end) looks at that one too."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("keep")
    started, real = [], model_build.create_model
    monkeypatch.setattr(model_build, "create_model", lambda *a, **k: started.append(a))
    outcome = run_main(main, [*META, "model=swiftnet", f"hydra.run.dir={tmp_path / 'new'}",
                              f"hydra.run.dir={tmp_path / 'theirs'}", "run.overwrite=true"],
                       capsys, monkeypatch)
    assert outcome.code == 2 and "did not write" in outcome.line, outcome
    assert started == [] and (tmp_path / "theirs" / "notes.txt").read_text() == "keep"
    monkeypatch.setattr(model_build, "create_model", real)
    outcome = run_main(main, ["device=meta", "summary=false", "summary=true", "model=swiftnet",
                              "input.size=[32,32]", f"hydra.run.dir={tmp_path / 'run'}"],
                       capsys, monkeypatch)
    assert outcome.code == 0 and outcome.stdout.startswith("options: "), outcome


def test_an_unresolvable_output_folder_is_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for key in ("hydra.run.dir", "hydra.sweep.dir"):
        outcome = run_main(main, [*(["-m"] if "sweep" in key else []), *META,
                                  f"{key}=${{oc.env:ZOO_NOT_SET_ANYWHERE}}"], capsys,
                           monkeypatch)
        assert outcome.code == 2 and "cannot resolve the interpolation" in outcome.line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("folder", ["/dev/null", "/dev/null/run", "/dev/zero", "/proc/self"])
def test_a_device_path_is_not_an_output_folder(folder, capsys, monkeypatch):
    outcome = run_main(main, [*META, "model=swiftnet", f"hydra.run.dir={folder}"], capsys,
                       monkeypatch)
    assert outcome.code == 2, outcome
    assert "not a folder" in outcome.line or "never written" in outcome.line \
        or "cannot be written" in outcome.line


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "run"
    config = compose_config(["model=torchvision", "model.arch=resnet18", *META])
    job.run_profile(config, folder, print_summary=False)
    return folder


def _tools(run: Path, out: str) -> dict:
    """Each tool's command line writing to ``out``."""
    return {
        "compare": (compare.main, [str(run), str(run), "--out", out]),
        "collect": (collect.main, [str(run), "--out", out]),
        "split": (split.main, ["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
                               "--meta", "--out", out]),
        "calibrate": (calibrate.main, ["--device", "cpu", "--seconds", "0.01", "--size", "8",
                                       "--megabytes", "1", "--output", out]),
        "report": (report.main, [str(run), "--out", out.replace(".csv", ".html")]),
    }


@pytest.mark.parametrize("tool", ["compare", "collect", "split", "calibrate", "report"])
@pytest.mark.parametrize("out", ["/dev/null", "/dev/full", "{tmp}/file.txt/below.csv",
                                 "{tmp}", "{tmp}/read-only/x.csv"])
def test_an_output_that_cannot_be_written_is_refused_before_the_work(tool, out, run_dir,
                                                                     tmp_path, capsys,
                                                                     monkeypatch):
    (tmp_path / "file.txt").write_text("a file")
    (tmp_path / "keep.txt").write_text("keep")
    (tmp_path / "read-only").mkdir()
    out = out.format(tmp=tmp_path)
    if tool == "collect" and not out.endswith(".csv"):
        out += "/x.csv" if out.startswith("/dev") else ""
    access = os.access  # root may write anywhere: the read-only folder is one to os.access
    monkeypatch.setattr(os, "access", lambda path, mode: access(path, mode) and Path(
        path) != tmp_path / "read-only")
    worked = []
    for name in ("read_run", "compare_runs"):
        monkeypatch.setattr(reports, name, lambda *a, **k: worked.append(name))
    monkeypatch.setattr(calibrate, "calibrate", lambda *a, **k: worked.append("calibrate"))
    monkeypatch.setattr(reports, "collect_runs", lambda *a, **k: worked.append("collect"))
    monkeypatch.setattr(split, "split_config", lambda *a, **k: worked.append("split"))
    monkeypatch.setattr(report_page_module, "report_page", lambda *a, **k: worked.append("r"))
    main_function, argv = _tools(run_dir, out)[tool]
    outcome = run_main(lambda: main_function(argv), [], capsys, monkeypatch)
    assert outcome.code == 2, outcome
    assert worked == []
    assert (tmp_path / "keep.txt").read_text() == "keep" and Path("/dev/null").exists()


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    return tiny_run(tmp_path_factory.mktemp("audit") / "run")


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
