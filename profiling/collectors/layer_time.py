"""Time per leaf module, for the torchstat table's ``duration[%]`` column."""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any, Callable, Optional

import torch
from torch import nn

from ..counting.modules import is_leaf
from ..payload import iter_tensors
from .base import Collector

__all__ = ["LayerTime"]


class LayerTime(Collector):
    """Times every call of every leaf module (a module without children) in a forward of its
    own, as torchstat does, and keeps each leaf's last call (the call the layer table shows).

    On the CPU each call is timed with ``time.perf_counter_ns``; on CUDA with a pair of CUDA
    events, read after one synchronize at the end of the forward. The hooks on every leaf cost
    a few microseconds per call, so the collector has a pass of its own (``"layers"``, after the
    other untimed passes, which warm the model up) and never rides in the timed forwards. It
    writes no stage metrics. The hooks are removed when the forward ends, also when it raised.

    Attributes:
        durations: seconds of the last call of each leaf in the last forward, by module path.
    """

    name = "layer_time"
    pass_name = "layers"

    def __init__(self) -> None:
        self.model: Optional[nn.Module] = None
        self.durations: dict[str, float] = {}
        self._cuda = False
        self._handles: list[Any] = []
        self._starts: dict[str, Any] = {}
        self._pending: dict[str, tuple[torch.cuda.Event, torch.cuda.Event]] = {}

    def bind(self, model: Any, inputs: Any) -> None:
        """Keep the model, and time with CUDA events when its inputs are on a CUDA device."""
        self.model = model if isinstance(model, nn.Module) else None
        self._cuda = any(t.is_cuda for t in iter_tensors(inputs))

    def start_forward(self, session) -> None:
        self.durations, self._starts, self._pending = {}, {}, {}
        if self.model is None:
            return
        for path, module in self.model.named_modules():
            if path and is_leaf(module):
                self._handles.append(module.register_forward_pre_hook(self._enter_hook(path)))
                self._handles.append(module.register_forward_hook(self._exit_hook(path)))

    def _enter_hook(self, path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any) -> None:
            if self._cuda:
                start = torch.cuda.Event(enable_timing=True)
                start.record()
                self._starts[path] = start
            else:
                self._starts[path] = perf_counter_ns()
        return hook

    def _exit_hook(self, path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            start = self._starts.pop(path, None)
            if start is None:
                return
            if self._cuda:
                end = torch.cuda.Event(enable_timing=True)
                end.record()
                self._pending[path] = (start, end)
            else:
                self.durations[path] = (perf_counter_ns() - start) / 1e9
        return hook

    def end_forward(self, session) -> None:
        self._remove_hooks()
        if self._pending:
            torch.cuda.synchronize()
            for path, (start, end) in self._pending.items():
                self.durations[path] = start.elapsed_time(end) / 1e3
            self._pending = {}

    def close(self) -> None:
        self._remove_hooks()

    def _remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
