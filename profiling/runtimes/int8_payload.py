"""The payload of a stage call as an int8 runtime passes it: one byte per element for every
tensor whose value the quantiser quantised, the float32 bytes for the others."""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import torch

from ..stages.markers import StageCall
from ..stages.payload import PayloadGroup, PayloadNode, TensorLeaf
from .graph import Boundary, OnnxGraph

__all__ = ["quantised_payload", "quantised_shapes", "quantise_call_payloads"]


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


def quantise_call_payloads(calls: Sequence[StageCall], paths: Mapping[int, str],
                           node_stages: Mapping[str, str], graph: OnnxGraph,
                           quantised: set[str]) -> None:
    """Rewrite each stage call's payload with the int8 bytes of its quantised boundaries
    (``paths``: each call's stage path as ``node_stages`` names it)."""
    def is_quantised(value: str) -> bool:
        return value in quantised

    for call in calls:
        if call.kind != "stage" or call.index not in paths:
            continue
        incoming, outgoing = graph.boundaries(node_stages, paths[call.index])
        call.inputs = quantised_payload(call.inputs, quantised_shapes(incoming, is_quantised)[0])
        call.outputs = quantised_payload(call.outputs,
                                         quantised_shapes(outgoing, is_quantised)[0])
