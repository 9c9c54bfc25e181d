"""SIGINT, SIGTERM and SIGHUP end a run alike: one line, exit 128 + the signal's number, no run
folder and no temporary left (docs/trust.md, "Exit codes that tell the truth")."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_runner import run_main
from zoo.tools import job_runner
from zoo.tools.profile import main

ROOT = Path(__file__).resolve().parents[1]

#: Each stop signal, its line and its exit status (128 + its number, by hand).
STOPS = [(signal.SIGINT, "error: interrupted", 130),
         (signal.SIGTERM, "error: terminated (SIGTERM)", 143),
         (signal.SIGHUP, "error: hung up (SIGHUP)", 129)]


@pytest.fixture(autouse=True)
def _stop_signals_not_ignored():
    """The stop signals as a shell in a terminal leaves them: a suite started in the
    background (``&`` ignores SIGINT) or under ``nohup`` (SIGHUP) would otherwise see the tools
    keep an ignored signal ignored, as they must (the test below), and no stop at all."""
    ignored = [n for n, _, _ in STOPS if signal.getsignal(n) is signal.SIG_IGN]
    for number in ignored:
        signal.signal(number, signal.default_int_handler if number == signal.SIGINT
                      else signal.SIG_DFL)
    yield
    for number in ignored:
        signal.signal(number, signal.SIG_IGN)


@pytest.mark.parametrize("number, line, code", STOPS)
def test_a_stop_signal_in_the_run_is_one_line_its_exit_status_and_no_folder(
        number, line, code, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ZOO_LOG_DIR", str(tmp_path / "logs"))
    before = {n: signal.getsignal(n) for n, _, _ in STOPS}

    def signalled(*args, **kwargs):
        signal.raise_signal(number)  # the real signal, delivered to this process
        raise AssertionError("the signal did not stop the run")

    monkeypatch.setattr(job_runner, "profile_model", signalled)
    run_dir = tmp_path / "out" / "run"
    outcome = run_main(main, ["model=swiftnet", "device=meta", "input.size=[64,64]",
                              "summary=false", f"hydra.run.dir={run_dir}"], capsys, monkeypatch)
    assert outcome.code == code
    assert outcome.line.startswith(f"{line} (traceback in {tmp_path / 'logs'}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]  # no out/, no temporaries
    assert {n: signal.getsignal(n) for n, _, _ in STOPS} == before  # the caller's handlers


@pytest.mark.slow
@pytest.mark.parametrize("number, line, code", STOPS)
def test_a_real_stop_signal_ends_a_cpu_run_with_one_line_and_no_folder(number, line, code,
                                                                        tmp_path):
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "zoo.profile", "model=swiftnet", "device=cpu",
         "input.size=[512,1024]", "run.repeats=50", f"hydra.run.dir={run_dir}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "ZOO_LOG_DIR": str(tmp_path / "logs")})
    assert "run.repeats=50" in process.stdout.readline()  # the checks have passed
    time.sleep(5)  # into the model's build and the timed forwards (50 take minutes)
    process.send_signal(number)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr
    assert stderr.strip().splitlines() == [stderr.strip().splitlines()[-1]]
    assert stderr.strip().startswith(f"{line} (traceback in ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs"]


@pytest.mark.slow
@pytest.mark.runtimes
def test_sigterm_while_a_runtime_exports_leaves_no_temporary(tmp_path):
    """The export's work folder (in $TMPDIR) and the cache's incoming entry go with the run."""
    temporary, cache = tmp_path / "tmp", tmp_path / "cache"
    temporary.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "zoo.profile", "model=torchvision", "model.arch=resnet50",
         "input.size=[224,224]", "run.runtime=onnxruntime", "run.repeats=20", "summary=false",
         f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "ZOO_LOG_DIR": str(tmp_path / "logs"),
             "TMPDIR": str(temporary), "XDG_CACHE_HOME": str(cache)})
    deadline = time.monotonic() + 120
    while not list(temporary.glob("stagezoo-export-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(temporary.glob("stagezoo-export-*")), "the export never started"
    time.sleep(1)  # into the export
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 143, stderr
    assert stderr.strip().startswith("error: terminated (SIGTERM) (traceback in ")
    assert [p.name for p in temporary.iterdir()] in ([], [".ses"])  # ONNX Runtime's session id
    assert not list((cache / "stagezoo").rglob(".*"))  # no incoming entry of the export cache
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("number, line, code", STOPS)
def test_a_signal_the_process_ignores_stays_ignored(number, line, code):
    """``nohup stagezoo profile ...`` ignores SIGHUP: the run must go on when the terminal
    closes, as a background job goes on after Ctrl-C in its shell."""
    from zoo.tools.cli import run_tool

    previous = signal.signal(number, signal.SIG_IGN)
    try:
        def job():
            signal.raise_signal(number)  # ignored: the job goes on
            return signal.getsignal(number)

        assert run_tool("zoo.test", job) is signal.SIG_IGN
        assert signal.getsignal(number) is signal.SIG_IGN
    finally:
        signal.signal(number, previous)


@pytest.mark.parametrize("number, line, code", STOPS)
def test_a_signal_inside_a_callback_that_cannot_raise_still_ends_with_one_line(
        number, line, code, tmp_path, capsys, monkeypatch):
    """A signal handled in an import lock's weakref callback printed 'Exception ignored in'
    and a traceback (seen on a real Ctrl-C during the model's build)."""
    from zoo.tools.cli import raise_if_interrupted, run_tool

    monkeypatch.setenv("ZOO_LOG_DIR", str(tmp_path / "logs"))

    class SignalledWhenCollected:
        def __del__(self):
            signal.raise_signal(number)  # the handler's KeyboardInterrupt cannot leave here

    def job():
        SignalledWhenCollected()
        raise_if_interrupted()  # where the tools stop: after the import, after each forward
        raise AssertionError("the run went on")

    with pytest.raises(SystemExit) as done:
        run_tool("zoo.test", job)
    assert done.value.code == code
    (shown,) = capsys.readouterr().err.strip().splitlines()
    assert shown.startswith(f"{line} (traceback in {tmp_path / 'logs'}")
