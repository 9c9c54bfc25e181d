"""The exception type for bad input to the profiler, and where a failure happened."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Optional, Sequence

__all__ = ["ProfilingError", "MissingExtra", "require_extra", "mark_stage", "failed_stage",
           "failed_after", "failure_place", "add_context", "failure_context"]

_STAGE_ATTRIBUTE, _CONTEXT_ATTRIBUTE = "profiling_stage", "profiling_context"
_AFTER_ATTRIBUTE = "profiling_after_stage"


class ProfilingError(ValueError):
    """Bad input: the message is one line saying what is wrong and what is accepted."""


class MissingExtra(ProfilingError):
    """An optional dependency is not installed: the message names the extra that brings it
    (the command-line tools exit 2 with this one line)."""


def require_extra(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtra` naming ``extra`` (of
    ``pip install 'stagezoo[EXTRA]'``) and what needed it (``purpose``, e.g. ``"plots=true"``).

    The one way every optional dependency (plots, sweeps, zstd, runtimes, report) is asked for.
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        if _installed(module):  # there, but it does not import (a missing native library)
            why = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise MissingExtra(f"{purpose} needs {module}, which is installed but does not "
                               f"import ({why}); reinstall it with "
                               f"pip install --force-reinstall 'stagezoo[{extra}]'") from None
        raise MissingExtra(f"{purpose} needs {module}, which is not installed; install it with "
                           f"pip install 'stagezoo[{extra}]'") from None


def _installed(module: str) -> bool:
    """Whether ``module`` can be found (whether or not it imports)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def mark_stage(error: BaseException, open_stages: Sequence[str],
               after: Optional[str] = None) -> None:
    """Remember on ``error`` the stages that were open when it went through a forward
    (outermost first); the first mark, the innermost forward's, is kept. With no stage open,
    ``after`` is the last stage call that had finished (``""`` before the first one): the
    error came from the forward's own code between stages (:func:`failed_after`)."""
    if failed_stage(error) is not None or failed_after(error) is not None:
        return
    try:
        if open_stages:
            setattr(error, _STAGE_ATTRIBUTE, "/".join(open_stages))
        elif after is not None:
            setattr(error, _AFTER_ATTRIBUTE, after)
    except AttributeError:  # an exception type without a __dict__
        pass


def failed_after(error: BaseException) -> Optional[str]:
    """For ``error`` raised in a profiled forward outside every stage: the last stage call
    that had finished (``name`` or ``name[call]``), ``""`` when no stage had run yet;
    ``None`` otherwise."""
    return getattr(error, _AFTER_ATTRIBUTE, None)


def failure_place(error: BaseException) -> str:
    """Where in the forward ``error`` happened, as words to follow the error's type:
    `` in stage 'backbone/layer1'``, `` outside the stages, after stage 'encoder'``,
    `` before the first stage``, or ``""`` when it was not raised in a profiled forward."""
    if failed_stage(error):
        return f" in stage '{failed_stage(error)}'"
    after = failed_after(error)
    if after is None:
        return ""
    return f" outside the stages, after stage '{after}'" if after else " before the first stage"


def failed_stage(error: BaseException) -> Optional[str]:
    """The stages open when ``error`` was raised in a profiled forward, as
    ``outer/inner``, or ``None`` when it was raised outside any stage."""
    return getattr(error, _STAGE_ATTRIBUTE, None)


def add_context(error: BaseException, context: str) -> None:
    """Remember on ``error`` what was being run (e.g. ``input 1x3x8192x8192``)."""
    if failure_context(error) is None:
        try:
            setattr(error, _CONTEXT_ATTRIBUTE, context)
        except AttributeError:  # an exception type without a __dict__
            pass


def failure_context(error: BaseException) -> Optional[str]:
    """What :func:`add_context` remembered on ``error``, or ``None``."""
    return getattr(error, _CONTEXT_ATTRIBUTE, None)
