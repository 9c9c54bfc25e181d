"""The deploy room: the network as deployed (:mod:`.deployment`: ``run.dtype``,
``run.autocast``, ``run.channels_last``, ``run.compile``) and as an inference runtime runs it
(:mod:`.in_runtime`: ``run.runtime``, ``run.dtype=int8``, built on
:mod:`profiling.runtimes`).

Above :mod:`zoo.models`, below :mod:`zoo.tools`.
"""

from .deployment import TF32_NOTE, Deployment, half_emulated_note, roofline_dtype
from .in_runtime import (EXPORT_FOLDER, check_runtime, export_identity, int8_metric, profile_in_runtime,
                         runtime_coverage_hint)

__all__ = ["EXPORT_FOLDER", "TF32_NOTE", "Deployment", "half_emulated_note", "roofline_dtype", "check_runtime",
           "export_identity", "int8_metric", "profile_in_runtime", "runtime_coverage_hint"]
