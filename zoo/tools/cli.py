"""The error contract shared by every entry point (the configs' checks are
:mod:`zoo.tools.composition`).

The contract, for ``zoo.profile``, ``zoo.compare``, ``zoo.split``, ``zoo.collect``, ``zoo.plot``
and ``zoo.calibrate`` alike: a problem ends with one line on stderr (``error: ...``) and no
traceback; bad input exits 2, a failure at run time 1 (its traceback goes to a log file that
the line names), an interrupt 130 (SIGTERM 143 and SIGHUP 129: 128 + the signal's number,
:data:`STOP_SIGNALS`). No output folder is left empty or partial.

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
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, Optional

from profiling import ProfilingError, failure_context, failure_place
from profiling.reports import printable

from ..options import ConfigError
from .broken_pipe import output_outlives_its_reader
from .installation import installation_problem

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "EXIT_INTERRUPTED", "ArgumentParser", "run_tool",
           "exit_with", "fail", "describe_failure", "log_directory", "user_log_directory",
           "raise_if_interrupted", "STOP_SIGNALS", "called_as"]

EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERRUPTED = 2, 1, 130



_OOM = re.compile(r"out of memory|can't allocate memory|not enough memory", re.IGNORECASE)
_TRIED = re.compile(r"(?:tried to allocate|Tried to allocate)\s+([\d.,]+\s*\w+)")


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Print ``error: message`` on one line of stderr and exit with ``code``; control
    characters in it (a folder or stage name echoed from a run) are written as escapes."""
    try:
        print(f"error: {printable(' '.join(str(message).split()))}", file=sys.stderr)
    except OSError:  # stderr is gone (SIGHUP: the terminal closed); the status still tells
        pass
    sys.exit(code)


def called_as(program: Optional[str]) -> Optional[str]:
    """The tool's name as the user called it: ``stagezoo compare`` when the ``stagezoo``
    command ran it, else ``program`` (``python -m zoo.compare``)."""
    return sys.argv[0] if sys.argv and sys.argv[0].startswith("stagezoo ") else program


class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` whose usage errors are one ``ConfigError`` line (exit 2), not a usage
    block. Its usage and hints name the tool as it was called: ``stagezoo compare`` when the
    ``stagezoo`` command ran it, else ``prog`` (``python -m zoo.compare``)."""

    def __init__(self, *args: Any, prog: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(*args, prog=called_as(prog), **kwargs)

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} (see {self.prog} --help)")


def user_log_directory() -> Path:
    """The per-user folder of failure logs: ``$XDG_STATE_HOME/stagezoo/logs``, by default
    ``~/.local/state/stagezoo/logs`` (a relative or empty variable is ignored, as the XDG rule
    says: never the current folder)."""
    from profiling.files import user_folder

    return user_folder("XDG_STATE_HOME") / "stagezoo" / "logs"


def log_directory() -> Path:
    """Where failure logs go: ``$ZOO_LOG_DIR`` (when an absolute path), else
    :func:`user_log_directory`, else the system's temporary folder (a read-only or full disk
    still gets a log)."""
    from profiling.files import absolute_variable

    for candidate in (absolute_variable("ZOO_LOG_DIR"), user_log_directory(),
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
        return _stopped_line(_interrupted)
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


#: The signals that end a run as Ctrl-C does, and the words of their line. Each exits with
#: 128 + its number, the shell's convention: SIGINT 130, SIGHUP 129, SIGTERM 143.
STOP_SIGNALS = {"SIGINT": "interrupted", "SIGTERM": "terminated (SIGTERM)",
                "SIGHUP": "hung up (SIGHUP)"}

#: The number of the stop signal that came (0: none).
_interrupted = 0


def _on_interrupt(signum: int, frame: Any) -> None:
    global _interrupted
    _interrupted = signum
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """Raise :class:`KeyboardInterrupt` if a stop signal came and the run still goes on.

    The handler raises where Python happens to be when the signal is handled; a library that
    clears every error there (an extension module's import that treats any failure as "optional
    module absent") swallows it, and the run would go on for minutes. The tools call this at
    points where stopping is safe (after each forward), so such an interrupt still ends the run.
    """
    if _interrupted:
        raise KeyboardInterrupt


def _stopped_line(signum: int) -> tuple[str, int]:
    """The line and exit status of a run ended by the signal ``signum`` (SIGINT: Ctrl-C)."""
    name = signal.Signals(signum).name if signum else "SIGINT"
    return STOP_SIGNALS.get(name, f"stopped ({name})"), 128 + (signum or signal.SIGINT)


@contextmanager
def _stop_signals_end_the_run() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise :class:`KeyboardInterrupt` while the block runs, so
    that every ``finally`` removes its temporaries; the caller's handlers come back after. A
    signal the process was started ignoring stays ignored (``nohup`` ignores SIGHUP, a shell
    ignores SIGINT for a job in the background)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for name in STOP_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            previous[number] = signal.signal(number, _on_interrupt)
    unraisable_hook = sys.unraisablehook

    def quiet_interrupt(unraisable: Any) -> None:
        """A signal handled inside a callback that cannot raise (an import lock's weakref
        callback) would print 'Exception ignored in ...' and a traceback; the run stops at the
        next :func:`raise_if_interrupted` instead, with its one line."""
        if not (_interrupted and isinstance(unraisable.exc_value, KeyboardInterrupt)):
            unraisable_hook(unraisable)

    sys.unraisablehook = quiet_interrupt
    try:
        yield
    finally:
        sys.unraisablehook = unraisable_hook
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_tool(tool: str, job: Callable[[], Any]) -> Any:
    """Run ``job`` under the error contract: return its result, or end the process with one
    line on stderr and the exit status of :func:`describe_failure`.

    A stop signal (Ctrl-C, SIGTERM, SIGHUP) is remembered when it arrives, so an interrupt
    that a library turns into another error on its way out (an import cut short) still ends
    as one, with status 128 + the signal's number. Relative or empty ``$HOME`` and XDG
    variables are settled first (:func:`profiling.files.settle_user_folders`).
    """
    from profiling.files import settle_user_folders

    global _interrupted
    _interrupted = 0  # a signal that ended an earlier tool of this process is not this one's
    settle_user_folders(extra=("ZOO_LOG_DIR",))
    try:
        with _stop_signals_end_the_run(), output_outlives_its_reader():
            return job()  # `| head` shortens the output, not the run
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001  (every failure gets the contract)
        exit_with(tool, error)


def exit_with(tool: str, error: BaseException) -> NoReturn:
    """End the process for ``error`` under the contract: one line (naming the traceback's log
    file for failures and interrupts) and the exit status of :func:`describe_failure`."""
    message, code = _stopped_line(_interrupted) if _interrupted else describe_failure(error)
    if code != EXIT_BAD_INPUT:
        log = _write_log(tool, error)
        if log is not None:
            message += f" (traceback in {log})"
    fail(message, code)
