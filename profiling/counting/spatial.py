"""Formulas of spatial operators: pooling, interpolation, grid sampling, RoI Align, NMS.

Conventions (FLOPs; none has MACs):

- max pooling: ``K - 1`` comparisons per output element for a window of ``K`` elements;
  average pooling: ``K`` (``K - 1`` additions and a division). Adaptive pooling sums the
  exact window sizes along each axis.
- interpolation and sampling: the weighted sum of the ``P`` contributing input points,
  ``2P - 1`` per output element (nearest: 0, linear: 3, bilinear: 7, bicubic: 31,
  trilinear: 15); the interpolation weights are per row or column and not counted.
  ``grid_sample`` also unnormalises its sampling grid (2 FLOPs per coordinate).
- sampling operators read at most what they sample: ``grid_sample`` and ``roi_align`` count
  ``min(input bytes, samples x points x element size)`` as read, not the whole input.
- RoI Align: per output element, ``S`` samples of a bilinear interpolation (7) plus their
  accumulation (1), then one division; ``S`` is the sampling ratio squared, and 2 x 2 when the
  ratio is adaptive (``sampling_ratio <= 0``), which depends on the box sizes.
- NMS: 12 FLOPs per box pair for the IoU, over all ``N (N - 1) / 2`` pairs (an upper bound:
  suppressed boxes are skipped at run time).
"""

from __future__ import annotations

from math import ceil, floor, prod

import torch

from ..stages.byte_view import element_bytes
from .registry import OpCost, is_float, register_formula, tensor_bytes

aten = torch.ops.aten

__all__ = ["interpolation_points", "adaptive_window_total"]

INTERPOLATION_POINTS = {"nearest": 1, "linear": 2, "bilinear": 4, "bicubic": 16,
                        "trilinear": 8}
ADAPTIVE_SAMPLES = 4
IOU_FLOPS = 12


def interpolation_points(mode: str) -> int:
    """Input points that contribute to one output element in interpolation ``mode``."""
    return INTERPOLATION_POINTS[mode]


def _weighted_sum_flops(points: int) -> int:
    return 0 if points == 1 else 2 * points - 1


def _window(kernel, dims: int) -> int:
    kernel = list(kernel) if isinstance(kernel, (list, tuple)) else [kernel]
    return prod(kernel * dims if len(kernel) == 1 else kernel)


def _max_pool(args, kwargs, out):
    output = out[0] if isinstance(out, (tuple, list)) else out
    window = _window(args[1], output.dim() - 2)
    return OpCost(flops=(window - 1) * output.numel())


def _avg_pool(args, kwargs, out):
    return OpCost(flops=_window(args[1], out.dim() - 2) * out.numel())


register_formula([aten.max_pool1d, aten.max_pool2d, aten.max_pool3d,
                  aten.max_pool2d_with_indices, aten.max_pool3d_with_indices,
                  aten.mkldnn_max_pool2d])(_max_pool)
register_formula([aten.avg_pool1d, aten.avg_pool2d, aten.avg_pool3d])(_avg_pool)


def adaptive_window_total(in_size: int, out_size: int) -> int:
    """Sum over the outputs of an adaptive pooling axis of their window lengths."""
    return sum(ceil((i + 1) * in_size / out_size) - floor(i * in_size / out_size)
               for i in range(out_size))


def _adaptive_windows(x: torch.Tensor, output: torch.Tensor) -> int:
    spatial = output.dim() - 2
    channels = prod(output.shape[:2]) if output.dim() > spatial else 1
    return channels * prod(adaptive_window_total(i, o)
                           for i, o in zip(x.shape[-spatial:], output.shape[-spatial:]))


@register_formula([aten._adaptive_avg_pool2d, aten._adaptive_avg_pool3d,
                   aten.adaptive_avg_pool1d])
def _adaptive_avg(args, kwargs, out):
    return OpCost(flops=_adaptive_windows(args[0], out))


@register_formula([aten.adaptive_max_pool2d, aten.adaptive_max_pool3d,
                   aten.adaptive_max_pool1d])
def _adaptive_max(args, kwargs, out):
    output = out[0] if isinstance(out, (tuple, list)) else out
    return OpCost(flops=_adaptive_windows(args[0], output) - output.numel())


def _interpolation(mode: str):
    flops = _weighted_sum_flops(interpolation_points(mode))

    def formula(args, kwargs, out):
        return OpCost(flops=flops * out.numel() if is_float(args[0]) else 0)

    return formula


for _mode, _ops in {
    "nearest": [aten.upsample_nearest1d, aten.upsample_nearest2d, aten.upsample_nearest3d,
                aten._upsample_nearest_exact1d, aten._upsample_nearest_exact2d,
                aten._upsample_nearest_exact3d],
    "linear": [aten.upsample_linear1d],
    "bilinear": [aten.upsample_bilinear2d, aten._upsample_bilinear2d_aa],
    "bicubic": [aten.upsample_bicubic2d, aten._upsample_bicubic2d_aa],
    "trilinear": [aten.upsample_trilinear3d],
}.items():
    register_formula(_ops)(_interpolation(_mode))

_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}


def _sampled_read(source: torch.Tensor, samples: int, others) -> int:
    read = min(tensor_bytes(source), samples * element_bytes(source))
    return read + sum(tensor_bytes(t) for t in others)


@register_formula([aten.grid_sampler_2d, aten.grid_sampler_3d, aten.cudnn_grid_sampler])
def _grid_sample(args, kwargs, out):
    x, grid = args[0], args[1]
    spatial = grid.dim() - 2
    mode = _GRID_MODES[args[2]] if len(args) > 2 else "bilinear"
    if mode == "bilinear" and spatial == 3:
        mode = "trilinear"
    points = interpolation_points(mode)
    flops = _weighted_sum_flops(points) * out.numel() + 2 * grid.numel()
    return OpCost(flops=flops, bytes_read=_sampled_read(x, out.numel() * points, [grid]))


def _roi_align(args, kwargs, out):
    x, rois, ratio = args[0], args[1], args[5]
    samples = ratio * ratio if ratio > 0 else ADAPTIVE_SAMPLES
    flops = out.numel() * (samples * (_weighted_sum_flops(4) + 1) + 1)
    return OpCost(flops=flops, bytes_read=_sampled_read(x, out.numel() * samples * 4, [rois]))


def _nms(args, kwargs, out):
    boxes = args[0].shape[0]
    return OpCost(flops=IOU_FLOPS * boxes * (boxes - 1) // 2)


try:  # torchvision registers its operators when imported
    import torchvision  # noqa: F401
except ImportError:  # pragma: no cover
    pass
else:
    register_formula(torch.ops.torchvision.roi_align)(_roi_align)
    register_formula(torch.ops.torchvision.nms)(_nms)
