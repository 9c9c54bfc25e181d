"""Formulas of elementwise operators, reductions, softmax and normalisation.

Conventions (FLOPs; none of these operators has MACs):

- elementwise arithmetic, comparisons and activation functions: one FLOP per output element,
  transcendental functions included (``exp``, ``sigmoid``, ``gelu`` count 1 like ``add``);
  fused forms count their parts (``addcmul``: 3, ``lerp``: 3, ``add`` with ``alpha``: 2).
  Operators on integer or boolean tensors only do no floating-point work and count 0.
- reductions: one FLOP per input element (``sum``, ``amax``, ``argmax``, ``cumsum``);
  ``mean`` adds one per output (the division), ``var``/``std`` count 3 per input element.
- sorting and selection: ``n * ceil(log2 m)`` comparisons for ``n`` elements sorted in slices
  of ``m`` (``sort``, ``unique``), ``n * ceil(log2 k)`` for ``topk``, and ``ceil(log2 m)`` per
  value for a binary search (``searchsorted``, ``bucketize``); integers count 0.
- softmax and log-softmax: 5 per element (max, subtract, exp, sum, divide).
- normalisation: computing mean and variance costs 4 per element, normalising with them 2
  (subtract, multiply by the inverse deviation), the affine transform 1 per element for each
  of weight and bias. So batch norm in eval mode costs 4 per element with affine parameters
  (torchstat's count), layer and group norm 8.
"""

from __future__ import annotations

from math import ceil, log2

import torch

from .registry import OpCost, is_float, numel, register_formula, tensor_bytes, tensors_in, variants

aten = torch.ops.aten

__all__ = ["elementwise", "SOFTMAX_FLOPS_PER_ELEMENT", "STATISTICS_FLOPS_PER_ELEMENT",
           "NORMALISE_FLOPS_PER_ELEMENT"]

SOFTMAX_FLOPS_PER_ELEMENT = 5
STATISTICS_FLOPS_PER_ELEMENT = 4
NORMALISE_FLOPS_PER_ELEMENT = 2


def elementwise(flops_per_element: int):
    """A formula: ``flops_per_element`` FLOPs per output element when the inputs are floats."""

    def formula(args, kwargs, out):
        if not is_float(args, kwargs):
            return OpCost()
        return OpCost(flops=flops_per_element * numel(out))

    return formula


_UNARY_AND_BINARY = (
    "sub", "rsub", "mul", "div", "neg", "abs", "sign", "sgn", "reciprocal", "sqrt", "rsqrt",
    "square", "pow", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
    "erf", "erfc", "erfinv", "sigmoid", "logit", "floor", "ceil", "round", "trunc", "frac",
    "remainder", "fmod", "floor_divide", "hypot", "copysign", "nan_to_num", "xlogy",
    "relu", "relu6", "leaky_relu", "hardtanh", "elu", "celu", "selu", "gelu", "silu", "mish",
    "hardswish", "hardsigmoid", "softplus", "softshrink", "hardshrink", "threshold",
    "_prelu_kernel", "prelu", "glu", "log_sigmoid_forward", "clamp", "clamp_min", "clamp_max",
    "clip", "minimum", "maximum", "fmin", "fmax", "eq", "ne", "lt", "le", "gt", "ge",
    "isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit", "heaviside",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_and", "logical_or",
    "logical_xor", "logical_not", "sigmoid_backward",
)

register_formula(variants(aten, *_UNARY_AND_BINARY))(elementwise(1))
register_formula(variants(aten, "addcmul", "addcdiv", "lerp"))(elementwise(3))


@register_formula(variants(aten, "add"))
def _add(args, kwargs, out):
    if not is_float(args, kwargs):
        return OpCost()
    scaled = kwargs.get("alpha", 1) != 1
    return OpCost(flops=(2 if scaled else 1) * numel(out))


@register_formula(aten.native_dropout)
def _dropout(args, kwargs, out):
    # A training-mode dropout draws, compares and scales; in eval mode it never dispatches.
    return OpCost(flops=2 * numel(out)) if kwargs.get("train", args[2] if len(args) > 2
                                                      else True) else OpCost()


def _reduction(flops_per_input: int, flops_per_output: int = 0):
    def formula(args, kwargs, out):
        if not is_float(args[0]):
            return OpCost()
        return OpCost(flops=flops_per_input * args[0].numel() + flops_per_output * numel(out))

    return formula


register_formula([aten.sum, aten.nansum, aten.prod, aten.amax, aten.amin, aten.max, aten.min,
                  aten.argmax, aten.argmin, aten.aminmax, aten.cumsum, aten.cumsum_,
                  aten.cumprod, aten.cummax, aten.cummin, aten.any, aten.all,
                  aten.count_nonzero, aten.median, aten.nanmedian, aten.mode])(_reduction(1))
register_formula([aten.mean, aten.nanmean])(_reduction(1, 1))
register_formula([aten.linalg_vector_norm, aten.norm])(_reduction(2, 1))
register_formula([aten.var, aten.var_mean])(_reduction(3, 1))
register_formula([aten.std, aten.std_mean])(_reduction(3, 2))
register_formula(aten.logsumexp)(_reduction(4, 2))


def _dim_argument(args, kwargs, position: int) -> int:
    value = kwargs.get("dim", args[position] if len(args) > position else -1)
    return -1 if isinstance(value, bool) or value is None else value


def _comparisons(elements: int, candidates: int) -> int:
    return elements * max(1, ceil(log2(max(candidates, 2))))


@register_formula([aten.sort, aten.kthvalue])
def _sort(args, kwargs, out):
    x = args[0]
    if x.dim() == 0 or not is_float(x):
        return OpCost()
    return OpCost(flops=_comparisons(x.numel(), x.shape[_dim_argument(args, kwargs, 1)]))


@register_formula([aten._unique2, aten.unique_dim])
def _unique(args, kwargs, out):
    x = args[0]  # sorting the input dominates
    return OpCost(flops=_comparisons(x.numel(), x.numel()) if is_float(x) else 0)


@register_formula(aten.unique_consecutive)
def _unique_consecutive(args, kwargs, out):
    return OpCost(flops=args[0].numel() if is_float(args[0]) else 0)


@register_formula(aten.topk)
def _topk(args, kwargs, out):
    x, k = args[0], args[1]
    return OpCost(flops=_comparisons(x.numel(), k) if is_float(x) else 0)


def _binary_search(sequence_position: int):
    def formula(args, kwargs, out):
        return OpCost(flops=_comparisons(numel(out), args[sequence_position].shape[-1]))

    return formula


register_formula(aten.searchsorted)(_binary_search(0))
register_formula(aten.bucketize)(_binary_search(1))


@register_formula([aten._softmax, aten._log_softmax, aten._safe_softmax])
def _softmax(args, kwargs, out):
    return OpCost(flops=SOFTMAX_FLOPS_PER_ELEMENT * args[0].numel())


def _norm_cost(x: torch.Tensor, weight, bias, training: bool, out) -> OpCost:
    # Only the normalised output counts as written: the saved statistics are for the backward
    # pass, and devices differ in whether they fill them in eval mode.
    per_element = NORMALISE_FLOPS_PER_ELEMENT
    per_element += STATISTICS_FLOPS_PER_ELEMENT if training else 0
    per_element += sum(isinstance(p, torch.Tensor) for p in (weight, bias))
    return OpCost(flops=per_element * x.numel(), bytes_written=tensor_bytes(tensors_in(out)[0]))


@register_formula([aten.native_batch_norm, aten._native_batch_norm_legit,
                   aten._native_batch_norm_legit_functional, aten.cudnn_batch_norm,
                   aten.miopen_batch_norm])
def _batch_norm(args, kwargs, out):
    # (input, weight, bias, running_mean, running_var, training, ...); _legit without running
    # statistics puts `training` at index 3.
    training = next(a for a in args[3:] if isinstance(a, bool))
    return _norm_cost(args[0], args[1], args[2], training, out)


@register_formula(aten._native_batch_norm_legit_no_training)
def _batch_norm_eval(args, kwargs, out):
    return _norm_cost(args[0], args[1], args[2], False, out)


@register_formula(aten._batch_norm_with_update)
def _batch_norm_update(args, kwargs, out):
    return _norm_cost(args[0], args[1], args[2], True, out)


@register_formula(aten._batch_norm_no_update)
def _batch_norm_no_update(args, kwargs, out):
    return _norm_cost(args[0], args[1], args[2], False, out)


@register_formula([aten.native_layer_norm, aten.native_group_norm])
def _layer_or_group_norm(args, kwargs, out):
    if isinstance(args[1], torch.Tensor) or args[1] is None:   # group norm: (x, w, b, N, C, ...)
        weight, bias = args[1], args[2]
    else:                                                      # layer norm: (x, shape, w, b, eps)
        weight, bias = args[2], args[3]
    return _norm_cost(args[0], weight, bias, True, out)


if hasattr(aten, "_fused_rms_norm"):
    @register_formula(aten._fused_rms_norm)
    def _rms_norm(args, kwargs, out):
        # Mean of squares (2 per element), scaling by its inverse root (1), weight (1).
        x, weight = args[0], args[2] if len(args) > 2 else None
        return OpCost(flops=(3 + isinstance(weight, torch.Tensor)) * x.numel(),
                      bytes_written=tensor_bytes(tensors_in(out)[0]))
