"""SwiftNet's ladder-style decoder: lateral 1×1 on the skip, upsample and add, 3×3 blend."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from profiling import stage

from .blocks import BNReluConv
from .spp import upsample

__all__ = ["LadderUpsample", "LadderDecoder"]


class LadderUpsample(nn.Module):
    """One up block: ``skip_conv`` (1×1, the official ``bottleneck``) on the skip feature,
    bilinear upsampling of ``x`` to the skip's size, addition, then ``blend_conv`` (k×k).

    Args:
        channels: channels of ``x`` and of the output.
        skip_channels: channels of the skip feature.
        kernel_size: the blend convolution's kernel (the official ``k_up``).
        batch_norm, bias: as in :class:`~.blocks.BNReluConv`.
    """

    def __init__(self, channels: int, skip_channels: int, kernel_size: int = 3, *,
                 batch_norm: bool = True, bias: bool = False) -> None:
        super().__init__()
        self.skip_conv = BNReluConv(skip_channels, channels, 1, batch_norm=batch_norm,
                                    bias=bias)
        self.blend_conv = BNReluConv(channels, channels, kernel_size, batch_norm=batch_norm,
                                     bias=bias)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        skip = self.skip_conv(skip)
        return self.blend_conv(upsample(x, skip.shape[-2:]) + skip)


class LadderDecoder(nn.Module):
    """``up1``..``upN``: :class:`LadderUpsample` blocks from the deepest skip to the shallowest.

    Args:
        channels: the decoder's width (SwiftNet's ``num_features``).
        skip_channels: channels of the skip features, deepest first.
        kernel_size, batch_norm, bias: as in :class:`LadderUpsample`.
    """

    def __init__(self, channels: int, skip_channels: Sequence[int], kernel_size: int = 3, *,
                 batch_norm: bool = True, bias: bool = False) -> None:
        super().__init__()
        self.num_blocks = len(skip_channels)
        for index, skip in enumerate(skip_channels):
            self.add_module(f"up{index + 1}", LadderUpsample(
                channels, skip, kernel_size, batch_norm=batch_norm, bias=bias))

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The decoder's stages in forward order."""
        return tuple(f"up{i + 1}" for i in range(self.num_blocks))

    def forward(self, x: torch.Tensor, skips: Sequence[torch.Tensor]) -> torch.Tensor:
        """Decode ``x`` with ``skips`` (deepest first)."""
        for name, skip in zip(self.stage_names, skips):
            with stage(name, x, skip) as s:
                x = s.output(getattr(self, name)(x, skip))
        return x
