"""SwiftNet's spatial pyramid pooling over the deepest encoder feature."""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .blocks import BNReluConv

__all__ = ["SpatialPyramidPooling", "upsample"]

#: the BatchNorm momentum of the official SPP.
SPP_BN_MOMENTUM = 0.01 / 2


def upsample(x: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
    """Bilinear resize to ``size`` without corner alignment, as every SwiftNet upsampling."""
    return F.interpolate(x, size=tuple(size), mode="bilinear", align_corners=False)


class SpatialPyramidPooling(nn.Module):
    """Bottleneck, pooled levels on coarse grids, then a fuse of the bottleneck and the levels.

    The module ``spp`` (a sequence ``spp_bn``, ``spp0``.., ``spp_fuse`` of
    :class:`~.blocks.BNReluConv` 1×1 units) keeps the official parameter names. Each level
    averages the bottleneck output onto a grid of ``g`` rows and ``round(g × W / H)`` columns
    (at least one), applies its unit and is upsampled back; the fuse takes the concatenation.

    Args:
        in_channels: channels of the pooled feature.
        bottleneck_channels: output channels of ``spp_bn`` (the official ``bt_size``).
        level_channels: output channels of each level (the official ``level_size``).
        out_channels: output channels of ``spp_fuse``.
        grids: the levels' row counts, one level each.
        batch_norm, bias: as in :class:`~.blocks.BNReluConv`.
    """

    def __init__(self, in_channels: int, bottleneck_channels: int, level_channels: int,
                 out_channels: int, grids: Sequence[int] = (8, 4, 2), *,
                 batch_norm: bool = True, bias: bool = False) -> None:
        super().__init__()
        self.grids = tuple(int(g) for g in grids)
        unit = dict(kernel_size=1, batch_norm=batch_norm, bias=bias,
                    bn_momentum=SPP_BN_MOMENTUM)
        self.spp = nn.Sequential()
        self.spp.add_module("spp_bn", BNReluConv(in_channels, bottleneck_channels, **unit))
        for index in range(len(self.grids)):
            self.spp.add_module(f"spp{index}",
                                BNReluConv(bottleneck_channels, level_channels, **unit))
        fused = bottleneck_channels + len(self.grids) * level_channels
        self.spp.add_module("spp_fuse", BNReluConv(fused, out_channels, **unit))

    def grid_sizes(self, height: int, width: int) -> list[tuple[int, int]]:
        """The ``(rows, columns)`` of each level for a ``height × width`` feature."""
        aspect = width / height
        return [(g, max(1, round(aspect * g))) for g in self.grids]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[-2:]
        x = self.spp.spp_bn(x)
        levels = [x]
        for index, grid in enumerate(self.grid_sizes(size[0], size[1])):
            level = self.spp[index + 1](F.adaptive_avg_pool2d(x, grid))
            levels.append(upsample(level, size))
        return self.spp.spp_fuse(torch.cat(levels, dim=1))
