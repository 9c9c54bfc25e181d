"""The network as an inference runtime runs it: ONNX Runtime and OpenVINO, float32 and int8.

:func:`profile_runtime` gives the stage table of :func:`~profiling.runner.profile_model` (same
stage names, payload, counts and time columns) with the times taken from the runtime's own
profiler, mapped back to the stages through the exported graph (docs/runtimes.md). The runtimes
are optional: ``pip install 'stagezoo[runtimes]'``; :func:`missing_packages` says what is
missing for a runtime. Importing this package loads neither torch nor a runtime.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = ["RUNTIMES", "missing_packages", "require_runtime", "profile_runtime", "RuntimeProfile", "EXTRA",
           "default_cache_folder", "default_provider", "make_workdir", "export_key",
           "RUNTIME_DTYPES", "OUTPUT_SCALE_FLOOR", "judged_difference", "make_backend",
           "INTERLEAVED_SETTINGS", "forward_timer", "tensor_feeds"]

#: The runtimes, and the packages each needs (float32; int8 adds the second tuple).
RUNTIMES = {"onnxruntime": (("onnx", "onnxscript", "onnxruntime"), ()),
            "openvino": (("onnx", "onnxscript", "openvino"), ("nncf",))}

#: The optional extra that installs every runtime.
EXTRA = "runtimes"


def _needed(runtime: str, dtype: str) -> tuple[str, ...]:
    needed, for_int8 = RUNTIMES[runtime]
    return needed + (for_int8 if dtype == "int8" else ())


def missing_packages(runtime: str, dtype: str = "float32") -> list[str]:
    """The packages that ``runtime`` needs for ``dtype`` and that are not installed (found
    without importing them: cheap enough for a test's skip marker)."""
    return [name for name in _needed(runtime, dtype) if importlib.util.find_spec(name) is None]


def require_runtime(runtime: str, dtype: str = "float32", purpose: str = "") -> None:
    """Import every package ``runtime`` needs for ``dtype``, or raise a one-line
    :class:`~profiling.MissingExtra` naming the ``runtimes`` extra: for a package that is not
    installed, and for one that is installed but does not import (a missing native library).
    ``purpose`` says what needed it (default ``runtime=NAME``)."""
    from ..errors import require_extra

    for name in _needed(runtime, dtype):
        require_extra(name, EXTRA, purpose or f"runtime={runtime}")


def __getattr__(name: str) -> Any:
    if name in ("profile_runtime", "RuntimeProfile"):
        return getattr(importlib.import_module(".profile", __name__), name)
    if name == "default_cache_folder":
        return getattr(importlib.import_module(".cache", __name__), name)
    if name in ("RUNTIME_DTYPES", "OUTPUT_SCALE_FLOOR", "judged_difference"):
        return getattr(importlib.import_module(".runtime_profile", __name__), name)
    if name == "make_backend":
        return getattr(importlib.import_module(".backends", __name__), name)
    if name in ("INTERLEAVED_SETTINGS", "forward_timer"):
        return getattr(importlib.import_module(".paired_speed", __name__), name)
    if name == "tensor_feeds":
        return getattr(importlib.import_module(".parts", __name__), name)
    if name == "export_key":
        return getattr(importlib.import_module(".cache_key", __name__), name)
    if name == "make_workdir":
        return getattr(importlib.import_module(".workdir", __name__), name)
    if name == "default_provider":
        return getattr(importlib.import_module(".onnxruntime_backend", __name__), name)
    raise AttributeError(f"module 'profiling.runtimes' has no attribute '{name}'")
