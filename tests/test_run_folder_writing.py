"""How the profile tool names and writes run folders (profiling/files/writing.py, ``write_folder``;
zoo/tools/profile.py; zoo/tools/resolvers.py): default names never collide, two runs started
together keep both results, an existing run or sweep is refused unless ``run.overwrite=true``
and then replaced whole, a folder is complete or absent (stale temporaries go), and a refused run
leaves no folder behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_main
from meta_overrides import SWIFTNET_META as META
from profiling import ProfilingError
from profiling.files import remove_stale_temporaries, write_folder
from zoo.tools.profile import _first_new_folder, _remove_empty_folders, main
from zoo.tools.profile import main as profile_main
from zoo.tools.resolvers import model_label, run_stamp


ROOT = Path(__file__).resolve().parents[1]


def test_default_names_are_unique_to_the_millisecond_and_say_the_arch():
    stamps = {run_stamp() for _ in range(200)}
    assert len(stamps) == 200
    assert all(len(s) == len("2026-11-23_06-50-12.345-3fa2c1") for s in stamps)
    assert model_label("torchvision", "resnet50") == "torchvision-resnet50"
    assert model_label("gmflow", None) == "gmflow"


@pytest.mark.slow  # two real processes at once (about 20 s of CPU on 2 cores)
def test_two_runs_started_together_keep_both_results(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "zoo.profile", *META]
    runs = [subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    assert [r.wait(timeout=300) for r in runs] == [0, 0], [r.stderr.read() for r in runs]
    folders = sorted((tmp_path / "results" / "runs").iterdir())
    assert len(folders) == 2 and all(f.name.endswith("_swiftnet") for f in folders)
    assert all((f / "stages.csv").is_file() for f in folders)


def test_an_existing_run_is_refused_then_replaced_whole(tmp_path, capsys, monkeypatch):
    run_dir = tmp_path / "run"
    assert run_main(main, [*META, f"hydra.run.dir={run_dir}"], capsys, monkeypatch).code == 0
    (run_dir / "plots").mkdir()
    (run_dir / "plots" / "old.png").write_bytes(b"old")
    before = (run_dir / "meta.json").read_text()
    refused = run_main(main, [*META, f"hydra.run.dir={run_dir}"], capsys, monkeypatch)
    assert refused.code == 2 and "already holds files" in refused.line
    assert (run_dir / "meta.json").read_text() == before
    replaced = run_main(main, [*META, f"hydra.run.dir={run_dir}", "run.overwrite=true"], capsys,
                        monkeypatch)
    assert replaced.code == 0
    assert not (run_dir / "plots").exists()  # nothing of the old run is mixed in
    assert json.loads((run_dir / "meta.json").read_text())["time"]
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no temporary folder left


def test_an_output_path_under_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    (tmp_path / "file").write_text("x")
    outcome = run_main(main, [*META, f"hydra.run.dir={tmp_path / 'file' / 'run'}"], capsys,
                       monkeypatch)
    assert outcome.code == 2 and "is a file, not a folder" in outcome.line


def test_a_folder_is_complete_or_absent_and_stale_temporaries_go(tmp_path, monkeypatch):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f".run.partial-{dead}-abc"
    stale.mkdir()
    (stale / "stages.csv").write_text("half")

    write_text = Path.write_text

    def disk_full_at_the_log(path, data, *args, **kwargs):
        if path.name == "payload.log":
            raise OSError(28, "No space left on device", str(path))
        return write_text(path, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", disk_full_at_the_log)
    with pytest.raises(OSError):
        write_folder(tmp_path / "run", {"stages.csv": "a,b\n", "payload.log": "log"})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the stale one is gone too
    paths = write_folder(tmp_path / "run", {"stages.csv": "a\n", "plots/x.png": b"png"})
    assert [p.relative_to(tmp_path).as_posix() for p in paths] == ["run/stages.csv",
                                                                    "run/plots/x.png"]
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "run").stat().st_mode & 0o777 == 0o777 & ~umask  # not mkdtemp's 0700
    assert remove_stale_temporaries(tmp_path) == []
    with pytest.raises(ProfilingError, match="already holds files"):
        write_folder(tmp_path / "run", {"stages.csv": "b\n"})


def test_a_sweep_folder_is_never_reused_without_overwrite(tmp_path, capsys, monkeypatch):
    sweep = tmp_path / "sweep"
    args = ["-m", *META, "input.batch=1,2", f"hydra.sweep.dir={sweep}"]
    assert run_main(main, args, capsys, monkeypatch).code == 0
    summary = (sweep / "summary.csv").read_text()
    refused = run_main(main, args, capsys, monkeypatch)
    assert refused.code == 2 and "already holds files" in refused.line
    (sweep / "9_stale").mkdir()
    (sweep / "9_stale" / "error.json").write_text('{"status": "failed"}')
    again = run_main(main, [*args, "run.overwrite=true"], capsys, monkeypatch)
    assert again.code == 0 and not (sweep / "9_stale").exists()
    assert (sweep / "summary.csv").read_text().count("\n") == summary.count("\n")


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
