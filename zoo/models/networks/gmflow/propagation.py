"""Flow propagation by feature self-attention, and convex upsampling."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ...precision import as_float32, autocast_off
from .attention import attend

__all__ = ["FeatureFlowAttention", "ConvexUpsampler"]


class FeatureFlowAttention(nn.Module):
    """Propagate flow with self-attention on image 0's features: query and key are projections
    of the feature, the value is the flow. Global by default; with a radius, each pixel attends
    to its ``(2R+1)²`` neighbourhood (zero-padded at the border).

    As in the official code, the key is ``k_proj(q_proj(feature))``; two linear maps compose to
    one, so this changes nothing but keeps the official checkpoints usable.
    """

    def __init__(self, in_channels: int, attention_impl: str = "sdpa") -> None:
        super().__init__()
        self.attention_impl = attention_impl
        self.q_proj = nn.Linear(in_channels, in_channels)
        self.k_proj = nn.Linear(in_channels, in_channels)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, feature0: torch.Tensor, flow: torch.Tensor, radius: int = -1
                ) -> torch.Tensor:
        """``feature0`` ``[B, C, H, W]``, ``flow`` ``[B, 2, H, W]``; ``radius`` <= 0 is global."""
        if radius > 0:
            return self._local(feature0, flow, radius)
        b, c, h, w = feature0.shape
        query = self.q_proj(feature0.flatten(2).transpose(1, 2))  # [B, H*W, C]
        key = self.k_proj(query)
        value = flow.flatten(2).transpose(1, 2)  # [B, H*W, 2]
        # the values are flows, float32 in a half-precision run: the attention runs in float32
        with autocast_off(flow):
            out = attend(as_float32(query), as_float32(key), value, impl=self.attention_impl)
        return out.transpose(1, 2).reshape(b, flow.shape[1], h, w)

    def _local(self, feature0: torch.Tensor, flow: torch.Tensor, radius: int) -> torch.Tensor:
        b, c, h, w = feature0.shape
        size = 2 * radius + 1
        tokens = feature0.flatten(2).transpose(1, 2)  # [B, H*W, C]
        query = self.q_proj(tokens)[:, :, None, :]  # [B, H*W, 1, C]
        key_map = self.k_proj(tokens).transpose(1, 2).reshape(b, c, h, w)

        def neighbourhoods(x: torch.Tensor) -> torch.Tensor:
            """``[B, D, H, W]`` -> ``[B, H*W, (2R+1)^2, D]``, zero outside the map."""
            windows = F.unfold(x, size, padding=radius).view(b, x.shape[1], size * size, h * w)
            return windows.permute(0, 3, 2, 1)

        # one query per pixel against (2R+1)² keys: plain math (see local_correlation_softmax)
        query, key_map = as_float32(query), as_float32(key_map)
        with autocast_off(flow):
            out = attend(query, neighbourhoods(key_map), neighbourhoods(flow),
                         impl="math")  # [B, H*W, 1, 2]
        return out.squeeze(2).transpose(1, 2).reshape(b, 2, h, w)


class ConvexUpsampler(nn.Sequential):
    """Convex upsampling by ``factor``: a small conv head predicts, for every output pixel, the
    softmax weights of the 3×3 coarse neighbours it interpolates (RAFT's upsampler).

    The convs are the ``nn.Sequential`` children 0 and 2, as the official ``upsampler``.
    """

    def __init__(self, feature_channels: int, factor: int) -> None:
        super().__init__(nn.Conv2d(2 + feature_channels, 256, 3, padding=1),
                         nn.ReLU(inplace=True),
                         nn.Conv2d(256, factor * factor * 9, 1))
        self.factor = factor

    def forward(self, flow: torch.Tensor, feature: torch.Tensor) -> torch.Tensor:
        """``flow`` ``[B, 2, H, W]`` and ``feature`` ``[B, C, H, W]`` -> ``[B, 2, kH, kW]``."""
        b, channels, h, w = flow.shape
        k = self.factor
        mask = super().forward(torch.cat((flow.to(feature.dtype), feature), dim=1))
        # the weights of a float32 flow are computed in float32 (a half-precision run keeps
        # flows in float32); in a float32 run nothing changes
        mask = torch.softmax(mask.view(b, 1, 9, k, k, h, w).to(flow.dtype), dim=2)
        neighbours = F.unfold(k * flow, 3, padding=1).view(b, channels, 9, 1, 1, h, w)
        up = torch.sum(mask * neighbours, dim=2)  # [B, 2, K, K, H, W]
        return up.permute(0, 1, 4, 2, 5, 3).reshape(b, channels, k * h, k * w)
