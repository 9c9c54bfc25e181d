"""``run.overwrite`` replaces only what this tool wrote, and no two runs share a folder
(issue 23, sections 2 and 6): the marker, the protected folders, sweeps replaced only once the
new jobs are done, strict booleans, sweep folders that would collide, and outputs that are
whole or absent after a kill, a full disk or through a symbolic link."""

import errno
from pathlib import Path

import pandas as pd
import pytest

from cli_runner import run_main
from profiling.errors import ProfilingError
from profiling.files import MARKER, write_file, write_folder
from zoo.tools import job
from zoo.tools.composition import CONFIG_DIR, check_overrides
from zoo.options import ConfigError
from zoo.tools.profile import main
from zoo.options import check_yaml_booleans

META = ["model=swiftnet", "device=meta", "input.size=[32,32]", "summary=false"]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("contents", [
    {"notes.txt": b"thesis"},                                # a plain file
    {"data/raw/a.bin": b"\x00\x01"},                         # files in subfolders
    {".hidden": b"x"},                                       # only a hidden file
    {"stages.csv": b"name\n", "meta.json": b"{}"},           # looks like a run, no marker
    {f"sub/{MARKER}": b"marker one level down"},             # a marker not at the top
])
def test_overwrite_refuses_a_folder_this_tool_did_not_write(contents, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "theirs"
    for name, data in contents.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(data)
    before = _tree(target)
    for arguments in ([f"hydra.run.dir={target}"], ["-m", f"hydra.sweep.dir={target}"]):
        outcome = run_main(main, [*arguments, *META, "run.overwrite=true"], capsys, monkeypatch)
        assert outcome.code == 2 and "did not write" in outcome.line, outcome
        assert _tree(target) == before
    with pytest.raises(ProfilingError, match="did not write"):
        write_folder(target, {"a.txt": "new"}, overwrite=True)
    assert _tree(target) == before


def test_a_marker_that_is_a_link_does_not_count(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / MARKER).write_text("x")
    target = tmp_path / "theirs"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    (target / MARKER).symlink_to(tmp_path / "real" / MARKER)
    with pytest.raises(ProfilingError, match="did not write"):
        write_folder(target, {"a.txt": "new"}, overwrite=True)
    assert (target / "keep.txt").read_text() == "keep"


@pytest.mark.parametrize("where", ["cwd", "parent", "home", "home_parent", "root"])
def test_the_working_and_home_directories_and_their_ancestors_are_never_written(
        where, tmp_path, capsys, monkeypatch):
    work, home = tmp_path / "a" / "work", tmp_path / "b" / "home"
    for folder in (work, home):
        folder.mkdir(parents=True)
        (folder / MARKER).write_text("even with a marker")
        (folder / "mine.txt").write_text("mine")
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    target = {"cwd": ".", "parent": "..", "home": str(home), "home_parent": str(home.parent),
              "root": "/"}[where]
    outcome = run_main(main, [f"hydra.run.dir={target}", *META, "run.overwrite=true"], capsys,
                       monkeypatch)
    assert outcome.code == 2 and ("is the working directory" in outcome.line or "holds the"
                                  in outcome.line or "is the home" in outcome.line), outcome
    assert (work / "mine.txt").read_text() == "mine" and (home / "mine.txt").exists()
    with pytest.raises(ProfilingError, match="never written"):
        write_folder(target, {"a.txt": "new"}, overwrite=True)


def test_a_folder_this_tool_wrote_is_replaced_whole_with_true_or_True(tmp_path, capsys,
                                                                      monkeypatch):
    run_dir = tmp_path / "run"
    assert run_main(main, [*META, f"hydra.run.dir={run_dir}"], capsys, monkeypatch).code == 0
    assert (run_dir / MARKER).is_file()
    (run_dir / "stale.txt").write_text("from before")
    for spelling in ("True", "true"):
        outcome = run_main(main, [*META, f"hydra.run.dir={run_dir}",
                                  f"run.overwrite={spelling}"], capsys, monkeypatch)
        assert outcome.code == 0, outcome
        assert not (run_dir / "stale.txt").exists() and (run_dir / MARKER).is_file()


def _sweep(folder: Path, *extra: str) -> list[str]:
    return ["-m", *META, f"hydra.sweep.dir={folder}", "model.num_features=48,96", *extra]


def test_a_sweep_is_replaced_only_after_the_new_jobs_wrote_their_results(tmp_path, capsys,
                                                                         monkeypatch):
    sweep = tmp_path / "sweep"
    assert run_main(main, _sweep(sweep), capsys, monkeypatch).code == 0
    before = _tree(sweep)
    assert MARKER in before and "summary.csv" in before
    seen = []
    original = job.run_profile

    def observing(cfg, run_dir, **kwargs):
        seen.append(_tree(sweep) == before)  # the old sweep, whole, while the new one runs
        return original(cfg, run_dir, **kwargs)

    monkeypatch.setattr(job, "run_profile", observing)
    outcome = run_main(main, _sweep(sweep, "run.overwrite=true"), capsys, monkeypatch)
    assert outcome.code == 0, outcome
    assert seen == [True, True]
    after = _tree(sweep)
    assert after != before and len(pd.read_csv(sweep / "summary.csv").run.unique()) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["sweep"]  # no staging folder left


def test_an_interrupted_sweep_leaves_the_old_one_whole(tmp_path, capsys, monkeypatch):
    sweep = tmp_path / "sweep"
    assert run_main(main, _sweep(sweep), capsys, monkeypatch).code == 0
    before = _tree(sweep)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(job, "run_profile", interrupted)
    outcome = run_main(main, _sweep(sweep, "run.overwrite=true"), capsys, monkeypatch)
    assert outcome.code == 130, outcome
    assert _tree(sweep) == before
    assert [p.name for p in tmp_path.iterdir()] == ["sweep"]


@pytest.mark.parametrize("override", ["run.overwrite=TRUE", "plots=yes", "trace=tRuE",
                                      "input.pad=FALSE", "model.batch_norm=off",
                                      "summary=False,fALSE"])
def test_booleans_accept_only_true_and_false_as_yaml_spells_them(override):
    problem = check_overrides(["model=swiftnet", override])
    assert problem and ("is not a boolean" in problem or "true or false" in problem), problem


def test_booleans_in_files_are_spelled_the_same_way(tmp_path):
    for spelling, ok in (("true", True), ("False", True), ("yes", False), ("ON", False),
                         ("TRUE", False), ("'yes'", True)):
        path = tmp_path / "experiment.yaml"
        path.write_text(f"# @package _global_\nrun:\n  overwrite: {spelling}\n")
        if ok:
            check_yaml_booleans(path)
        else:
            with pytest.raises(ConfigError, match="line 3: .* is not a boolean"):
                check_yaml_booleans(path)
    for shipped in CONFIG_DIR.rglob("*.yaml"):
        check_yaml_booleans(shipped)


@pytest.mark.parametrize("subdir", ["same", "${model.name}", "${hydra.job.name}",
                                    "run_${run.seed}"])
def test_sweep_jobs_that_would_share_a_folder_are_refused_before_the_first(
        subdir, tmp_path, capsys, monkeypatch):
    started = []
    monkeypatch.setattr(job, "run_profile", lambda *a, **k: started.append(a))
    sweep = tmp_path / "sweep"
    outcome = run_main(main, _sweep(sweep, f"hydra.sweep.subdir={subdir}"), capsys,
                       monkeypatch)
    assert outcome.code == 2 and "the same folder" in outcome.line, outcome
    assert started == [] and not sweep.exists()


def test_distinct_sweep_folders_pass(tmp_path, capsys, monkeypatch):
    started = []
    monkeypatch.setattr(job, "run_profile", lambda cfg, run_dir, **k: started.append(run_dir))
    outcome = run_main(main, _sweep(tmp_path / "s", "hydra.sweep.subdir=f${model.num_features}"),
                       capsys, monkeypatch)
    assert outcome.code == 0, outcome
    assert sorted(Path(p).name for p in started) == ["f48", "f96"]


@pytest.mark.parametrize("override, expected", [
    ("hydra.output_subdir=.hydra", "'hydra.output_subdir' is not an option"),
    ("hydra.job.chdir=true", "'hydra.job.chdir' is not an option"),
])
def test_hydra_settings_that_would_spoil_a_run_folder_are_refused(override, expected, tmp_path,
                                                                  capsys, monkeypatch):
    outcome = run_main(main, [*META, override, f"hydra.run.dir={tmp_path / 'run'}"], capsys,
                       monkeypatch)
    assert outcome.code == 2 and expected in outcome.line
    assert list(tmp_path.iterdir()) == []


class _Broken:
    """A table that fails half-way through being written (a kill, a full disk)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def to_csv(self, path, index=False):
        Path(path).write_text("name,half")
        raise self.error


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, "No space left on device"),
                                   KeyboardInterrupt(), MemoryError()])
def test_a_file_is_whole_or_absent_after_a_full_disk_or_a_kill(error, tmp_path):
    old = tmp_path / "summary.csv"
    old.write_text("the old table\n")
    with pytest.raises(type(error)):
        write_file(old, _Broken(error))
    assert old.read_text() == "the old table\n"
    with pytest.raises(type(error)):
        write_file(tmp_path / "new.csv", _Broken(error))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.csv"]


def test_outputs_through_a_symbolic_link_land_where_it_points(tmp_path, capsys, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run").symlink_to(elsewhere, target_is_directory=True)
    outcome = run_main(main, [*META, f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 0, outcome
    assert (tmp_path / "run").is_symlink() and (elsewhere / "stages.csv").stat().st_size > 0
    table = tmp_path / "table.csv"
    table.symlink_to(tmp_path / "elsewhere" / "table.csv")
    write_file(table, "a,b\n1,2\n")
    assert table.is_symlink() and (elsewhere / "table.csv").read_text() == "a,b\n1,2\n"
