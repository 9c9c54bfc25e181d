"""The collector interface: one measurement per stage call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..session import Session
    from ..stages import StageCall

__all__ = ["Collector"]


class Collector:
    """Measures one thing per stage call.

    A session calls ``enter`` when a stage opens and ``exit`` when it closes, in nested order:
    collectors listed first wrap those listed later, so put the least intrusive collectors
    last. ``start_forward`` and ``end_forward`` bracket one forward pass; a collector that reads
    its measurements late (CUDA events after the one synchronize) does it in ``end_forward``.

    Class attributes:
        name: short name, used in the CLI's ``collectors`` option.
        pass_name: the forward pass the runner runs the collector in. ``"timed"`` (the timers:
            warm-up and repeated forwards carry nothing else); ``"analysis"`` (one untimed
            forward that also records the payload: memory measurements); ``"counting"`` and
            ``"liveness"`` (one untimed forward each, for collectors whose interception would
            disturb the others' measurements); ``"layers"`` (one forward timing every leaf
            module, after the others).
        metrics: the metric names this collector writes into ``StageCall.metrics``.
    """

    name: str = "collector"
    pass_name: str = "timed"
    metrics: tuple[str, ...] = ()

    def bind(self, model: Any, inputs: Any) -> None:
        """Called once by the runner with the model and its inputs, before any forward; a
        collector that needs them (per-module records, the inputs' liveness) keeps them."""

    def start_forward(self, session: "Session") -> None:
        """Called before a forward pass begins."""

    def enter(self, call: "StageCall") -> None:
        """Called when a stage opens."""

    def exit(self, call: "StageCall") -> None:
        """Called when a stage closes (also when the forward raised)."""

    def end_forward(self, session: "Session") -> None:
        """Called after the forward pass, even when it raised."""

    def close(self) -> None:
        """Release whatever the collector holds (modes, events); called once at session end."""
