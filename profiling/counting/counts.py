"""Accumulated operation counts."""

from __future__ import annotations

from .registry import OpCost

__all__ = ["Counts", "OperatorCounts", "COUNT_FIELDS"]

#: The count fields, in the order they are reported.
COUNT_FIELDS = ("macs", "flops", "bytes_read", "bytes_written", "activations")


class Counts:
    """MACs, FLOPs, bytes read and written, activations and operator calls, summed.

    The definitions are those of :class:`~profiling.counting.OpCost`.
    """

    __slots__ = COUNT_FIELDS + ("ops",)

    def __init__(self) -> None:
        self.macs = 0
        self.flops = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.activations = 0
        self.ops = 0

    def add(self, cost: OpCost, operator: str = "") -> None:
        """Add one call of ``operator`` whose bytes are resolved (not ``None``)."""
        self.macs += cost.macs
        self.flops += cost.flops
        self.bytes_read += cost.bytes_read
        self.bytes_written += cost.bytes_written
        self.activations += cost.activations
        self.ops += 1

    def merge(self, other: "Counts") -> None:
        """Add everything ``other`` holds."""
        for field in (*COUNT_FIELDS, "ops"):
            setattr(self, field, getattr(self, field) + getattr(other, field))

    def as_dict(self) -> dict[str, int]:
        """The count fields (without ``ops``) as a dict, in :data:`COUNT_FIELDS` order."""
        return {field: getattr(self, field) for field in COUNT_FIELDS}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self.as_dict().items())
        return f"Counts({fields}, ops={self.ops})"


class OperatorCounts(Counts):
    """:class:`Counts` that also keep each operator's part (``by_op``: operator name ->
    :class:`Counts`), for a stage call's operator breakdown."""

    __slots__ = ("by_op",)

    def __init__(self) -> None:
        super().__init__()
        self.by_op: dict[str, Counts] = {}

    def add(self, cost: OpCost, operator: str = "") -> None:
        """Add one call of ``operator``, to the whole and to the operator's part."""
        super().add(cost)
        part = self.by_op.get(operator)
        if part is None:
            part = self.by_op[operator] = Counts()
        part.add(cost)
