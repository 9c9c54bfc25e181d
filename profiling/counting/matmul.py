"""Formulas of the multiply-accumulate operators: matrix products, convolution, attention.

MACs count one multiply-accumulate per product term, bias excluded (what fvcore and mmengine
call flops for these operators). FLOPs are 2 per MAC, plus one per output element for a bias
or an added input, plus what attention does besides its two products (scaling, softmax).
"""

from __future__ import annotations

from math import prod

import torch

from .elementwise import SOFTMAX_FLOPS_PER_ELEMENT
from .registry import OpCost, register_formula, tensor_bytes

aten = torch.ops.aten

__all__ = ["matmul_cost", "conv_macs", "attention_cost"]


def matmul_cost(batch: int, m: int, k: int, n: int, *, added: bool = False) -> OpCost:
    """The cost of ``batch`` products of an ``m x k`` by a ``k x n`` matrix.

    Args:
        added: an input of the output's size is added (``addmm``'s bias, ``baddbmm``'s self).
    """
    macs = batch * m * n * k
    outputs = batch * m * n
    return OpCost(macs=macs, flops=2 * macs + (outputs if added else 0), activations=outputs)


@register_formula(aten.mm)
def _mm(args, kwargs, out):
    a, b = args[0], args[1]
    return matmul_cost(1, a.shape[0], a.shape[1], b.shape[1])


@register_formula(aten.addmm)
def _addmm(args, kwargs, out):
    a, b = args[1], args[2]
    return matmul_cost(1, a.shape[0], a.shape[1], b.shape[1], added=True)


@register_formula(aten._addmm_activation)
def _addmm_activation(args, kwargs, out):
    a, b = args[1], args[2]
    cost = matmul_cost(1, a.shape[0], a.shape[1], b.shape[1], added=True)
    return cost._replace(flops=cost.flops + out.numel())


@register_formula(aten.bmm)
def _bmm(args, kwargs, out):
    a, b = args[0], args[1]
    return matmul_cost(a.shape[0], a.shape[1], a.shape[2], b.shape[2])


@register_formula(aten.baddbmm)
def _baddbmm(args, kwargs, out):
    a, b = args[1], args[2]
    return matmul_cost(a.shape[0], a.shape[1], a.shape[2], b.shape[2], added=True)


@register_formula([aten.dot, aten.vdot])
def _dot(args, kwargs, out):
    return matmul_cost(1, 1, args[0].shape[0], 1)


@register_formula(aten.mv)
def _mv(args, kwargs, out):
    a = args[0]
    return matmul_cost(1, a.shape[0], a.shape[1], 1)


@register_formula(aten.addmv)
def _addmv(args, kwargs, out):
    a = args[1]
    return matmul_cost(1, a.shape[0], a.shape[1], 1, added=True)


def conv_macs(x_shape, w_shape, out_shape, transposed: bool) -> int:
    """MACs of a (possibly grouped or transposed) convolution.

    The weight holds ``C_out x C_in/groups x k...`` (``C_in x C_out/groups x k...`` when
    transposed); every output position of every sample takes one MAC per weight element that
    reaches it, i.e. ``N * prod(spatial) * prod(weight shape)``, where ``spatial`` is the output
    size (the input size for a transposed convolution, which scatters each input position).
    """
    spatial = (x_shape if transposed else out_shape)[2:]
    return x_shape[0] * prod(spatial) * prod(w_shape)


def _conv_cost(x: torch.Tensor, w: torch.Tensor, bias, out: torch.Tensor, transposed: bool
               ) -> OpCost:
    macs = conv_macs(x.shape, w.shape, out.shape, transposed)
    bias_flops = out.numel() if isinstance(bias, torch.Tensor) else 0
    return OpCost(macs=macs, flops=2 * macs + bias_flops, activations=out.numel())


@register_formula([aten.convolution, aten._convolution, aten.convolution_overrideable])
def _convolution(args, kwargs, out):
    x, w, bias, transposed = args[0], args[1], args[2], bool(args[6])
    return _conv_cost(x, w, bias, out, transposed)


@register_formula([aten.cudnn_convolution, aten.mkldnn_convolution])
def _backend_convolution(args, kwargs, out):
    bias = args[2] if len(args) > 2 and isinstance(args[2], torch.Tensor) else None
    return _conv_cost(args[0], args[1], bias, out, False)


@register_formula(aten.cudnn_convolution_transpose)
def _backend_convolution_transpose(args, kwargs, out):
    return _conv_cost(args[0], args[1], None, out, True)


def attention_cost(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   mask: object = None) -> OpCost:
    """Scaled dot-product attention counted as one fused kernel (flash, memory-efficient).

    The counter runs attention unfused (see :mod:`~profiling.counting.counter`); this formula
    prices a fused kernel called directly.

    MACs: ``Q K^T`` (``B H Sq Sk D``) and ``P V`` (``B H Sq Sk Dv``). FLOPs: 2 per MAC, plus per
    score one for the scaling, one for an additive mask and the softmax's. Activations: the
    outputs of both products (scores and result), as for the same attention written as
    matmuls. Bytes: q, k, v (and the mask) read, the output written; the score matrix stays
    on chip, as in the flash and memory-efficient kernels.
    """
    batch = prod(query.shape[:-2])
    s_q, d = query.shape[-2], query.shape[-1]
    s_k, d_v = key.shape[-2], value.shape[-1]
    scores = batch * s_q * s_k
    macs = scores * (d + d_v)
    mask_flops = scores if isinstance(mask, torch.Tensor) else 0
    flops = 2 * macs + scores * (1 + SOFTMAX_FLOPS_PER_ELEMENT) + mask_flops
    outputs = batch * s_q * d_v
    read = sum(tensor_bytes(t) for t in (query, key, value, mask) if isinstance(t, torch.Tensor))
    return OpCost(macs=macs, flops=flops, activations=scores + outputs, bytes_read=read,
                  bytes_written=outputs * query.element_size())


@register_formula([aten._scaled_dot_product_flash_attention,
                   aten._scaled_dot_product_flash_attention_for_cpu,
                   aten._scaled_dot_product_efficient_attention,
                   aten._scaled_dot_product_cudnn_attention])
def _sdpa_kernel(args, kwargs, out):
    return attention_cost(args[0], args[1], args[2])
