"""Time per module: the torchstat table's ``duration[%]`` and the module tree's times."""

from __future__ import annotations

from time import perf_counter_ns
from typing import Any, Callable, Optional

import torch
from torch import nn

from ..stages.attach import hookable_modules
from ..stages.payload import device_type_of
from .base import Collector
from .registry import register_collector

__all__ = ["ModuleTime"]


@register_collector
class ModuleTime(Collector):
    """Times every call of every module of the model in a forward of its own, as torchstat
    does for its leaf layers.

    On the CPU each call is timed with ``time.perf_counter_ns``; on CUDA with a pair of CUDA
    events, read after one synchronize at the end of the forward. A module's time includes its
    submodules (and their hooks, a few microseconds per call), so the collector has a pass of
    its own (``"layers"``, after the other untimed passes, which warm the model up) and never
    rides in the timed forwards. It writes no stage metrics. The hooks are removed when the
    forward ends, also when it raised.

    Attributes:
        last_call_seconds: each module's last call in the last forward, by module path (the
            root is ``""``): the call the torchstat table shows.
        total_seconds: the sum over each module's calls in the last forward, by module path (a
            call inside a call of the same module, in recursion, is in its outer call's).
    """

    name = "module_time"
    pass_name = "layers"
    provides = ("last_call_seconds", "total_seconds")
    devices = ("cpu", "cuda")

    def __init__(self) -> None:
        self.model: Optional[nn.Module] = None
        self.last_call_seconds: dict[str, float] = {}
        self.total_seconds: dict[str, float] = {}
        self._cuda = False
        self._handles: list[Any] = []
        self._open: dict[str, list[Any]] = {}
        self._pending: list[tuple[str, torch.cuda.Event, torch.cuda.Event]] = []

    def bind(self, model: Any, inputs: Any) -> None:
        """Keep the model, and time with CUDA events when the forward runs on a CUDA device."""
        self.model = model if isinstance(model, nn.Module) else None
        self._cuda = device_type_of(model, inputs) == "cuda"

    def start_forward(self) -> None:
        self.last_call_seconds, self.total_seconds = {}, {}
        self._open, self._pending = {}, []
        if self.model is None:
            return
        for path, module in hookable_modules(self.model):
            self._handles.append(module.register_forward_pre_hook(self._enter_hook(path)))
            self._handles.append(module.register_forward_hook(self._exit_hook(path)))

    def _now(self) -> Any:
        if self._cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return perf_counter_ns()

    def _enter_hook(self, path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any) -> None:
            self._open.setdefault(path, []).append(self._now())
        return hook

    def _exit_hook(self, path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            starts = self._open.get(path)
            if not starts:
                return
            start, end = starts.pop(), self._now()
            outermost = not starts  # a recursive call is inside its outer call's time
            if self._cuda:
                self._pending.append((path, start, end, outermost))
            else:
                self._record(path, (end - start) / 1e9, outermost)
        return hook

    def _record(self, path: str, seconds: float, outermost: bool) -> None:
        self.last_call_seconds[path] = seconds
        if outermost:
            self.total_seconds[path] = self.total_seconds.get(path, 0.0) + seconds

    def end_forward(self) -> None:
        self._remove_hooks()
        if self._pending:
            torch.cuda.synchronize()
            for path, start, end, outermost in self._pending:
                self._record(path, start.elapsed_time(end) / 1e3, outermost)  # ms to s
            self._pending = []

    def close(self) -> None:
        self._remove_hooks()

    def _remove_hooks(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
