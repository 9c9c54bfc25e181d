"""Counting at the dispatcher: every operator a forward runs, priced by the formula registry.

:class:`OpCounting` is a context manager. Inside it, a ``TorchDispatchMode`` sees every ATen
(and library) operator after autograd, so functional code (``matmul``, ``softmax``,
``interpolate``, ``grid_sample``) is counted as well as modules. Tensors may live on any
device, the meta device included, and every device counts the same operators: while counting,
scaled dot-product attention runs its math backend (the meta device has no fused kernel, so
attention is counted unfused everywhere: ``Q K^T``, scaling, softmax, ``P V``, with the
score matrix's traffic), and a pass-through ``TorchFunctionMode`` keeps ``nn.MultiheadAttention``
and ``nn.TransformerEncoderLayer`` off their fused inference fast path, which only CPU and
CUDA have.

Each call adds its cost to the run's total, to its operator's total, to every open accumulator
(:meth:`OpCounting.open`; the stage collector opens one per stage) and, given a model, to every
module being called. An operator with no formula is counted in :attr:`OpCounting.uncounted`
(its bytes still count, its FLOPs cannot): nothing is silently taken as free.
"""

from __future__ import annotations

from collections import Counter
from contextlib import ExitStack
from typing import Any, Optional

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

# Importing the formula modules registers them.
from . import elementwise, matmul, movement, spatial  # noqa: F401
from .counts import Counts
from .modules import ModuleRecord, ModuleTracker
from .registry import OpCost, formula_for, op_name, tensor_bytes, tensors_in

__all__ = ["OpCounting", "count_ops"]


class OpCounting:
    """Count the operators run inside the ``with`` block.

    Args:
        model: when given, counts are also attributed to each of its modules
            (:attr:`modules`), through forward hooks that exist only inside the block.

    Attributes:
        total: counts of everything run in the block.
        by_op: counts per operator name (``aten.convolution``, ...).
        uncounted: calls per operator that has no formula (the coverage gaps).
        modules: per-module records, by dotted path (empty without a model).
    """

    def __init__(self, model: Optional[nn.Module] = None) -> None:
        self.model = model
        self.total = Counts()
        self.by_op: dict[str, Counts] = {}
        self.uncounted: Counter[str] = Counter()
        self._open: list[Counts] = []
        self._tracker = (ModuleTracker(model, self.open, self.close)
                         if model is not None else None)
        self._contexts = ExitStack()

    @property
    def modules(self) -> dict[str, ModuleRecord]:
        """Per-module records by dotted path (``""`` is the model)."""
        return self._tracker.records if self._tracker is not None else {}

    def open(self, counts: Counts) -> None:
        """Add every later operator to ``counts`` too, until :meth:`close`."""
        self._open.append(counts)

    def close(self, counts: Counts) -> None:
        """Stop adding to ``counts``."""
        for index in range(len(self._open) - 1, -1, -1):
            if self._open[index] is counts:
                del self._open[index]
                return

    def __enter__(self) -> "OpCounting":
        with ExitStack() as contexts:
            if self._tracker is not None:
                self._tracker.attach()
                contexts.callback(self._tracker.detach)
            contexts.enter_context(sdpa_kernel(SDPBackend.MATH))
            contexts.enter_context(_NoFastPathMode())
            contexts.enter_context(_DispatchMode(self))
            self._contexts = contexts.pop_all()
        return self

    def __exit__(self, *exc_info: Any) -> bool:
        self._contexts.close()
        return False

    def record(self, target: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """Price one call of ``target`` and add it everywhere it belongs.

        A formula that fails on unexpected arguments does not break the forward: the call is
        listed in :attr:`uncounted` under the operator's name and the error's type.
        """
        name = op_name(target)
        formula = formula_for(target)
        cost = OpCost()
        if formula is None:
            self.uncounted[name] += 1
        else:
            try:
                cost = formula(args, kwargs, out)
            except Exception as error:  # noqa: BLE001  (counting must never break a forward)
                self.uncounted[f"{name} ({type(error).__name__} in its formula)"] += 1
        cost = _resolve_bytes(cost, args, kwargs, out)
        self.total.add(cost)
        per_op = self.by_op.get(name)
        if per_op is None:
            per_op = self.by_op[name] = Counts()
        per_op.add(cost)
        for counts in self._open:
            counts.add(cost, name)


def _resolve_bytes(cost: OpCost, args: tuple, kwargs: dict, out: Any) -> OpCost:
    if cost.bytes_read is not None and cost.bytes_written is not None:
        return cost
    read, written = cost.bytes_read, cost.bytes_written
    if read is None:
        inputs = (args, {k: v for k, v in kwargs.items() if k != "out"})
        read = sum(tensor_bytes(t) for t in _distinct(tensors_in(inputs)))
    if written is None:
        written = sum(tensor_bytes(t) for t in _distinct(tensors_in(out)))
    return cost._replace(bytes_read=read, bytes_written=written)


def _distinct(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    seen: set[int] = set()
    return [t for t in tensors if not (id(t) in seen or seen.add(id(t)))]


class _DispatchMode(TorchDispatchMode):
    def __init__(self, counting: OpCounting) -> None:
        super().__init__()
        self.counting = counting

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        packet = func._overloadpacket
        if formula_for(packet) is None:
            # An operator with no formula may have a decomposition whose parts have one.
            with self:
                decomposed = func.decompose(*args, **kwargs)
            if decomposed is not NotImplemented:
                return decomposed
        out = func(*args, **kwargs)
        self.counting.record(packet, args, kwargs, out)
        return out


class _NoFastPathMode(TorchFunctionMode):
    """Passes every call through; being active makes ``has_torch_function`` true, which keeps
    PyTorch's transformer layers off their fused fast path."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def count_ops(model: nn.Module, *inputs: Any, **kwargs: Any) -> OpCounting:
    """Run ``model(*inputs, **kwargs)`` once under :class:`OpCounting` and return the counts."""
    with OpCounting(model) as counting:
        model(*inputs, **kwargs)
    return counting
