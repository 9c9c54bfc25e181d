"""The network as an inference runtime runs it: the registered executors (ONNX Runtime and
OpenVINO built in, :mod:`.registry`), float32 and int8.

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

from .registry import Executor, executor, register_executor, registered_executors

__all__ = ["RUNTIMES", "missing_packages", "require_runtime", "profile_runtime", "RuntimeProfile",
           "EXTRA", "default_cache_folder", "DEFAULT_CACHE_LIMIT", "make_workdir", "export_key",
           "RUNTIME_DTYPES", "OUTPUT_SCALE_FLOOR", "judged_difference", "Executor",
           "register_executor", "registered_executors", "executor"]

#: The optional extra that installs every runtime.
EXTRA = "runtimes"


def missing_packages(runtime: str, dtype: str = "float32") -> list[str]:
    """The packages that ``runtime`` needs for ``dtype`` and that are not installed (found
    without importing them: cheap enough for a test's skip marker)."""
    return [name for name in executor(runtime).needed(dtype)
            if importlib.util.find_spec(name) is None]


def require_runtime(runtime: str, dtype: str = "float32", purpose: str = "") -> None:
    """Import every package ``runtime`` needs for ``dtype``, or raise a one-line
    :class:`~profiling.MissingExtra` naming the ``runtimes`` extra: for a package that is not
    installed, and for one that is installed but does not import (a missing native library).
    ``purpose`` says what needed it (default ``runtime=NAME``)."""
    from ..errors import require_extra

    for name in executor(runtime).needed(dtype):
        require_extra(name, EXTRA, purpose or f"runtime={runtime}")


def __getattr__(name: str) -> Any:
    if name in ("profile_runtime", "RuntimeProfile"):
        return getattr(importlib.import_module(".profile", __name__), name)
    if name == "default_cache_folder":
        return getattr(importlib.import_module(".cache", __name__), name)
    if name == "DEFAULT_CACHE_LIMIT":  # the export cache's bound in bytes (.cache_bound)
        return importlib.import_module(".cache_bound", __name__).DEFAULT_LIMIT_BYTES
    if name == "RUNTIMES":  # each registered runtime's packages: (float32, what int8 adds)
        return {key: (cls.packages, cls.int8_packages)
                for key, cls in registered_executors().items()}
    if name == "RUNTIME_DTYPES":  # the dtypes each registered runtime runs
        return {key: cls.dtypes for key, cls in registered_executors().items()}
    if name in ("OUTPUT_SCALE_FLOOR", "judged_difference"):
        return getattr(importlib.import_module(".runtime_profile", __name__), name)
    if name == "make_backend":
        return getattr(importlib.import_module(".backends", __name__), name)
    if name in ("interleaved_settings", "forward_timer"):
        return getattr(importlib.import_module(".paired_speed", __name__), name)
    if name == "tensor_feeds":
        return getattr(importlib.import_module(".parts", __name__), name)
    if name == "export_key":
        return getattr(importlib.import_module(".cache_key", __name__), name)
    if name == "make_workdir":
        return getattr(importlib.import_module(".workdir", __name__), name)
    raise AttributeError(f"module 'profiling.runtimes' has no attribute '{name}'")
