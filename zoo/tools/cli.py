"""The error contract shared by every entry point (the configs' checks are
:mod:`zoo.tools.composition`).

The contract, for ``zoo.profile``, ``zoo.compare``, ``zoo.split``, ``zoo.collect``, ``zoo.plot``
and ``zoo.calibrate`` alike: a problem ends with one line on stderr (``error: ...``) and no
traceback; bad input exits 2, a failure at run time 1 (its traceback goes to a log file that
the line names), an interrupt 130. No output folder is left empty or partial.

This module imports neither torch nor Hydra at import time, so ``--help`` and bad options are
answered at once.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional

from profiling import ProfilingError, failure_context, failure_place
from profiling.reports import printable

from ..errors import ConfigError
from .broken_pipe import output_outlives_its_reader
from .installation import installation_problem

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "EXIT_INTERRUPTED", "ArgumentParser", "run_tool",
           "exit_with", "fail", "describe_failure", "log_directory", "user_log_directory",
           "raise_if_interrupted"]

EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERRUPTED = 2, 1, 130



_OOM = re.compile(r"out of memory|can't allocate memory|not enough memory", re.IGNORECASE)
_TRIED = re.compile(r"(?:tried to allocate|Tried to allocate)\s+([\d.,]+\s*\w+)")


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``error: message`` on one line of stderr and exit with ``code``; control
    characters in it (a folder or stage name echoed from a run) are written as escapes."""
    print(f"error: {printable(' '.join(str(message).split()))}", file=sys.stderr)
    sys.exit(code)


class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` whose usage errors are one ``ConfigError`` line (exit 2), not a usage
    block. Its usage and hints name the tool as it was called: ``stagezoo compare`` when the
    ``stagezoo`` command ran it, else ``prog`` (``python -m zoo.compare``)."""

    def __init__(self, *args: Any, prog: Optional[str] = None, **kwargs: Any) -> None:
        called = sys.argv[0] if sys.argv and sys.argv[0].startswith("stagezoo ") else None
        super().__init__(*args, prog=called or prog, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} (see {self.prog} --help)")


def user_log_directory() -> Path:
    """The per-user folder of failure logs: ``$XDG_STATE_HOME/stagezoo/logs``, by default
    ``~/.local/state/stagezoo/logs`` (never the current folder)."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "stagezoo" / "logs"


def log_directory() -> Path:
    """Where failure logs go: ``$ZOO_LOG_DIR``, else :func:`user_log_directory`, else the
    system's temporary folder (a read-only or full disk still gets a log)."""
    for candidate in (os.environ.get("ZOO_LOG_DIR"), user_log_directory(),
                      tempfile.gettempdir()):
        if not candidate:
            continue
        try:
            Path(candidate).mkdir(parents=True, exist_ok=True)
            probe = Path(candidate) / f".probe-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
            return Path(candidate)
        except OSError:
            continue
    return Path(tempfile.gettempdir())


def _write_log(tool: str, error: BaseException) -> Optional[Path]:
    stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
    try:
        path = log_directory() / f"{tool}-{stamp}-{os.getpid()}.log"
        path.write_text(f"{' '.join(sys.argv)}\n\n" + "".join(
            traceback.format_exception(type(error), error, error.__traceback__)))
        return path.resolve()
    except OSError:
        return None


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` says that memory ran out (Python's, torch's CPU or CUDA allocator)."""
    if isinstance(error, MemoryError):
        return True
    oom_type = getattr(sys.modules.get("torch"), "OutOfMemoryError", None)
    return (oom_type is not None and isinstance(error, oom_type)) or (
        isinstance(error, RuntimeError) and bool(_OOM.search(str(error))))


def allocation_tried(error: BaseException) -> str:
    """What an out-of-memory ``error`` tried to allocate (``"8192000000000 bytes"``), or
    ``""`` when it does not say."""
    tried = _TRIED.search(str(error))
    return tried.group(1) if tried else ""


def describe_failure(error: BaseException) -> tuple[str, int]:
    """The one line and the exit status for ``error`` (see the module's contract)."""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted", EXIT_INTERRUPTED
    if isinstance(error, ProfilingError):
        return str(error), EXIT_BAD_INPUT
    broken = installation_problem(error)
    if broken:
        return broken, EXIT_BAD_INPUT
    where = failure_place(error)
    context = f" at {failure_context(error)}" if failure_context(error) else ""
    if is_out_of_memory(error):
        size = f" (tried to allocate {allocation_tried(error)})" if allocation_tried(error) else ""
        return (f"out of memory{where}{context}{size}; try a smaller input.size or "
                f"input.batch, or device=meta for shapes and counts"), EXIT_FAILURE
    if isinstance(error, OSError) and error.filename is not None:
        return f"cannot write or read {error.filename}: {error.strerror}", EXIT_FAILURE
    text = str(error).strip().splitlines()
    return (f"{type(error).__name__}{where}{context}: {text[0] if text else '(no message)'}",
            EXIT_FAILURE)


_interrupted = False


def _on_interrupt(signum: int, frame: Any) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """Raise :class:`KeyboardInterrupt` if Ctrl-C came and the run still goes on.

    The handler raises where Python happens to be when the signal is handled; a library that
    clears every error there (an extension module's import that treats any failure as "optional
    module absent") swallows it, and the run would go on for minutes. The tools call this at
    points where stopping is safe (after each forward), so such an interrupt still ends the run.
    """
    if _interrupted:
        raise KeyboardInterrupt


def run_tool(tool: str, job: Callable[[], Any]) -> Any:
    """Run ``job`` under the error contract: return its result, or end the process with one
    line on stderr and the exit status of :func:`describe_failure`.

    Ctrl-C is remembered when it arrives, so an interrupt that a library turns into another
    error on its way out (an import cut short) still ends as an interrupt, with status 130.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_interrupt)
    try:
        with output_outlives_its_reader():  # `| head` shortens the output, not the run
            return job()
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001  (every failure gets the contract)
        exit_with(tool, error)


def exit_with(tool: str, error: BaseException) -> NoReturn:
    """End the process for ``error`` under the contract: one line (naming the traceback's log
    file for failures and interrupts) and the exit status of :func:`describe_failure`."""
    message, code = ("interrupted", EXIT_INTERRUPTED) if _interrupted else \
        describe_failure(error)
    if code != EXIT_BAD_INPUT:
        log = _write_log(tool, error)
        if log is not None:
            message += f" (traceback in {log})"
    fail(message, code)
