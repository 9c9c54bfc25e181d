"""Flow from feature matching: global and local correlation, softmax, expected position.

The flow at a pixel of image 0 is the softmax-weighted mean position of the pixels of image 1
it matches, minus its own position. With the correlation as attention scores and the pixel
grid as the values, this is attention, so it runs through :func:`~.attention.attend`; the fused
kernel then never materialises the ``[B, H*W, H*W]`` correlation volume.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...precision import as_float32, float32_part
from .attention import attend
from .geometry import coords_grid, normalize_coords, window_grid

__all__ = ["global_correlation_softmax", "local_correlation_softmax", "FLOAT32_MATCHING"]

#: Why matching runs in float32 in a half-precision run: the values of its attention are pixel
#: coordinates, and the flow is their softmax-weighted mean minus the pixel's own coordinate.
#: In bfloat16 (8 significant bits) a coordinate of 100 is known to 0.5 px, which is the size
#: of the flows being measured; the correlation, its softmax statistics and the coordinate
#: grids are float32, and so is the flow they give.
FLOAT32_MATCHING = ("features cast to float32: correlation, softmax statistics, coordinate "
                    "grid and the flow (a bfloat16 coordinate of 100 px is known to 0.5 px)")


@float32_part
def global_correlation_softmax(feature0: torch.Tensor, feature1: torch.Tensor, *,
                               pred_bidir_flow: bool = False, impl: str = "sdpa"
                               ) -> torch.Tensor:
    """Flow ``[B, 2, H, W]`` from matching every pixel of ``feature0`` against all of
    ``feature1`` (both ``[B, C, H, W]``).

    With ``pred_bidir_flow``, the backward flow (``feature1`` matched against ``feature0``,
    the transposed correlation) is concatenated after the forward one: ``[2B, 2, H, W]``.
    Half-precision features are matched in float32 (:data:`FLOAT32_MATCHING`).
    """
    feature0, feature1 = as_float32(feature0), as_float32(feature1)
    b, c, h, w = feature0.shape
    tokens0 = feature0.flatten(2).transpose(1, 2)  # [B, H*W, C]
    tokens1 = feature1.flatten(2).transpose(1, 2)
    if pred_bidir_flow:
        tokens0, tokens1 = torch.cat((tokens0, tokens1)), torch.cat((tokens1, tokens0))
        b *= 2
    init_grid = coords_grid(b, h, w, device=feature0.device, dtype=feature0.dtype)
    positions = init_grid.flatten(2).transpose(1, 2)  # [B, H*W, 2]
    correspondence = attend(tokens0, tokens1, positions, impl=impl)
    return correspondence.transpose(1, 2).view(b, 2, h, w) - init_grid


@float32_part
def local_correlation_softmax(feature0: torch.Tensor, feature1: torch.Tensor, radius: int
                              ) -> torch.Tensor:
    """Flow ``[B, 2, H, W]`` from matching each pixel of ``feature0`` against the
    ``(2R+1)²`` pixels of ``feature1`` around the same position; positions outside the image
    take no part in the softmax.

    One query against a few dozen keys per pixel: plain math, which a fused kernel does not
    beat (its per-query overhead makes it slower on the CPU). Half-precision features are
    matched in float32 (:data:`FLOAT32_MATCHING`).
    """
    feature0, feature1 = as_float32(feature0), as_float32(feature1)
    b, c, h, w = feature0.shape
    init_grid = coords_grid(b, h, w, device=feature0.device, dtype=feature0.dtype)
    positions = init_grid.flatten(2).transpose(1, 2)  # [B, H*W, 2]
    candidates = positions[:, :, None, :] + window_grid(radius, device=feature0.device,
                                                           dtype=feature0.dtype)
    inside = ((candidates[..., 0] >= 0) & (candidates[..., 0] < w)
              & (candidates[..., 1] >= 0) & (candidates[..., 1] < h))  # [B, H*W, (2R+1)^2]
    window_features = F.grid_sample(feature1, normalize_coords(candidates, h, w),
                                    padding_mode="zeros", align_corners=True)  # [B, C, H*W, K]
    query = feature0.flatten(2).transpose(1, 2)[:, :, None, :]  # [B, H*W, 1, C]
    key = window_features.permute(0, 2, 3, 1)  # [B, H*W, (2R+1)^2, C]
    correspondence = attend(query, key, candidates, mask=inside[:, :, None, :],
                            impl="math")  # [B, H*W, 1, 2]
    return correspondence.squeeze(2).transpose(1, 2).reshape(b, 2, h, w) - init_grid
