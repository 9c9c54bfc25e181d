"""Adversarial: run folders never collide, never mix, and are complete or absent; interrupts
and failures follow the contract (issue: reliability and security)."""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run_main
from profiling import stage
from profiling.errors import ProfilingError
from profiling.files import remove_stale_temporaries, write_folder
from zoo.tools import job_description, job_inputs, job_runner
from zoo.models import ZooModel
from zoo.tools.cli import describe_failure
from zoo.tools.profile import main
from zoo.tools.resolvers import model_label, run_stamp

ROOT = Path(__file__).resolve().parents[1]
META = ["model=swiftnet", "device=meta", "input.size=[64,64]", "summary=false"]


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


def test_ctrl_c_exits_130_with_one_line_and_no_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ZOO_LOG_DIR", str(tmp_path / "logs"))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(job_runner, "profile_model", interrupted)
    outcome = run_main(main, [*META, f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 130 and outcome.line.startswith("error: interrupted")
    assert not (tmp_path / "run").exists()


class _Raising(ZooModel):
    """A model whose forward raises ``error`` inside the nested ``stages``."""

    def __init__(self, error: Exception, *stages: str) -> None:
        super().__init__()
        self.error, self.nested = error, stages

    def forward(self, x):
        with contextlib.ExitStack() as opened:
            for name in self.nested:
                opened.enter_context(stage(name, x))
            raise self.error


def _run_raising(model, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ZOO_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setattr(job_inputs, "build_model", lambda *a, **k: model)
    outcome = run_main(main, ["model=swiftnet", "device=cpu", "input.size=[64,64]",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 1 and not (tmp_path / "run").exists()
    log = Path(outcome.line.split("(traceback in ")[1].rstrip(")"))
    assert log.parent == tmp_path / "logs" and "Traceback" in log.read_text()
    assert "Traceback" not in outcome.stderr
    return outcome


def test_out_of_memory_names_the_stage_and_the_size(tmp_path, capsys, monkeypatch):
    oom = RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                       "274877906944 bytes. Error code 12")
    outcome = _run_raising(_Raising(oom, "encoder", "layer3"), tmp_path, capsys, monkeypatch)
    assert outcome.line.startswith("error: out of memory in stage 'encoder/layer3' at input "
                                   "1x3x64x64 (tried to allocate 274877906944 bytes)")


def test_a_forward_that_raises_names_its_stage(tmp_path, capsys, monkeypatch):
    error = ValueError("shapes do not match\nsecond line")
    outcome = _run_raising(_Raising(error, "decoder"), tmp_path, capsys, monkeypatch)
    assert outcome.line.startswith("error: ValueError in stage 'decoder' at input 1x3x64x64: "
                                   "shapes do not match (traceback in ")


def test_io_errors_are_one_line():
    message, code = describe_failure(OSError(30, "Read-only file system", "/ro/run"))
    assert (message, code) == ("cannot write or read /ro/run: Read-only file system", 1)


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


@pytest.mark.slow
def test_meta_analysis_at_40000_squared_stays_under_1_5_gb(tmp_path):
    code = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', "
            "'zoo.profile', 'model=swiftnet', 'device=meta', 'input.size=[40000,40000]', "
            f"'summary=false', 'hydra.run.dir={tmp_path / 'run'}'], check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) * 1024 < 1.5e9


@pytest.mark.parametrize("swallowed_in", ["resolve_device", "check_run_options", "prepare"])
def test_a_ctrl_c_that_a_library_swallows_still_ends_the_run(swallowed_in, tmp_path, capsys,
                                                             monkeypatch):
    """Ctrl-C's handler raises wherever Python is; an extension's import that clears every
    error swallowed it once and the run went on for minutes. The next forward stops it."""
    from zoo.tools import cli

    original = getattr(job_description, swallowed_in)

    def swallowing(*args, **kwargs):
        try:
            cli._on_interrupt(2, None)  # what the signal does
        except KeyboardInterrupt:
            pass  # what the library did
        return original(*args, **kwargs)

    monkeypatch.setattr(cli, "_interrupted", False)
    monkeypatch.setattr(job_description, swallowed_in, swallowing)
    run_dir = tmp_path / "run"
    outcome = run_main(main, ["model=swiftnet", "device=cpu", "input.size=[64,64]",
                              "run.repeats=3", f"hydra.run.dir={run_dir}"], capsys, monkeypatch)
    assert outcome.code == 130, outcome
    assert outcome.stderr.strip().splitlines()[-1].startswith("error: interrupted"), outcome
    assert not run_dir.exists()
