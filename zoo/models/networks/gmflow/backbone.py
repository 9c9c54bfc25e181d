"""GMFlow's CNN encoder: a RAFT-style ResNet with instance normalisation."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from profiling import stage

from .trident_conv import MultiScaleTridentConv

__all__ = ["ResidualBlock", "CNNEncoder", "EncoderOutput"]


class ResidualBlock(nn.Module):
    """Two 3×3 conv-InstanceNorm-ReLU and a shortcut (a strided 1×1 conv and norm when the
    shape changes)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.relu = nn.ReLU(inplace=True)
        self.norm1 = nn.InstanceNorm2d(planes)
        self.norm2 = nn.InstanceNorm2d(planes)
        self.downsample = None
        if stride != 1 or in_planes != planes:
            self.norm3 = nn.InstanceNorm2d(planes)
            self.downsample = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=stride),
                                            self.norm3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.norm1(self.conv1(x)))
        y = self.relu(self.norm2(self.conv2(y)))
        if self.downsample is not None:
            x = self.downsample(x)
        if torch.is_grad_enabled():
            return self.relu(x + y)
        # without autograd, the sum goes into y, which nothing else holds: the same values
        # (x + y == y + x), one allocation of the block's output less (docs/models/gmflow.md)
        return self.relu(y.add_(x))


class EncoderOutput(NamedTuple):
    """What :class:`CNNEncoder` returns.

    Attributes:
        features: the output features, lowest resolution first (one per scale).
        skips: the outputs of ``layer3``, ``layer2``, ``layer1`` (deepest first), kept for a
            U-Net decoder.
    """

    features: list[torch.Tensor]
    skips: list[torch.Tensor]


class CNNEncoder(nn.Module):
    """``conv1`` (7×7, stride 2), three stages of two residual blocks (64, 96, 128 channels;
    ``layer2`` and ``layer3`` halve the resolution), a 1×1 ``conv2`` to ``output_dim``, and for
    several scales a trident conv. Stages: ``conv1``, ``layer1``, ``layer2``, ``layer3``,
    ``conv2``, ``trident_conv``.

    Args:
        output_dim: channels of the output features.
        num_output_scales: 1 gives one feature at the stride ``first_stride * 2 * layer3_stride``;
            n > 1 gives n features from a trident conv at strides 1, 2, ..., 2^(n-1) of that.
        in_channels: image channels.
        first_kernel_size, first_stride: of ``conv1`` (odd kernel, padding ``k // 2``).
        layer3_stride: 2 (1/8 features) or 1 (1/4 features, as the refinement model has).
    """

    feature_dims = (64, 96, 128)

    def __init__(self, output_dim: int = 128, num_output_scales: int = 1, *,
                 in_channels: int = 3, first_kernel_size: int = 7, first_stride: int = 2,
                 layer3_stride: int = 2) -> None:
        super().__init__()
        dims = self.feature_dims
        self.conv1 = nn.Conv2d(in_channels, dims[0], first_kernel_size, stride=first_stride,
                               padding=first_kernel_size // 2, bias=False)
        self.norm1 = nn.InstanceNorm2d(dims[0])
        self.relu1 = nn.ReLU(inplace=True)
        self.layer1 = self._make_layer(dims[0], dims[0], stride=1)
        self.layer2 = self._make_layer(dims[0], dims[1], stride=2)
        self.layer3 = self._make_layer(dims[1], dims[2], stride=layer3_stride)
        self.conv2 = nn.Conv2d(dims[2], output_dim, 1)
        self.trident_conv = None
        if num_output_scales > 1:
            self.trident_conv = MultiScaleTridentConv(
                output_dim, strides=[2 ** i for i in range(num_output_scales)])
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    @staticmethod
    def _make_layer(in_planes: int, planes: int, stride: int) -> nn.Sequential:
        return nn.Sequential(ResidualBlock(in_planes, planes, stride),
                             ResidualBlock(planes, planes, 1))

    def forward(self, x: torch.Tensor) -> EncoderOutput:
        with stage("conv1", x) as s:
            x = s.output(self.relu1(self.norm1(self.conv1(x))))
        skips = []
        for name in ("layer1", "layer2", "layer3"):
            with stage(name, x) as s:
                x = s.output(getattr(self, name)(x))
            skips.insert(0, x)
        with stage("conv2", x) as s:
            x = s.output(self.conv2(x))
        if self.trident_conv is None:
            return EncoderOutput([x], skips)
        with stage("trident_conv", x) as s:
            features = s.output(self.trident_conv(x))
        return EncoderOutput(features[::-1], skips)
