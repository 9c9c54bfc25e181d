"""A TransUNet-style U-Net decoder that any encoder with multi-level features can take.

It follows TransUNet's ``DecoderCup``: a 3×3 ``conv_more`` lifts the deepest feature to
``head_channels``, then each block upsamples (bilinear, ×2 by default), concatenates the skip
feature of that resolution (when it has one) and applies two conv-BN-ReLU layers. Blocks past
``n_skip`` take no skip. The zoo's ``gmflow_unet`` and ``swin_unet`` both use this one module.
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import nn

from profiling import stage

from zoo.options import ConfigError, check_minimum

__all__ = ["ConvBNReLU", "DecoderBlock", "UNetDecoder"]


class ConvBNReLU(nn.Sequential):
    """Conv (no bias, as BatchNorm follows), BatchNorm, ReLU: TransUNet's ``Conv2dReLU``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3) -> None:
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2,
                      bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )


class DecoderBlock(nn.Module):
    """Upsample by ``scale_factor``, concatenate the skip (if any), then two conv-BN-ReLU."""

    def __init__(self, in_channels: int, out_channels: int, skip_channels: int = 0, *,
                 scale_factor: int = 2) -> None:
        super().__init__()
        self.scale_factor = scale_factor
        self.up = (nn.UpsamplingBilinear2d(scale_factor=scale_factor) if scale_factor != 1
                   else nn.Identity())
        self.conv1 = ConvBNReLU(in_channels + skip_channels, out_channels)
        self.conv2 = ConvBNReLU(out_channels, out_channels)

    def forward(self, x: torch.Tensor, skip: Optional[torch.Tensor] = None) -> torch.Tensor:
        x = self.up(x)
        if skip is not None:
            x = torch.cat([x, skip], dim=1)
        return self.conv2(self.conv1(x))


class UNetDecoder(nn.Module):
    """TransUNet's decoder cup, generalised to any encoder.

    Args:
        in_channels: channels of the deepest feature (TransUNet's ``hidden_size``).
        skip_channels: channels of the skip features, deepest first (one per block at most).
        decoder_channels: output channels of each block.
        n_skip: how many blocks take a skip (the first ``n_skip``).
        head_channels: output channels of ``conv_more``.
        scale_factors: each block's upsampling factor (default ×2 for every block).
        stage_prefix: prefix of the stage names, ``{prefix}block{i}`` from 1.
    """

    def __init__(self, in_channels: int, skip_channels: Sequence[int],
                 decoder_channels: Sequence[int] = (128, 96, 64, 16), *, n_skip: int = 3,
                 head_channels: int = 512, scale_factors: Optional[Sequence[int]] = None,
                 stage_prefix: str = "decoder_") -> None:
        super().__init__()
        check_minimum(1, decoder_channels=decoder_channels, head_channels=head_channels)
        decoder_channels = list(decoder_channels)
        most = min(len(skip_channels), len(decoder_channels))
        if not 0 <= n_skip <= most:
            raise ConfigError(f"n_skip={n_skip} is not accepted; accepted: 0 to {most} (one "
                              f"skip per decoder block, {len(skip_channels)} skip features)")
        scale_factors = list(scale_factors or [2] * len(decoder_channels))
        if len(scale_factors) != len(decoder_channels):
            raise ConfigError(f"{len(scale_factors)} scale factors for "
                              f"{len(decoder_channels)} decoder blocks; give one per block")
        self.n_skip = n_skip
        self.stage_prefix = stage_prefix
        self.conv_more = ConvBNReLU(in_channels, head_channels)
        block_inputs = [head_channels] + decoder_channels[:-1]
        skips = [skip_channels[i] if i < n_skip else 0 for i in range(len(decoder_channels))]
        self.blocks = nn.ModuleList(
            DecoderBlock(cin, cout, cskip, scale_factor=factor)
            for cin, cout, cskip, factor in zip(block_inputs, decoder_channels, skips,
                                                 scale_factors))
        self.out_channels = decoder_channels[-1]
        #: the decoder's stages in forward order: ``conv_more``, then one per block.
        self.stage_names = (f"{stage_prefix}conv_more",) + tuple(
            f"{stage_prefix}block{i + 1}" for i in range(len(self.blocks)))

    def forward(self, x: torch.Tensor, skips: Sequence[torch.Tensor]) -> torch.Tensor:
        """Decode ``x`` with ``skips`` (deepest first); returns the last block's output."""
        with stage(self.stage_names[0], x) as s:
            x = s.output(self.conv_more(x))
        for i, block in enumerate(self.blocks):
            skip = skips[i] if i < self.n_skip else None
            with stage(self.stage_names[i + 1], x, skip) as s:
                x = s.output(block(x, skip))
        return x
