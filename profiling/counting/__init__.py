"""Operation counts at the dispatcher: MACs, FLOPs, bytes read and written, activations.

:class:`OpCounting` counts every operator a forward runs, on any device (the meta device
included), with the per-operator formulas of the registry (:mod:`.registry`; the formulas
live in :mod:`.matmul`, :mod:`.elementwise`, :mod:`.spatial`, :mod:`.movement`, each stating
its conventions). :func:`count_ops` runs a model once under it. Operators with no formula are
listed in ``OpCounting.uncounted``. :mod:`.roofline` places the counts against a device's
ceilings (peak FLOP/s per data type, memory bandwidth).

Importing this package registers the built-in formulas, so its names are imported eagerly.
"""

from .counter import OpCounting, count_ops
from .counts import COUNT_FIELDS, Counts, OperatorCounts
from .modules import ModuleRecord
from .registry import OpCost, register_formula, register_free, registered_ops
from .roofline import (PRESETS, Ceilings, add_roofline_columns, attainable_flops, bound,
                       ceilings, ceilings_for_device, load_ceilings, roofline_seconds,
                       save_ceilings)

__all__ = ["OpCounting", "count_ops", "Counts", "OperatorCounts", "COUNT_FIELDS",
           "ModuleRecord", "OpCost", "register_formula", "register_free", "registered_ops",
           "Ceilings", "PRESETS",
           "attainable_flops", "bound", "ceilings", "ceilings_for_device", "load_ceilings",
           "roofline_seconds", "save_ceilings", "add_roofline_columns"]
