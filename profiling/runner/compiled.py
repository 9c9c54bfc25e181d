"""``torch.compile`` with the stage markers as graph boundaries, and what the compiler did.

A compiled model is timed stage by stage like an eager one. For that, the session's methods
that the markers and the attached stages call are excluded from compilation
(``torch.compiler.disable``): TorchDynamo breaks the graph where a stage opens or closes, so
no graph spans a stage boundary and each stage's timer brackets the compiled code of that
stage alone. A function that opens stages runs eagerly between them, and what it calls inside
a stage (submodules, helper functions) is compiled as graphs of their own; a library model's
top-level children, attached by path, become one compiled region each.

:func:`compile_report` reads TorchDynamo's counters: how many graphs it compiled and how many
graph breaks it met (with their reasons), since :func:`compile_model` was called.
"""

from __future__ import annotations

import shutil
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ..errors import ProfilingError
from ..stages.session import Session

__all__ = ["compile_model", "compile_options", "compile_report", "CompileReport",
           "cxx_compiler", "COMPILE_MODES"]

#: The modes of ``torch.compile``.
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune")

_MARKER_METHODS = ("enter_stage", "exit_stage", "record_output", "record_probe")


@dataclass(frozen=True)
class CompileReport:
    """What TorchDynamo did since :func:`compile_model`.

    Attributes:
        graphs: the distinct graphs compiled (``unique_graphs``).
        graph_breaks: the graph breaks met while compiling (each place counted once per
            compilation, not per forward).
        reasons: graph breaks per reason (the first line of TorchDynamo's message).
    """

    graphs: int
    graph_breaks: int
    reasons: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The report as plain values (for ``meta.json``)."""
        return {"graphs": self.graphs, "graph_breaks": self.graph_breaks,
                "graph_break_reasons": dict(self.reasons)}


def _markers_break_graphs() -> None:
    """Exclude the session's marker methods from compilation (once; eager runs unchanged)."""
    for name in _MARKER_METHODS:
        method = getattr(Session, name)
        if not getattr(method, "_profiling_graph_boundary", False):
            disabled = torch.compiler.disable(method)
            disabled._profiling_graph_boundary = True
            setattr(Session, name, disabled)


def cxx_compiler() -> str | None:
    """The C++ compiler inductor's CPU backend would find on ``PATH`` (``None`` if none)."""
    for name in ("g++", "c++", "clang++"):
        path = shutil.which(name)
        if path:
            return path
    return None


def compile_model(model: Callable, mode: str = "default") -> Callable:
    """``torch.compile(model, mode=mode)`` with the stage markers as graph boundaries (its
    options are :func:`compile_options`).

    TorchDynamo's caches and counters are reset, so :func:`compile_report` counts this model's
    graphs alone. Compilation happens at the first call: run it in the warm-up.

    Raises:
        ProfilingError: for a mode ``torch.compile`` does not have.
    """
    if mode not in COMPILE_MODES:
        raise ProfilingError(f"compile mode '{mode}' is not accepted; accepted: "
                             f"{', '.join(COMPILE_MODES)}")
    import torch._dynamo  # noqa: F401  (imported on demand: it takes a second)

    _markers_break_graphs()
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    return torch.compile(model, options=compile_options(mode))


def compile_options(mode: str) -> dict[str, Any]:
    """The inductor options of ``mode``, with the width of the CPU vector code made explicit.

    Inductor takes that width from ``ATEN_CPU_CAPABILITY`` (none for ``default``), but its
    on-disk cache of compiled graphs does not count it in the key: a graph generated with AVX2
    vectors in one process is reused in a process running with ``default``, whose compiler
    flags lack them, and fails to compile. Given as an option, the width is part of the key.
    """
    from torch._inductor import list_mode_options

    options = dict(list_mode_options(mode))
    try:
        from torch._inductor.cpu_vec_isa import pick_vec_isa

        options["cpp.simdlen"] = int(pick_vec_isa().bit_width())  # 0: no vector code
    except Exception:  # noqa: BLE001  (a private API: without it, inductor picks as before)
        pass
    return options


def compile_report() -> CompileReport:
    """The graphs and graph breaks counted since the last :func:`compile_model`."""
    from torch._dynamo.utils import counters

    reasons: Counter[str] = Counter()
    for reason, count in counters["graph_break"].items():
        reasons[str(reason).strip().splitlines()[0]] += count
    return CompileReport(int(counters["stats"].get("unique_graphs", 0)),
                         sum(reasons.values()), dict(reasons))
