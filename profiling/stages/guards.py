"""What keeps the passes of one profile from seeing each other: inputs and training state.

A profile runs the same forward several times (analysis, counting, warm-up, repeats). A model
that changes its input in place would see a different input in every pass, and a model in
training mode would update its BatchNorm statistics once per pass. :class:`InputGuard` gives
every pass the original input values back; :func:`check_mode` refuses a training-mode model
unless asked, and :class:`BufferGuard` then puts its buffers back after each untimed pass.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ..errors import ProfilingError
from .payload import iter_tensors

__all__ = ["InputGuard", "BufferGuard", "check_mode", "check_collectors_argument"]


def check_collectors_argument(collectors: Any) -> None:
    """Raise :class:`ProfilingError` unless ``collectors`` is a list or tuple (a string would
    otherwise be read letter by letter)."""
    if isinstance(collectors, (str, bytes)) or not isinstance(collectors, (list, tuple)):
        raise ProfilingError(f"collectors must be a list, e.g. ['payload', 'cpu_time'], got "
                             f"{collectors!r}")


def check_collector_devices(collectors: Sequence[Any], device_type: str) -> None:
    """Raise :class:`ProfilingError` for a collector that does not measure on ``device_type``
    (its ``devices``), such as a timer on the meta device, where nothing runs to be timed."""
    for collector in collectors:
        if device_type not in collector.devices:
            raise ProfilingError(
                f"collector '{collector.name}' does not measure on {device_type} (it measures on "
                f"{', '.join(collector.devices)}); leave it out of collectors")


def check_mode(model: Any, train: bool) -> None:
    """Raise :class:`ProfilingError` for a module in training mode unless ``train=True``."""
    if not isinstance(train, bool):
        raise ProfilingError(f"train must be True or False, got {train!r}")
    if train or not isinstance(model, torch.nn.Module):
        return
    training = next((name or type(model).__name__ for name, module in model.named_modules()
                     if module.training), None)
    if training is not None:
        raise ProfilingError(f"the model is in training mode ({training}): BatchNorm "
                             f"statistics and dropout would change with every pass; call "
                             f"model.eval(), or profile training-mode forwards with train=True")


def _snapshot(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [t.detach().clone() if t.device.type != "meta" else t for t in tensors]


class InputGuard:
    """Remembers the input tensors' values and puts them back after a pass that changed them.

    Changes are seen through each tensor's version counter, which every in-place operation
    bumps, so an unchanged input costs nothing but the one copy made at the start.
    """

    def __init__(self, inputs: Any) -> None:
        self.tensors = [t for t in iter_tensors(inputs) if not t.is_inference()]
        self.versions = [t._version for t in self.tensors]
        self.values = _snapshot(self.tensors)
        #: whether any pass changed an input in place
        self.mutated = False

    def restore(self) -> bool:
        """Give the inputs their original values back if the last pass changed them; return
        whether anything was copied."""
        copied = False
        for i, tensor in enumerate(self.tensors):
            if tensor._version != self.versions[i]:
                self.mutated = copied = True
                with torch.inference_mode(False), torch.no_grad():
                    tensor.copy_(self.values[i])
                self.versions[i] = tensor._version
        return copied


class BufferGuard:
    """Keeps a module's buffers (BatchNorm running statistics, ...) and restores them."""

    def __init__(self, model: Any) -> None:
        buffers = list(model.buffers()) if isinstance(model, torch.nn.Module) else []
        self.buffers = [b for b in buffers if not b.is_inference()]
        self.values = _snapshot(self.buffers)

    def restore(self) -> None:
        """Put every buffer back to its value at construction."""
        with torch.inference_mode(False), torch.no_grad():
            for buffer, value in zip(self.buffers, self.values):
                if buffer.device.type != "meta":
                    buffer.copy_(value)
