"""Stage markers: named spans and probes of a forward pass.

Model code marks its stages with :func:`stage` and its payload-only points with :func:`probe`::

    with stage("backbonefpn_body", images.tensors) as s:
        features = s.output(self.body(images.tensors))
    probe("sum2_topdown", inner_top_down)

With no profiling session open, :func:`stage` returns one shared no-op object and :func:`probe`
returns its argument, so an instrumented model costs next to nothing as an ordinary model.
While a :class:`~profiling.stages.Session` is open, each call is recorded as a
:class:`StageCall`; stages nest (the parent is whatever stage is open) and a stage entered
several times in one forward keeps one record per call.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["stage", "probe", "StageCall", "active_session", "is_profiling", "is_counting"]

_active_session = None
_counting = False


class StageCall:
    """One call of a stage (or one probe) within one forward pass.

    Attributes:
        name: the stage name, as the model's authors call that part.
        kind: ``"stage"`` or ``"probe"``.
        index: position of this call in the forward, in order of entry.
        parent: ``index`` of the enclosing stage call, or ``None`` at the top.
        depth: nesting depth, 0 at the top.
        call_index: how many calls of the same name came before this one in the forward.
        inputs, outputs: payload trees (see :mod:`profiling.stages.payload`) when payload is recorded.
        metrics: what the collectors measured, by metric name.
    """

    __slots__ = ("name", "kind", "index", "parent", "depth", "call_index", "inputs", "outputs",
                 "metrics")

    def __init__(self, name: str, kind: str, index: int, parent: Optional[int], depth: int,
                 call_index: int) -> None:
        self.name = name
        self.kind = kind
        self.index = index
        self.parent = parent
        self.depth = depth
        self.call_index = call_index
        self.inputs = None
        self.outputs = None
        self.metrics: dict[str, float] = {}

    @property
    def key(self) -> tuple[str, int]:
        """``(name, call_index)``: identifies the same call across repeated forwards."""
        return (self.name, self.call_index)

    def __repr__(self) -> str:
        return (f"StageCall({self.name!r}, kind={self.kind!r}, call_index={self.call_index}, "
                f"depth={self.depth})")


class _InactiveStage:
    """The marker returned when no session is open: does nothing, as cheaply as possible."""

    __slots__ = ()

    def __enter__(self) -> "_InactiveStage":
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        return False

    def output(self, value: Any) -> Any:
        """Return ``value`` unchanged."""
        return value


_INACTIVE = _InactiveStage()


class _ActiveStage:
    """The marker returned while a session is open; delegates to the session."""

    __slots__ = ("_session", "_name", "_inputs", "_call")

    def __init__(self, session: Any, name: str, inputs: Any) -> None:
        self._session = session
        self._name = name
        self._inputs = inputs
        self._call: Optional[StageCall] = None

    def __enter__(self) -> "_ActiveStage":
        self._call = self._session.enter_stage(self._name, self._inputs)
        self._inputs = None  # the marker keeps no tensor alive past its entry
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        if exc_info[1] is not None:  # before the stack unwinds: where the error happened
            self._session.note_failure(exc_info[1])
        self._session.exit_stage(self._call)
        return False

    def output(self, value: Any) -> Any:
        """Record ``value`` as the stage's output payload and return it unchanged."""
        self._session.record_output(self._call, value)
        return value


def stage(name: str, *inputs: Any):
    """Open a named stage as a context manager.

    Args:
        name: the stage name.
        *inputs: what goes into the stage (any nesting of tensors and containers). One argument
            is recorded as itself, several as a tuple.

    Returns:
        A context manager whose ``output(value)`` records the stage's output and returns
        ``value`` unchanged.
    """
    session = _active_session
    if session is None:
        return _INACTIVE
    return _ActiveStage(session, name, inputs[0] if len(inputs) == 1 else inputs)


def probe(name: str, value: Any) -> Any:
    """Record ``value`` as the payload of the named point ``name`` and return it unchanged."""
    session = _active_session
    if session is not None:
        session.record_probe(name, value)
    return value


def active_session():
    """The open :class:`~profiling.stages.Session`, or ``None``."""
    return _active_session


def is_profiling() -> bool:
    """Whether a profiling session is open."""
    return _active_session is not None


def is_counting() -> bool:
    """Whether an operation-counting pass is running.

    A model with a fused fast path that computes the same result as its reference algorithm
    (GMFlow's fused attention) may take the explicit path then, so that the counts are the
    algorithm's whatever the device. The counting pass is never timed.
    """
    return _counting


def _set_counting(value: bool) -> None:
    global _counting
    _counting = value


def _set_active_session(session) -> None:
    global _active_session
    if session is not None and _active_session is not None:
        raise RuntimeError("a profiling session is already open; sessions do not nest")
    _active_session = session
