"""The operation-count collector: MACs, FLOPs and memory traffic per stage, at the dispatcher."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import pandas as pd
from torch import nn

from ..counting import COUNT_FIELDS, Counts, ModuleRecord, OpCounting, OperatorCounts
from ..stages.markers import _set_counting
from .base import Collector
from .metrics import Metric
from .registry import register_collector

if TYPE_CHECKING:
    from ..stages.markers import StageCall

__all__ = ["OpCounts"]


@register_collector
class OpCounts(Collector):
    """Counts every operator of a forward and writes the totals of each stage call.

    Each ``StageCall.metrics`` gets ``macs``, ``flops``, ``bytes_read``, ``bytes_written`` and
    ``activations``, inclusive of the stages nested inside it (definitions in
    :mod:`profiling.counting`). Works on CPU, CUDA and meta tensors. It intercepts every
    operator, so it slows the forward: the runner never runs it in a timed pass.

    Args:
        model: when given, counts are also kept per module (:attr:`modules`), for the layer
            and module tables.

    Attributes:
        uncounted: calls per operator that has no formula, in the last forward.
        modules: per-module records of the last forward, by dotted path.
        total: counts of the whole last forward (inside and outside stages).
        by_op: counts per operator of the last forward.
        operators: each stage call's operator breakdown in the last forward (a table,
            :attr:`operators`).
    """

    name = "op_counts"
    pass_name = "counting"
    provides = ("uncounted", "modules", "operators")
    metrics = (Metric("macs", unit="multiply-accumulates", kind="count",
                      description="multiply-accumulates of convolutions, linear layers, "
                      "matmuls and attention, bias excluded"),
               Metric("flops", unit="FLOPs", kind="count", headline=True, label="GFLOPs",
                      scale=1e-9, description="every floating-point operation"),
               Metric("bytes_read", unit="bytes", kind="bytes",
                      description="bytes the operators read"),
               Metric("bytes_written", unit="bytes", kind="bytes",
                      description="bytes the operators wrote"),
               Metric("activations", unit="elements", kind="count",
                      description="output elements of convolutions, linear layers and "
                      "matmuls"))

    def __init__(self, model: Optional[nn.Module] = None) -> None:
        self.model = model
        self._counting: Optional[OpCounting] = None
        self._last: Optional[OpCounting] = None
        self._open: list[tuple["StageCall", OperatorCounts]] = []
        self._parts: dict[tuple[str, int], dict[str, Counts]] = {}

    def bind(self, model, inputs) -> None:
        """Keep per-module records of ``model`` unless another model was given."""
        if self.model is None and isinstance(model, nn.Module):
            self.model = model

    def start_forward(self) -> None:
        self._open = []
        self._parts = {}
        self._counting = OpCounting(self.model).__enter__()
        _set_counting(True)  # models then take the explicit paths the formulas price

    def enter(self, call: "StageCall") -> None:
        if self._counting is None:
            return
        counts = OperatorCounts()
        self._open.append((call, counts))
        self._counting.open(counts)

    def exit(self, call: "StageCall") -> None:
        if not self._open or self._open[-1][0] is not call:  # entered while counting was off
            return
        _, counts = self._open.pop()
        if self._counting is not None:
            self._counting.close(counts)
        call.metrics.update(counts.as_dict())
        self._parts[(call.name, call.call_index)] = counts.by_op

    def end_forward(self) -> None:
        self._finish()

    def close(self) -> None:
        self._finish()

    def _finish(self) -> None:
        _set_counting(False)
        if self._counting is not None:
            counting, self._counting = self._counting, None
            counting.__exit__(None, None, None)
            self._last = counting

    @property
    def uncounted(self) -> dict[str, int]:
        """Calls per operator that has no formula (the ops whose FLOPs are not counted)."""
        return dict(self._last.uncounted) if self._last is not None else {}

    @property
    def modules(self) -> dict[str, ModuleRecord]:
        """Per-module records of the last forward (empty without a model)."""
        return self._last.modules if self._last is not None else {}

    @property
    def total(self) -> Counts:
        """Counts of the whole last forward."""
        return self._last.total if self._last is not None else Counts()

    def forward_totals(self) -> dict[str, int]:
        """:attr:`total` by metric name."""
        return self.total.as_dict()

    @property
    def by_op(self) -> dict[str, Counts]:
        """Counts per operator name of the last forward."""
        return self._last.by_op if self._last is not None else {}

    @property
    def operators(self) -> pd.DataFrame:
        """Each stage call's operators in the last forward, one row per stage call and
        operator (``stage``, ``call_index``, ``operator``, ``calls`` and the count fields),
        inclusive of the stages nested inside, as the call's own counts are (so a call's rows
        add up to them); in each call the most FLOPs first, then the most bytes."""
        def weight(item: tuple[str, Counts]) -> tuple[int, int]:
            return -item[1].flops, -(item[1].bytes_read + item[1].bytes_written)

        rows = [{"stage": stage, "call_index": call_index, "operator": operator,
                 "calls": counts.ops, **counts.as_dict()}
                for (stage, call_index), parts in self._parts.items()
                for operator, counts in sorted(parts.items(), key=weight)]
        return pd.DataFrame(rows, columns=["stage", "call_index", "operator", "calls",
                                           *COUNT_FIELDS])
