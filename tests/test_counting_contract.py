"""Every count formula that PyTorch's own flop counter also has agrees with it.

``torch.utils.flop_counter`` counts 2 FLOPs per multiply-accumulate of the matrix products,
convolutions and attention it knows, and nothing else (no bias, no softmax), so on each
operator the two registries share, its count is exactly twice our ``macs``. Each operator
runs on the meta device under both counters, with shapes where every dimension differs and
the convolutions grouped, strided and padded; the two that have no meta kernel
(``convolution_overrideable``, ``cudnn_convolution``) have their formulas called directly.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, flop_registry

from profiling.counting import count_ops, registered_ops
from profiling.counting.registry import formula_for

aten = torch.ops.aten


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(*shape, device="meta")


def _convolution(transposed: bool) -> tuple:
    weight = _meta(4, 3, 3, 5) if transposed else _meta(6, 2, 3, 5)
    return (_meta(2, 4, 9, 11), weight, _meta(6), [2, 1], [1, 2], [1, 1], transposed, [1, 0]
            if transposed else [0, 0], 2)


def _attention() -> tuple:
    return _meta(2, 3, 7, 8), _meta(2, 3, 5, 8), _meta(2, 3, 5, 8)


#: For each operator both registries count: ``(packet, arguments)`` on the meta device.
SAMPLES = {
    "aten.mm": (aten.mm, (_meta(3, 4), _meta(4, 5))),
    "aten.addmm": (aten.addmm, (_meta(5), _meta(3, 4), _meta(4, 5))),
    "aten.bmm": (aten.bmm, (_meta(2, 3, 4), _meta(2, 4, 5))),
    "aten.baddbmm": (aten.baddbmm, (_meta(2, 3, 5), _meta(2, 3, 4), _meta(2, 4, 5))),
    "aten.convolution": (aten.convolution, _convolution(False)),
    "aten.convolution (transposed)": (aten.convolution, _convolution(True)),
    "aten._convolution": (aten._convolution,
                          (*_convolution(False), False, False, True, True)),
    "aten.convolution_overrideable": (aten.convolution_overrideable, _convolution(False)),
    "aten.cudnn_convolution": (aten.cudnn_convolution,
                               (_meta(2, 4, 9, 11), _meta(6, 2, 3, 5), [1, 2], [2, 1],
                                [1, 1], 2, False, False, True)),
    "aten._scaled_dot_product_efficient_attention": (
        aten._scaled_dot_product_efficient_attention, (*_attention(), None, False)),
    "aten._scaled_dot_product_flash_attention": (
        aten._scaled_dot_product_flash_attention, _attention()),
    "aten._scaled_dot_product_cudnn_attention": (
        aten._scaled_dot_product_cudnn_attention, (*_attention(), None, False)),
}


class _Call(nn.Module):
    def __init__(self, op, arguments) -> None:
        super().__init__()
        self.op, self.arguments = op, arguments

    def forward(self):
        return self.op(*self.arguments)


#: Operators without a meta kernel: the output their formulas are given (the same
#: convolution as ``aten.convolution``'s sample, computed by the functional form).
WITHOUT_META_KERNEL = {
    "aten.convolution_overrideable": lambda: torch.nn.functional.conv2d(
        _meta(2, 4, 9, 11), _meta(6, 2, 3, 5), None, [2, 1], [1, 2], [1, 1], 2),
    "aten.cudnn_convolution": lambda: torch.nn.functional.conv2d(
        _meta(2, 4, 9, 11), _meta(6, 2, 3, 5), None, [2, 1], [1, 2], [1, 1], 2),
}


def test_every_shared_operator_has_a_sample():
    shared = {str(packet) for packet in flop_registry} & set(registered_ops())
    assert shared == {name.split(" ")[0] for name in SAMPLES}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_twice_our_macs_is_torchs_flop_count(name):
    op, arguments = SAMPLES[name]
    if name in WITHOUT_META_KERNEL:
        out = WITHOUT_META_KERNEL[name]()
        ours = formula_for(op)(arguments, {}, out)
        assert 2 * ours.macs == flop_registry[op](*arguments, out_val=out) > 0
        return
    module = _Call(op, arguments)
    with FlopCounterMode(display=False) as torch_counter:
        module()
    counting = count_ops(module)
    assert counting.uncounted == {}
    assert torch_counter.get_total_flops() > 0
    assert 2 * counting.total.macs == torch_counter.get_total_flops()
