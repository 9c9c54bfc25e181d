"""Collectors: each measures one thing per stage call. Choose them by name per run.

A collector is a :class:`Collector` subclass registered with :func:`register_collector`; see
``docs/collectors.md`` for how to add one. Importing this package registers the built-in ones.
"""

from __future__ import annotations

from . import (cuda_memory, liveness, module_time, op_counts,  # noqa: F401  (they register)
               tensor_memory, timing, trace_ranges)
from .base import PASSES, Collector
from .metrics import CALLS, KINDS, REPEATS, Metric, declared_metrics, metric_from_dict
from .registry import collector_class, make_collectors, register_collector, registered_collectors

__all__ = ["Collector", "PASSES", "Metric", "KINDS", "CALLS", "REPEATS", "declared_metrics",
           "metric_from_dict", "register_collector", "registered_collectors",
           "collector_class", "make_collectors"]
