"""SwiftNet's ResNet-18 encoder: torchvision's layout, returning each layer's skip feature."""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import nn

from profiling import stage

__all__ = ["BasicBlock", "ResNetEncoder"]


def _norm(channels: int, batch_norm: bool) -> Optional[nn.BatchNorm2d]:
    return nn.BatchNorm2d(channels) if batch_norm else None


class BasicBlock(nn.Module):
    """ResNet's basic block that returns ``(relu(out), out)``, as SwiftNet's does.

    ``out`` is the sum before the final ReLU: the feature the official code hands to the
    ladder decoder. Its ReLU is in place, though, so the tensor the official code actually
    passes on has been rectified; ``preact_skip=False`` (the default, what the released
    checkpoints were trained and evaluated with) reproduces that, ``preact_skip=True`` keeps
    the sum unrectified, as the paper describes.

    Args:
        conv_bias: give the 3×3 convolutions a bias (the downsampling 1×1 never has one).
    """

    def __init__(self, in_channels: int, channels: int, stride: int = 1, *,
                 batch_norm: bool = True, conv_bias: bool = False,
                 preact_skip: bool = False) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=conv_bias)
        self.bn1 = _norm(channels, batch_norm)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=conv_bias)
        self.bn2 = _norm(channels, batch_norm)
        self.downsample: Optional[nn.Sequential] = None
        if stride != 1 or in_channels != channels:
            layers: list[nn.Module] = [nn.Conv2d(in_channels, channels, 1, stride, bias=False)]
            if batch_norm:
                layers.append(nn.BatchNorm2d(channels))
            self.downsample = nn.Sequential(*layers)
        self.preact_skip = preact_skip

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.conv1(x)
        if self.bn1 is not None:
            out = self.bn1(out)
        out = self.conv2(self.relu(out))
        if self.bn2 is not None:
            out = self.bn2(out)
        # The shortcut runs after the main branch (the official code runs it first): the sum is
        # the same, and the modules are then called in the order they are registered.
        out = out + (x if self.downsample is None else self.downsample(x))
        if self.preact_skip:
            return torch.relu(out), out
        out = self.relu(out)
        return out, out


class ResNetEncoder(nn.Module):
    """The ResNet-18 of SwiftNet: stem (``conv1``, ``bn1``, ``relu``, ``maxpool``), then
    ``layer1``..``layer4`` of :class:`BasicBlock`.

    :meth:`forward` returns the skip feature of every layer (strides 4, 8, 16, 32), each the
    second output of the layer's last block. Stages: ``stem``, ``layer1``..``layer4``.

    Args:
        in_channels: image channels.
        layers: blocks per layer (ResNet-18: 2, 2, 2, 2).
        batch_norm: BatchNorm after every convolution.
        conv_bias: give the stem and block 3×3 convolutions a bias.
        preact_skip: see :class:`BasicBlock`.
    """

    #: channels of the four skip features.
    channels = (64, 128, 256, 512)

    def __init__(self, in_channels: int = 3, layers: Sequence[int] = (2, 2, 2, 2), *,
                 batch_norm: bool = True, conv_bias: bool = False,
                 preact_skip: bool = False) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 7, 2, 3, bias=conv_bias)
        self.bn1 = _norm(64, batch_norm)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        options = dict(batch_norm=batch_norm, conv_bias=conv_bias, preact_skip=preact_skip)
        previous = 64
        for index, (channels, blocks) in enumerate(zip(self.channels, layers)):
            stride = 1 if index == 0 else 2
            layer = [BasicBlock(previous, channels, stride, **options)]
            layer += [BasicBlock(channels, channels, **options) for _ in range(1, blocks)]
            self.add_module(f"layer{index + 1}", nn.Sequential(*layer))
            previous = channels

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The encoder's stages in forward order."""
        return ("stem",) + tuple(f"layer{i + 1}" for i in range(len(self.channels)))

    def forward(self, image: torch.Tensor) -> list[torch.Tensor]:
        """The skip features of ``layer1``..``layer4`` for a normalised ``image``."""
        with stage("stem", image) as s:
            x = self.conv1(image)
            if self.bn1 is not None:
                x = self.bn1(x)
            x = s.output(self.maxpool(self.relu(x)))
        skips = []
        for index in range(len(self.channels)):
            name = f"layer{index + 1}"
            with stage(name, x) as s:
                for block in getattr(self, name):
                    x, skip = block(x)
                s.output(skip if x is skip else (x, skip))
            skips.append(skip)
        return skips
