"""A profiling session: the state behind the stage markers while profiling is on."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional, Protocol, Sequence

from ..errors import mark_stage
from . import markers as _stages
from .markers import StageCall
from .payload import walk_payload

__all__ = ["Session", "Measuring"]


class Measuring(Protocol):
    """What a session asks of each of its collectors, in this order: ``start_forward`` at
    the start of a forward, ``enter`` and ``exit`` at every stage boundary, ``end_forward``
    at its end, ``close`` when the session closes. :class:`profiling.collectors.Collector`
    is one; the stages sit below the collectors, which measure them."""

    def start_forward(self) -> None: ...

    def enter(self, call: StageCall) -> None: ...

    def exit(self, call: StageCall) -> None: ...

    def end_forward(self) -> None: ...

    def close(self) -> None: ...


class Session:
    """Records the stage calls of forward passes and lets collectors measure each one.

    Use it as a context manager around one or more :meth:`forward` blocks::

        with Session([CpuTime()]) as session:
            with session.forward():
                model(x)
        calls = session.forwards[-1]

    Only one session is open at a time. Closing the session (also on an exception) releases
    every collector and makes the stage markers inactive again.

    Args:
        collectors: the collectors to run, outermost first.
        record_payload: walk and keep the payload of every stage's inputs and outputs.
    """

    def __init__(self, collectors: Sequence[Measuring] = (), *, record_payload: bool = False
                 ) -> None:
        self.collectors = list(collectors)
        # bound methods, looked up once: they run at every stage boundary
        self._enters = [collector.enter for collector in self.collectors]
        self._exits = [collector.exit for collector in reversed(self.collectors)]
        self.record_payload = record_payload
        self.forwards: list[list[StageCall]] = []
        self.events: list[tuple[str, StageCall]] = []
        self.calls: list[StageCall] = []
        self._stack: list[StageCall] = []
        self._counts: dict[str, int] = {}

    def __enter__(self) -> "Session":
        _stages._set_active_session(self)
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        _stages._set_active_session(None)
        for collector in self.collectors:
            collector.close()
        return False

    @contextmanager
    def forward(self) -> Iterator["Session"]:
        """Bracket one forward pass; its calls are appended to :attr:`forwards` at the end."""
        self.calls, self.events, self._stack, self._counts = [], [], [], {}
        started: list[Measuring] = []
        try:
            for collector in self.collectors:
                collector.start_forward()
                started.append(collector)
            yield self
        except BaseException as error:
            self.note_failure(error)
            raise
        finally:
            while self._stack:  # what an exception left open: each collector sees its exit
                self.exit_stage(self._stack[-1])
            for collector in reversed(started):  # dispatch modes leave in reverse order
                collector.end_forward()
            self.forwards.append(self.calls)

    def note_failure(self, error: BaseException) -> None:
        """Remember on ``error`` the stages open now (see :func:`profiling.errors.failed_stage`);
        the innermost place it passed through wins."""
        mark_stage(error, [call.name for call in self._stack], after=self._last_finished())

    def _last_finished(self) -> str:
        """The last stage call that closed in this forward (``name[call]`` after its first
        call), ``""`` before any."""
        call = next((call for kind, call in reversed(self.events) if kind == "out"), None)
        if call is None:
            return ""
        return call.name + (f"[{call.call_index}]" if call.call_index else "")

    @property
    def open_calls(self) -> tuple[StageCall, ...]:
        """The stage calls open now, outermost first."""
        return tuple(self._stack)

    @property
    def call_counts(self) -> dict[str, int]:
        """How many calls of each stage or probe name this forward has made so far."""
        return dict(self._counts)

    def skip_calls(self, counts: Mapping[str, int]) -> None:
        """Count ``counts`` (name -> calls) as made, though no marker ran them (a part of the
        model that an inference runtime ran): the calls after them get the call indices that
        a plain PyTorch forward gives them."""
        for name, count in counts.items():
            self._counts[name] = self._counts.get(name, 0) + count

    @property
    def current(self) -> Optional[StageCall]:
        """The innermost open stage call, or ``None``."""
        return self._stack[-1] if self._stack else None

    def _new_call(self, name: str, kind: str) -> StageCall:
        call_index = self._counts.get(name, 0)
        self._counts[name] = call_index + 1
        stack = self._stack
        call = StageCall(name, kind, len(self.calls), stack[-1].index if stack else None,
                         len(stack), call_index)
        self.calls.append(call)
        return call

    def enter_stage(self, name: str, inputs: Any) -> StageCall:
        """Open a stage call (used by the markers and by attached modules)."""
        call = self._new_call(name, "stage")
        if self.record_payload:  # before the collectors' enter: off the timers' clocks
            call.inputs = walk_payload(inputs)
        self.events.append(("in", call))
        self._stack.append(call)
        for enter in self._enters:
            enter(call)
        return call

    def exit_stage(self, call: StageCall) -> None:
        """Close ``call`` and any stage left open inside it."""
        stack = self._stack
        if stack and stack[-1] is call:  # the usual case, kept short: it runs per stage
            for exit_ in self._exits:
                exit_(call)
            stack.pop()
            self.events.append(("out", call))
            return
        if call not in stack:
            return
        while self._stack:
            top = self._stack[-1]
            for exit_ in self._exits:
                exit_(top)
            self._stack.pop()
            self.events.append(("out", top))
            if top is call:
                return

    def record_output(self, call: Optional[StageCall], value: Any) -> None:
        """Keep ``value`` as the output payload of ``call``."""
        if self.record_payload and call is not None:
            call.outputs = walk_payload(value)

    def record_probe(self, name: str, value: Any) -> None:
        """Record a payload-only point."""
        call = self._new_call(name, "probe")
        if self.record_payload:
            call.outputs = walk_payload(value)
        self.events.append(("probe", call))
