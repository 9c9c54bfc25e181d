"""The collector interface: one measurement per stage call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from ..stages.markers import StageCall

__all__ = ["Collector", "PASSES"]

#: The forward passes a collector can run in, in the order the runner runs them: one untimed
#: forward per pass that has collectors, then the warm-up and the timed forwards (``"timed"``).
PASSES = ("analysis", "liveness", "counting", "layers", "timed")


class Collector:
    """Measures one thing per stage call.

    A session calls ``enter`` when a stage opens and ``exit`` when it closes, in nested order:
    collectors listed first wrap those listed later, so put the least intrusive collectors
    last. ``start_forward`` and ``end_forward`` bracket one forward pass; a collector that reads
    its measurements late (CUDA events after the one synchronize) does it in ``end_forward``.

    A collector is registered with :func:`~profiling.collectors.register_collector`, which
    makes its ``name`` usable in the ``collectors`` option; every registered collector must be
    constructible without arguments and pass the contract test in
    ``tests/test_collector_contract.py``.

    Class attributes:
        name: short name, used in the CLI's ``collectors`` option.
        aliases: former names still accepted for it (configs written before a rename).
        pass_name: the forward pass the runner runs the collector in (one of :data:`PASSES`).
            ``"timed"`` (the timers: warm-up and repeated forwards carry nothing else);
            ``"analysis"`` (one untimed forward that also records the payload: memory
            measurements); ``"counting"`` and ``"liveness"`` (one untimed forward each, for
            collectors whose interception would disturb the others' measurements);
            ``"layers"`` (one forward timing every leaf module, after the others).
        nesting_rank: the place among the collectors of one pass: lower ranks wrap higher ones,
            so the timers take the highest and measure the least of the others.
        devices: the device types whose forwards it measures.
        metrics: the metrics this collector writes into ``StageCall.metrics``, declared as
            :class:`~profiling.collectors.Metric` (name, unit, kind, how calls and repeats add
            up): the reports show a declared metric without code of their own.
        provides: what :class:`~profiling.runner.ProfileResult` reads from the collector
            beside its metrics, by the name of the attribute that holds it (the op counter's
            ``uncounted`` operators, each module's ``total_seconds``): the result finds the
            collector that declares it, never a collector by its name.
    """

    name: str = "collector"
    aliases: tuple[str, ...] = ()
    pass_name: str = "timed"
    nesting_rank: int = 0
    devices: tuple[str, ...] = ("cpu", "cuda", "meta")
    metrics: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()

    def forward_totals(self) -> dict[str, Any]:
        """The whole last forward's value of each declared metric that the collector totals
        (inside and outside stages); ``{}`` for a collector that totals none."""
        return {}

    def bind(self, model: Any, inputs: Any) -> None:
        """Called once by the runner with the model and its inputs, before any forward; a
        collector that needs them (per-module records, the inputs' liveness) keeps them."""

    def use_copies(self, copies: Mapping[int, Any]) -> None:
        """Called by the runner before each forward with ``{id(tensor): copy}``: every pass
        gets its own copy of the inputs' tensors, so a collector that follows the bound
        inputs' tensors follows these copies instead."""

    def start_forward(self) -> None:
        """Called before a forward pass begins."""

    def enter(self, call: "StageCall") -> None:
        """Called when a stage opens."""

    def exit(self, call: "StageCall") -> None:
        """Called when a stage closes (also when the forward raised)."""

    def end_forward(self) -> None:
        """Called after the forward pass, even when it raised."""

    def close(self) -> None:
        """Release whatever the collector holds (modes, events); called once at session end."""
