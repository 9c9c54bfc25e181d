"""A registered executor's session, its quantiser, and its runs timed in the runner's loop."""

from __future__ import annotations

from pathlib import Path
from time import perf_counter_ns
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ..runner.repeats import timed_repeats
from ..statistics.intervals import AutoRepeats
from .export import ExportedModel
from .parts import export_failure
from .registry import ExecutorSession, executor
from .workdir import raise_if_disk_full

__all__ = ["make_backend", "quantise", "plain_forward_ms", "time_session", "QuantiseFailure",
           "runtime_failure"]


class QuantiseFailure(RuntimeError):
    """The quantiser, not the runtime, failed: the message says which and why."""


def runtime_failure(runtime: str, error: BaseException) -> str:
    """Why ``runtime`` cannot run a model, in one line: the quantiser's failure as it says,
    else ``<runtime> could not run it: <first line of the error>``; a full disk raises
    :class:`~.workdir.DiskFull`."""
    if isinstance(error, QuantiseFailure):
        raise_if_disk_full(error)
        return str(error)
    return f"{runtime} could not run it: {export_failure(error)}"


def make_backend(runtime: str, path: Path, workdir: Path, device_type: str, profile: bool,
                 quantised_model: Any = None, *, interleaved: bool = False,
                 dtype: str = "float32") -> ExecutorSession:
    """A session of the file at ``path`` (or of the quantiser's ``quantised_model``) in the
    executor registered as ``runtime`` (:meth:`~.registry.Executor.open`), its profiler on
    when ``profile``; ``interleaved``: it takes turns with other sessions on the same cores,
    with the executor's ``interleaved_settings``. ``dtype`` is the run's: the floating
    operators execute in it (``int8``: the operators left in float in float32), never in a
    runtime's default."""
    return executor(runtime).open(path, workdir, device_type, profile=profile, dtype=dtype,
                                  quantised=quantised_model, interleaved=interleaved)


def quantise(runtime: str, exported: ExportedModel, workdir: Path,
             calibration: Sequence[Sequence[np.ndarray]]) -> tuple[Path, Any, set[str]]:
    """int8 for ``runtime`` (:meth:`~.registry.Executor.quantise`): the file to run, the
    model object its session takes instead (else ``None``), and the values the quantiser
    quantises. A :class:`QuantiseFailure` names the quantiser when it fails."""
    chosen = executor(runtime)
    try:
        return chosen.quantise(exported.path, exported.input_names, workdir, calibration)
    except Exception as error:  # noqa: BLE001  (said as the quantiser's failure)
        raise QuantiseFailure(f"{chosen.quantiser} could not quantise it: "
                              f"{export_failure(error)}") from error


def time_session(session: ExecutorSession, feeds: Sequence[np.ndarray], warmup: int,
                 repeats: Union[int, AutoRepeats],
                 progress: Optional[Callable[[str, int, int], None]] = None,
                 clock: Callable[[], int] = perf_counter_ns
                 ) -> tuple[list[float], list[np.ndarray], dict[str, Any]]:
    """Time ``session.run(feeds)`` in the runner's one loop
    (:func:`~profiling.runner.repeats.timed_repeats`), warmed up for ``warmup`` runs and more
    until the runs stop getting faster (its ``settle``): the timed runs' wall times in ms, the
    last run's outputs, and the noise verdict (``warmup``: the untimed runs made). The session's counters are read after each
    run (``record``), outside its clock (``clock``: integer nanoseconds; tests pass a fake)."""
    outputs: list[np.ndarray] = []

    def step(_: int) -> int:
        start = clock()
        outputs[:] = session.run(feeds)
        stop = clock()
        session.record()
        return stop - start

    # a runtime's first forwards after compiling are slower: warm up until they stop falling
    forward_ms, noise = timed_repeats(step, warmup, repeats, clock, progress, settle=True)
    return forward_ms, list(outputs), noise


def plain_forward_ms(runtime: str, path: Path, workdir: Path, device_type: str,
                     feeds: Sequence[np.ndarray], warmup: int, repeats: int,
                     quantised_model: Any = None, dtype: str = "float32") -> list[float]:
    """Forward times (ms) of the model at ``path`` (or the quantiser's ``quantised_model``)
    in ``runtime`` and ``dtype``, its profiler off."""
    backend = make_backend(runtime, path, workdir, device_type, False, quantised_model,
                           dtype=dtype)
    return time_session(backend, feeds, warmup, repeats)[0]
