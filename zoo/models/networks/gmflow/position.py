"""DETR's sine position encoding, added per attention window as GMFlow does."""

from __future__ import annotations

import math

import torch

__all__ = ["sine_position_encoding", "add_position"]


def sine_position_encoding(height: int, width: int, channels: int, *,
                           temperature: float = 10000.0, device: torch.device | str = "cpu"
                           ) -> torch.Tensor:
    """The normalised sine position encoding of DETR, ``[channels, height, width]``.

    The first half of the channels encodes the row, the second half the column; within each
    half, sines and cosines of geometrically spaced frequencies alternate. Positions are
    normalised to ``(0, 2π]`` over the map, so a window of a given size always gets the same
    encoding.
    """
    num_feats = channels // 2
    eps = 1e-6
    y = torch.arange(1, height + 1, dtype=torch.float32, device=device)
    x = torch.arange(1, width + 1, dtype=torch.float32, device=device)
    y = y / (height + eps) * (2 * math.pi)
    x = x / (width + eps) * (2 * math.pi)
    dim_t = torch.arange(num_feats, dtype=torch.float32, device=device)
    dim_t = temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / num_feats)

    def encode(positions: torch.Tensor) -> torch.Tensor:
        angles = positions[:, None] / dim_t  # [N, F]
        return torch.stack((angles[:, 0::2].sin(), angles[:, 1::2].cos()), dim=2).flatten(1)

    pos_y = encode(y)[:, None, :].expand(height, width, num_feats)
    pos_x = encode(x)[None, :, :].expand(height, width, num_feats)
    return torch.cat((pos_y, pos_x), dim=2).permute(2, 0, 1)


def add_position(feature0: torch.Tensor, feature1: torch.Tensor, attn_splits: int
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Add the position encoding of one attention window to every window of both features.

    With ``attn_splits`` K > 1, the ``[B, C, H, W]`` maps are seen as K×K windows and each
    window gets the encoding of an ``H/K × W/K`` map, so attention inside a window sees the
    same positions wherever the window lies (the official ``feature_add_position``).
    """
    _, c, h, w = feature0.shape
    k = max(attn_splits, 1)
    position = sine_position_encoding(h // k, w // k, c, device=feature0.device)
    position = position.repeat(1, k, k).to(feature0.dtype)
    return feature0 + position, feature1 + position
