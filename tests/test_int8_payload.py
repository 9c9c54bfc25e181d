"""The int8 payload of a stage call: one byte per element for the values the runtime passes
quantised (profiling.runtimes.int8_payload)."""

from __future__ import annotations

import torch

from profiling.runtimes.int8_payload import quantised_payload
from profiling.stages import PayloadGroup, TensorLeaf


def test_a_quantised_value_in_another_layout_is_still_one_byte_per_element():
    """Before: matched by shape only, a quantised boundary that the ONNX graph carries as
    [1, 64, 8, 8] while PyTorch's stage returns it as [1, 64, 64] read 4 bytes per element
    (16384 bytes) where the runtime passes 4096."""
    tokens = TensorLeaf((1, 64, 64), torch.float32, "cpu", 4 * 4096)
    scale = TensorLeaf((1, 64), torch.float32, "cpu", 4 * 64)
    tree = PayloadGroup("tuple", ((0, tokens), (1, scale)), 4 * 4096 + 4 * 64)
    result = quantised_payload(tree, [(1, 64, 8, 8)])
    assert result.nbytes == 4096 + 4 * 64
    assert [leaf.dtype for _, leaf in result.items] == [torch.int8, torch.float32]


def test_an_exact_shape_is_matched_before_an_equal_element_count():
    first = TensorLeaf((1, 4, 2), torch.float32, "cpu", 32)
    second = TensorLeaf((1, 2, 4), torch.float32, "cpu", 32)
    tree = PayloadGroup("list", ((0, first), (1, second)), 64)
    result = quantised_payload(tree, [(1, 2, 4)])
    assert [leaf.dtype for _, leaf in result.items] == [torch.float32, torch.int8]
    assert result.nbytes == 32 + 8
    both = quantised_payload(tree, [(1, 2, 4), (8,)])
    assert both.nbytes == 16
