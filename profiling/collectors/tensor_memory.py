"""Tensor memory per stage, tracked at the dispatcher (CPU, and meta for estimates)."""

from __future__ import annotations

import weakref
from typing import Any, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ..stages.markers import StageCall
from .base import Collector
from .metrics import Metric
from .registry import register_collector

__all__ = ["TensorMemory"]


class _AllocationTracker(TorchDispatchMode):
    """Sees every operator's outputs and keeps the live bytes of the storages they created.

    An output storage counts as newly allocated when no input of the same operator shares it
    (views, in-place ops and ``detach`` return an input's storage). Its bytes are released when
    the storage is freed, which a ``weakref.finalize`` on the storage reports.
    """

    def __init__(self, owner: "TensorMemory") -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        owner = self.owner
        inputs = {id(t.untyped_storage()) for t in tree_flatten((args, kwargs))[0]
                  if isinstance(t, torch.Tensor)}
        for tensor in tree_flatten(out)[0]:
            if isinstance(tensor, torch.Tensor) and tensor.device.type in owner.device_types:
                storage = tensor.untyped_storage()
                key = id(storage)
                if key not in inputs and key not in owner.live:
                    owner.allocated(storage, key)
        return out


@register_collector
class TensorMemory(Collector):
    """Bytes of tensor storage allocated during each stage, in MB (1e6 bytes).

    ``tensor_retained_mb`` is what the stage leaves allocated (allocated minus freed inside the
    stage); ``tensor_peak_mb`` is the highest level reached inside the stage above the level
    at its start. These are tensor storages as PyTorch's operators allocate them: a kernel's
    private scratch memory and the allocator's caching are not seen. On the meta device the
    same figures are computed without allocating, as an estimate of a real run.

    It intercepts every operator, so the runner runs it in its own pass, never while timing.

    Args:
        device_types: the tensor devices to track (``cpu`` by default; ``meta`` on meta runs).
    """

    name = "tensor_memory"
    aliases = ("cpu_memory",)  # an older name, too narrow: it tracks meta tensors too
    pass_name = "analysis"
    nesting_rank = 10
    metrics = (Metric("tensor_retained_mb", unit="MB", kind="memory",
                      description="tensor storage the stage allocated and still holds at its end"),
               Metric("tensor_peak_mb", unit="MB", kind="memory", calls="max", headline=True,
                      label="peak MB", description="the highest tensor storage inside the "
                      "stage above the level at its start"))

    def __init__(self, device_types: Sequence[str] = ("cpu", "meta")) -> None:
        self.device_types = frozenset(device_types)
        self.live: dict[int, int] = {}
        self.level = 0
        self._finalizers: list[weakref.finalize] = []
        self._stack: list[list] = []
        self._mode: Any = None

    def allocated(self, storage: torch.UntypedStorage, key: int) -> None:
        """Account for a newly allocated ``storage``."""
        nbytes = storage.nbytes()
        self.live[key] = nbytes
        self.level += nbytes
        self._finalizers.append(weakref.finalize(storage, self._freed, key))
        if self._stack and self.level > self._stack[-1][2]:
            self._stack[-1][2] = self.level

    def _freed(self, key: int) -> None:
        self.level -= self.live.pop(key, 0)

    def start_forward(self) -> None:
        self.close()  # each forward counts from zero
        self._stack = []
        self._mode = _AllocationTracker(self)
        self._mode.__enter__()

    def enter(self, call: StageCall) -> None:
        self._stack.append([call, self.level, self.level])

    def exit(self, call: StageCall) -> None:
        _, start, peak = self._stack.pop()
        call.metrics["tensor_retained_mb"] = (self.level - start) / 1e6
        call.metrics["tensor_peak_mb"] = (peak - start) / 1e6
        if self._stack and peak > self._stack[-1][2]:
            self._stack[-1][2] = peak

    def end_forward(self) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None

    def close(self) -> None:
        self.end_forward()
        for finalizer in self._finalizers:
            finalizer.detach()
        self._finalizers, self.live, self.level = [], {}, 0
