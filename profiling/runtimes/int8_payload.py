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


def _floating_leaves(node: Optional[PayloadNode]) -> list[TensorLeaf]:
    if isinstance(node, TensorLeaf):
        return [node] if node.dtype.is_floating_point else []
    if node is None:
        return []
    return [leaf for _, child in node.items for leaf in _floating_leaves(child)]


def _matched(leaves: Sequence[TensorLeaf], quantised: list[tuple[int, ...]]) -> set[int]:
    """The positions of ``leaves`` that are quantised values: a value of the same shape
    first, else one of as many elements (the runtime graph carries the tensor in another
    layout: the exporter moved a reshape or transpose across the boundary); each value once."""
    left = list(quantised)
    chosen: set[int] = set()
    for same in (lambda leaf, shape: leaf.shape == shape,
                 lambda leaf, shape: leaf.numel == _numel(shape)):
        for position, leaf in enumerate(leaves):
            match = next((shape for shape in left if position not in chosen and
                          same(leaf, shape)), None)
            if match is not None:
                left.remove(match)
                chosen.add(position)
    return chosen


def _numel(shape: tuple[int, ...]) -> int:
    count = 1
    for size in shape:
        count *= size
    return count


def quantised_payload(node: Optional[PayloadNode], quantised: list[tuple[int, ...]]
                      ) -> Optional[PayloadNode]:
    """``node`` with each floating leaf that is one of the ``quantised`` boundary values
    (by shape, else by element count: :func:`_matched`) turned into an int8 leaf of one byte
    per element."""
    chosen = _matched(_floating_leaves(node), quantised)
    position = iter(range(1 << 62))

    def rewrite(child: Optional[PayloadNode]) -> Optional[PayloadNode]:
        if child is None:
            return None
        if isinstance(child, TensorLeaf):
            if child.dtype.is_floating_point and next(position) in chosen:
                return TensorLeaf(child.shape, torch.int8, child.device, child.numel)
            return child
        items = tuple((key, rewrite(grandchild)) for key, grandchild in child.items)
        return PayloadGroup(child.kind, items, sum(c.nbytes for _, c in items))

    return rewrite(node)


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
