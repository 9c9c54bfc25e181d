"""Collectors: each measures one thing per stage call. Choose them by name per run.

A collector is a :class:`Collector` subclass registered with :func:`register_collector`; see
``docs/collectors.md`` for how to add one.
"""

from __future__ import annotations

from .base import PASSES, Collector
from .registry import collector_class, make_collectors, register_collector, registered_collectors

# Importing the built-in collectors registers them.
from . import (cuda_memory, liveness, module_time, op_counts,  # noqa: E402,F401  isort: skip
               tensor_memory, timing, trace_ranges)

__all__ = ["Collector", "PASSES", "register_collector", "registered_collectors",
           "collector_class", "make_collectors"]
