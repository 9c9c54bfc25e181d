"""TridentNet's multi-scale conv: one 3×3 kernel applied at several strides.

The refinement model uses it to turn the encoder's 1/4 feature into a 1/4 and a 1/8 feature
that share their weights (parameter ``backbone.trident_conv.weight``, no bias).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["MultiScaleTridentConv"]


class MultiScaleTridentConv(nn.Module):
    """A shared ``kernel_size`` convolution applied to one input per stride.

    Args:
        channels: input and output channels.
        strides: one stride per branch, highest resolution first.
    """

    def __init__(self, channels: int, strides: Sequence[int], kernel_size: int = 3) -> None:
        super().__init__()
        self.strides = tuple(strides)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(torch.empty(channels, channels, kernel_size, kernel_size))
        nn.init.kaiming_uniform_(self.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        """``x`` at every stride, highest resolution first."""
        return [F.conv2d(x, self.weight, None, stride, self.padding) for stride in self.strides]
