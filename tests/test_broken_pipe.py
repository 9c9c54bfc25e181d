"""`stagezoo profile ... | head`: a reader that stops reading shortens the output, not the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zoo.tools.broken_pipe import output_outlives_its_reader

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("lines", [1, 100, 20000])  # within, at and past the pipe's buffer
def test_printing_into_a_closed_pipe_neither_fails_nor_stops(lines, monkeypatch):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone
    stream = os.fdopen(write_end, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", stream)
    went_on = []
    with output_outlives_its_reader():
        for i in range(lines):
            print(f"line {i}", flush=True)
        went_on.append(True)
    assert went_on == [True] and sys.stdout is stream
    stream.close()  # nothing left that could raise at exit


def test_without_a_closed_pipe_the_output_is_unchanged(capsys):
    with output_outlives_its_reader():
        print("kept")
    assert capsys.readouterr().out == "kept\n"


@pytest.mark.slow  # one real process (about 10 s)
def test_a_run_piped_into_head_finishes_and_writes_its_folder(tmp_path):
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "zoo.profile", "model=swiftnet", "device=meta",
         "input.size=[64,64]", f"hydra.run.dir={run_dir}"], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "ZOO_LOG_DIR": str(tmp_path / "logs")})
    assert process.stdout.readline().startswith("options:")
    process.stdout.close()  # `| head -1`
    stderr = process.stderr.read()
    assert process.wait(timeout=300) == 0, stderr
    assert stderr == ""
    assert (run_dir / "meta.json").is_file() and (run_dir / "stages.csv").is_file()
