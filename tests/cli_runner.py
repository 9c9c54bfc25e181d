"""Run a command-line entry point in this process, as a user's shell would, and see what it
printed and how it exited (much faster than a subprocess per case)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable, Sequence

import pytest


@dataclass
class Outcome:
    """What one command did: its exit status and what it printed."""

    code: int
    stdout: str
    stderr: str

    @property
    def line(self) -> str:
        """The error line (the test asserts there is exactly one)."""
        lines = self.stderr.strip().splitlines()
        assert len(lines) == 1, self.stderr
        assert lines[0].startswith("error: "), self.stderr
        return lines[0]


def run_main(main: Callable[..., object], argv: Sequence[str], capsys: pytest.CaptureFixture,
             monkeypatch: pytest.MonkeyPatch, program: str = "zoo") -> Outcome:
    """Call ``main`` with ``argv`` as the command line; return its exit status and output."""
    monkeypatch.setattr(sys, "argv", [program, *argv])
    code = 0
    try:
        main()
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    printed = capsys.readouterr()
    return Outcome(code, printed.out, printed.err)
