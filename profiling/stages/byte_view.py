"""Bytes per element of a tensor, as deployed: its own dtype's, or the analytical int8 view.

Under :func:`int8_view` (``device=meta run.dtype=int8``: seed 002's memory-access formula, one
byte per element) every floating tensor counts one byte per element, weights and activations
alike, except the model's biases, which an int8 runtime keeps as int32 (four bytes). The
counting formulas (bytes read and written), the payload and the split analysis all ask
:func:`element_bytes`, so the byte columns, ``payload.log`` and the cuts follow the view while
MACs and FLOPs stay as they are.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Optional

import torch

__all__ = ["element_bytes", "int8_view", "INT8_BIAS_BYTES"]

#: Bytes of a bias element in the int8 view (int32 accumulators).
INT8_BIAS_BYTES = 4
_BIASES: ContextVar[Optional[frozenset[int]]] = ContextVar("stagezoo_int8_view", default=None)


def element_bytes(tensor: torch.Tensor) -> int:
    """Bytes per element of ``tensor``: its ``element_size()``, or under :func:`int8_view`,
    1 for a floating tensor (4 for a bias of the model)."""
    biases = _BIASES.get()
    if biases is None or not tensor.is_floating_point():
        return tensor.element_size()
    return INT8_BIAS_BYTES if id(tensor) in biases else 1


@contextmanager
def int8_view(model: torch.nn.Module) -> Iterator[None]:
    """While the block runs, floating tensors count one byte per element and ``model``'s
    biases (parameters named ``bias``) four."""
    biases = frozenset(id(p) for name, p in model.named_parameters()
                       if name.rsplit(".", 1)[-1] == "bias")
    token = _BIASES.set(biases)
    try:
        yield
    finally:
        _BIASES.reset(token)
