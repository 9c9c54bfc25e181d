"""A progress bar over a run's forwards, quiet when stderr is not a terminal."""

from __future__ import annotations

import sys
from typing import Any, Optional

from .cli import raise_if_interrupted

__all__ = ["ForwardProgress"]


class ForwardProgress:
    """``progress(phase, done, total)`` callback of :func:`profiling.runner.profile_model`,
    shown as a tqdm bar (the analysis pass, then warm-up and repeats on one bar).

    Use it as a context manager; it shows nothing when stderr is not a terminal or tqdm is not
    installed (it comes with the ``sweeps`` extra).

    Args:
        label: what is being run, e.g. the model's name.
        enabled: ``False`` to stay quiet anyway.
    """

    def __init__(self, label: str, enabled: bool = True) -> None:
        self.label = label
        self.enabled = enabled and sys.stderr.isatty()
        self._bar: Optional[Any] = None
        self._phase = ""

    def __enter__(self) -> "ForwardProgress":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __call__(self, phase: str, done: int, total: int) -> None:
        raise_if_interrupted()  # a Ctrl-C that a library swallowed still stops the run here
        if not self.enabled:
            return
        if self._bar is None:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                self.enabled = False
                return
            self._bar = tqdm(total=total, desc=f"{self.label} {phase}", unit="fwd",
                             leave=False, file=sys.stderr)
        timed = phase in ("warmup", "repeats")
        if phase != self._phase and not (timed and self._phase in ("warmup", "repeats")):
            self._bar.reset(total=total)
        self._phase = phase
        self._bar.set_description(f"{self.label} {phase}", refresh=False)
        self._bar.update(done - self._bar.n)
