"""The payload of a stage call as an int8 runtime passes it: one byte per element for every
tensor whose value the quantiser quantised, the float32 bytes for the others."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from ..stages.payload import PayloadGroup, PayloadNode, TensorLeaf
from .graph import Boundary

__all__ = ["quantised_payload", "quantised_shapes"]


def quantised_shapes(boundaries: Sequence[Boundary], is_quantised: Callable[[str], bool]
                     ) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """The shapes of the boundary values that cross quantised, and of those that do not."""
    quantised = [b.shape for b in boundaries if b.shape is not None and is_quantised(b.value)]
    plain = [b.shape for b in boundaries if b.shape is not None and not is_quantised(b.value)]
    return quantised, plain


def quantised_payload(node: Optional[PayloadNode], quantised: list[tuple[int, ...]]
                      ) -> Optional[PayloadNode]:
    """``node`` with each floating leaf whose shape is among ``quantised`` (each used once)
    turned into an int8 leaf of one byte per element."""
    if node is None:
        return None
    if isinstance(node, TensorLeaf):
        if node.dtype.is_floating_point and node.shape in quantised:
            quantised.remove(node.shape)
            return TensorLeaf(node.shape, torch.int8, node.device, node.numel)
        return node
    items = tuple((key, quantised_payload(child, quantised)) for key, child in node.items)
    return PayloadGroup(node.kind, items, sum(child.nbytes for _, child in items))
