"""The collector registry: ``@register_collector`` on a class makes its name choosable."""

from __future__ import annotations

from typing import Sequence, TypeVar

from ..errors import ProfilingError
from .base import PASSES, Collector

__all__ = ["register_collector", "registered_collectors", "collector_class", "make_collectors"]

_COLLECTORS: dict[str, type[Collector]] = {}
_ALIASES: dict[str, str] = {}

CollectorType = TypeVar("CollectorType", bound=type[Collector])


def register_collector(cls: CollectorType) -> CollectorType:
    """Register the collector class ``cls`` under ``cls.name`` (and its ``aliases``).

    Its ``pass_name`` must be one of :data:`~profiling.collectors.base.PASSES`, and no other
    class may hold its name.
    """
    if not (isinstance(cls, type) and issubclass(cls, Collector)):
        raise TypeError(f"register_collector takes a Collector subclass, got {cls!r}")
    if cls.pass_name not in PASSES:
        raise ValueError(f"{cls.__name__}.pass_name={cls.pass_name!r}; accepted: "
                         f"{', '.join(PASSES)}")
    for name in (cls.name, *cls.aliases):
        holder = _COLLECTORS.get(_ALIASES.get(name, name))
        if holder is not None and holder.__qualname__ != cls.__qualname__:
            raise ValueError(f"two collectors named {name!r}: {holder.__name__} and "
                             f"{cls.__name__}")
    _COLLECTORS[cls.name] = cls
    _ALIASES.update(dict.fromkeys(cls.aliases, cls.name))
    return cls


def registered_collectors() -> dict[str, type[Collector]]:
    """Every registered collector class by name, in the order they were registered."""
    return dict(_COLLECTORS)


def collector_class(name: str) -> type[Collector]:
    """The class registered as ``name`` (or under the former name ``name``)."""
    return _classes([name])[0]


def make_collectors(names: Sequence[str]) -> list[Collector]:
    """Build the collectors named in ``names`` (in that order); ``payload`` is skipped."""
    return [cls() for cls in _classes([name for name in names if name != "payload"])]


def _classes(names: Sequence[str]) -> list[type[Collector]]:
    """The classes of ``names``; one error naming every unknown name and the accepted ones."""
    found = [_COLLECTORS.get(_ALIASES.get(name, name)) for name in names]
    unknown = [name for name, cls in zip(names, found) if cls is None]
    if unknown:
        raise ProfilingError(f"unknown collector(s) {', '.join(unknown)}; choose from: payload, "
                             f"{', '.join(sorted(_COLLECTORS))}")
    return found
