"""Metrics that declare themselves: what a collector writes, in which unit, and how it adds up.

A collector lists its metrics as :class:`Metric` objects in ``metrics``. A metric is a ``str``
(its name, the key in ``StageCall.metrics``), so code that only needs names keeps using them as
names; the declaration adds what the reports need to show any metric without code of their
own: the unit, the kind, how the calls of a stage add up and how the timed repeats are
summarised, and, for the headline metrics, the label and scale of the terminal tables.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["Metric", "KINDS", "CALLS", "REPEATS", "declared_metrics", "metric_from_dict"]

#: What a metric measures.
KINDS = ("time", "memory", "count", "bytes", "other")
#: How the calls of one stage (a stage entered several times) add up to the stage's figure.
CALLS = ("sum", "max")
#: ``statistics``: measured in every timed forward, summarised over the repeats as the columns
#: ``{name}_{statistic}`` (mean, median, p10, p90, std and the median's interval);
#: ``once``: measured in one untimed pass, one column ``{name}``.
REPEATS = ("statistics", "once")


class Metric(str):
    """A metric's name with its declaration.

    Args:
        name: the key in ``StageCall.metrics`` and the column name (units in the name:
            ``_ms``, ``_mb``, ``_bytes``).
        unit: the unit of a value (``ms``, ``MB`` (1e6 bytes), ``bytes``, ``operations``, ...).
        kind: one of :data:`KINDS`.
        calls: one of :data:`CALLS`.
        repeats: one of :data:`REPEATS`.
        description: what it counts, in one sentence.
        headline: shown in the terminal summary and comparison tables.
        label: the column heading there (by default the name).
        scale: what a value is multiplied by there (``1e-9`` shows FLOPs as GFLOPs).
    """

    unit: str
    kind: str
    calls: str
    repeats: str
    description: str
    headline: bool
    label: str
    scale: float

    def __new__(cls, name: str, *, unit: str = "", kind: str = "other", calls: str = "sum",
                repeats: str = "once", description: str = "", headline: bool = False,
                label: str = "", scale: float = 1.0) -> "Metric":
        for value, accepted, what in ((kind, KINDS, "kind"), (calls, CALLS, "calls"),
                                      (repeats, REPEATS, "repeats")):
            if value not in accepted:
                raise ValueError(f"metric {name!r}: {what}={value!r}; accepted: "
                                 f"{', '.join(accepted)}")
        metric = super().__new__(cls, name)
        metric.unit, metric.kind, metric.calls, metric.repeats = unit, kind, calls, repeats
        metric.description, metric.headline = description, headline
        metric.label, metric.scale = label or name, scale
        return metric

    @property
    def name(self) -> str:
        """The metric's name as a plain string."""
        return str(self)

    @property
    def column(self) -> str:
        """The stage table's column that stands for the metric: ``{name}_median`` for a
        repeated metric, else ``{name}``."""
        return f"{self}_median" if self.repeats == "statistics" else str(self)

    def as_dict(self) -> dict[str, Any]:
        """The declaration as plain data (``meta.json``'s ``metrics``)."""
        return {"name": str(self), "unit": self.unit, "kind": self.kind, "calls": self.calls,
                "repeats": self.repeats, "description": self.description,
                "headline": self.headline, "label": self.label, "scale": self.scale}

    def __reduce__(self) -> tuple:
        return metric_from_dict, (self.as_dict(),)


def metric_from_dict(data: Mapping[str, Any]) -> Metric:
    """The :class:`Metric` that :meth:`Metric.as_dict` wrote."""
    fields = dict(data)
    return Metric(fields.pop("name"), **fields)


def declared_metrics(collectors: Iterable[Any]) -> list[Metric]:
    """The metrics of ``collectors`` (classes or objects), in order, each once; a metric
    listed as a bare name is declared with the defaults (``repeats`` from the pass: a timed
    collector's metrics are repeated)."""
    found: dict[str, Metric] = {}
    for collector in collectors:
        for metric in collector.metrics:
            if not isinstance(metric, Metric):
                metric = Metric(metric, repeats="statistics"
                                if collector.pass_name == "timed" else "once")
            found.setdefault(str(metric), metric)
    return list(found.values())
