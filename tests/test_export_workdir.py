"""The folders a runtime run exports in (profiling.runtimes.workdir): a full temporary disk is
a failure naming the disk, never a model that 'runs no part'; the folders of killed runs are
reclaimed by the next run."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from export_cache_models import Branching, Scaled, leftovers, run_cached, tiny_model
from profiling.runtimes.workdir import DiskFull
from runtime_models import needs_onnxruntime

ROOT = Path(__file__).resolve().parents[1]


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device", "/tmp/stagezoo-export-1-x/m.onnx")


@needs_onnxruntime
@pytest.mark.parametrize("where", ["the whole export", "a part's export", "the quantiser",
                                   "a wrapped message", "the copy of a cached entry"])
def test_a_full_temporary_disk_is_a_failure_naming_the_disk(where, tmp_path, monkeypatch):
    from profiling.runtimes import cache, export, profile

    kind, dtype, cached = Scaled, "float32", None
    if where == "the whole export":
        monkeypatch.setattr(profile, "export_onnx", _disk_full)
    elif where == "a part's export":
        kind = Branching
        monkeypatch.setattr(export.ExportedModel, "save_map", _disk_full)
    elif where == "the quantiser":
        dtype = "int8"
        monkeypatch.setattr("profiling.runtimes.onnxruntime_backend.quantize_onnxruntime",
                            _disk_full)
    elif where == "a wrapped message":
        def wrapped(*args, **kwargs):
            raise RuntimeError("failed to save: [Errno 28] No space left on device")
        monkeypatch.setattr(profile, "export_onnx", wrapped)
    else:
        cached = tmp_path / "cache"
        run_cached(*tiny_model(), cached, tmp_path / "first")
        monkeypatch.setattr(cache, "open", _disk_full, raising=False)
    model, x = tiny_model(kind)
    with pytest.raises(DiskFull) as caught:
        run_cached(model, x, cached, tmp_path / "work", dtype=dtype)
    assert caught.value.errno == errno.ENOSPC
    assert "no space left on the disk mounted at /" in caught.value.strerror
    assert "(ENOSPC)" in caught.value.strerror and "TMPDIR" in caught.value.strerror


@needs_onnxruntime
def test_a_full_temporary_disk_exits_1_with_one_line_and_leaves_nothing(tmp_path, capsys,
                                                                        monkeypatch):
    import tempfile

    from cli_runner import run_main
    from zoo.tools.profile import main

    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr("profiling.runtimes.profile.export_onnx", _disk_full)
    outcome = run_main(main, ["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
                              "run.runtime=onnxruntime", "run.repeats=1", "summary=false",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 1, outcome
    assert "no space left on the disk mounted at /" in outcome.line
    assert "ENOSPC" in outcome.line and "runs no part" not in outcome.line
    assert not (tmp_path / "run").exists()
    assert leftovers(tmp_path / "tmp") == []  # onnxruntime keeps a .ses file there
    assert list((tmp_path / "xdg" / "stagezoo" / "exports").iterdir()) == []


# ---------------------------------------------------------------- what killed runs leave


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_folders_of_killed_runs_are_reclaimed_and_others_kept(tmp_path):
    from profiling.runtimes.cache import usable_cache
    from profiling.runtimes.workdir import make_workdir

    dead, mine = _dead_pid(), os.getpid()
    alive = subprocess.Popen(["sleep", "60"])
    try:
        hour_ago = time.time() - 3600 - 60
        names = {f"stagezoo-export-{dead}-a": None, f"stagezoo-export-{mine}-b": None,
                 f"stagezoo-export-{alive.pid}-reused": hour_ago,
                 f"stagezoo-export-{alive.pid}-fresh": None, "stagezoo-export-x-c": None}
        cache = tmp_path / "cache"
        names.update({f"cache/.incoming-{dead}-d": None, f"cache/.incoming-{mine}-old": hour_ago,
                      f"cache/.incoming-{mine}-new": None})
        for name, changed in names.items():
            (tmp_path / name).mkdir(parents=True)
            (tmp_path / name / "model.onnx").write_text("partial")
            if changed is not None:
                os.utime(tmp_path / name, (changed, changed))
        (tmp_path / f"stagezoo-export-{dead}-file").write_text("not a folder")
        made = make_workdir(tmp_path)
        assert usable_cache(cache, 0) == (cache, None)
    finally:
        alive.kill()
        alive.wait()
    assert made.name.startswith(f"stagezoo-export-{mine}-")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        "cache", made.name, f"stagezoo-export-{mine}-b", f"stagezoo-export-{alive.pid}-fresh",
        "stagezoo-export-x-c", f"stagezoo-export-{dead}-file"])
    assert [p.name for p in cache.iterdir()] == [f".incoming-{mine}-new"]


def test_a_killed_run_leaves_folders_that_the_next_run_reclaims(tmp_path):
    script = ("import os, signal, sys\n"
              "from pathlib import Path\n"
              "from profiling.runtimes.workdir import make_staging, make_workdir\n"
              "work = make_workdir(Path(sys.argv[1]))\n"
              "(work / 'model.onnx').write_bytes(b'half')\n"
              "(Path(sys.argv[1]) / 'cache').mkdir()\n"
              "make_staging(Path(sys.argv[1]) / 'cache')\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    killed = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert killed.returncode == -signal.SIGKILL
    assert len(leftovers(tmp_path, tmp_path / "cache")) == 2
    from profiling.runtimes.cache import usable_cache
    from profiling.runtimes.workdir import make_workdir

    made = make_workdir(tmp_path)
    usable_cache(tmp_path / "cache", 0)
    assert leftovers(tmp_path, tmp_path / "cache") == [made.name]
