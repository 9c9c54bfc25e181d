"""Pixel grids, bilinear sampling and flow warping."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...precision import as_float32

__all__ = ["coords_grid", "window_grid", "normalize_coords", "flow_warp"]


def coords_grid(batch: int, height: int, width: int, *, device: torch.device | str = "cpu",
                dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Pixel coordinates ``[B, 2, H, W]``, channel 0 is x (column), channel 1 is y (row)."""
    ys, xs = torch.meshgrid(torch.arange(height, device=device, dtype=dtype),
                            torch.arange(width, device=device, dtype=dtype), indexing="ij")
    return torch.stack((xs, ys))[None].expand(batch, 2, height, width)


def window_grid(radius: int, *, device: torch.device | str = "cpu",
                dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Offsets ``[(2R+1)^2, 2]`` (x, y) of a ``(2R+1)²`` window around a pixel, row-major."""
    offsets = torch.linspace(-radius, radius, 2 * radius + 1, device=device, dtype=dtype)
    ys, xs = torch.meshgrid(offsets, offsets, indexing="ij")
    return torch.stack((xs, ys), dim=-1).reshape(-1, 2)


def normalize_coords(coords: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Pixel coordinates ``[..., 2]`` (x, y) to ``grid_sample``'s ``[-1, 1]`` (corners aligned)."""
    center = torch.tensor([(width - 1) / 2.0, (height - 1) / 2.0], device=coords.device,
                          dtype=coords.dtype)
    return (coords - center) / center


def flow_warp(feature: torch.Tensor, flow: torch.Tensor) -> torch.Tensor:
    """Sample ``feature`` ``[B, C, H, W]`` at each pixel displaced by ``flow`` ``[B, 2, H, W]``
    (bilinear, zeros outside the map).

    The grid is built in the flow's type and the sampling runs in float32 when the feature is
    in half precision (a bfloat16 grid in [-1, 1] places a sample to 1/256 of the map); the
    warped feature comes back in the feature's type."""
    b, _, h, w = feature.shape
    coords = coords_grid(b, h, w, device=flow.device, dtype=flow.dtype) + flow
    # 2x/(W-1) - 1 rather than normalize_coords: the official warp's rounding
    grid = torch.stack((2 * coords[:, 0] / (w - 1) - 1, 2 * coords[:, 1] / (h - 1) - 1), dim=-1)
    warped = F.grid_sample(as_float32(feature), as_float32(grid), mode="bilinear",
                           padding_mode="zeros", align_corners=True)
    return warped.to(feature.dtype)
