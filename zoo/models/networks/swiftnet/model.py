"""The single-scale SwiftNet (Oršić et al., CVPR 2019): ResNet-18, SPP, ladder decoder."""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch import nn

from profiling import stage
from zoo.options import ConfigError, check_minimum
from ...base import ZooModel

from .blocks import BNReluConv
from .ladder import LadderDecoder
from .resnet import ResNetEncoder
from .spp import SpatialPyramidPooling, upsample

__all__ = ["SwiftNet", "OFFICIAL_MEAN", "OFFICIAL_STD"]

#: the official ``ResNet``'s default ``img_mean`` / ``img_std`` (RGB, values 0..255).
OFFICIAL_MEAN = (73.1584, 82.9090, 72.3924)
OFFICIAL_STD = (44.9149, 46.1529, 45.3192)


class SwiftNet(ZooModel):
    """Single-scale SwiftNet: ``forward(image)`` returns ``num_classes`` logit maps at the
    input's resolution for an image with values in 0..255.

    The image is normalised with the ``img_mean`` / ``img_std`` buffers (as the official model
    does, but out of place, so the caller's tensor is left alone), then: ``encoder`` (a
    ResNet-18 returning the skip feature of each layer), ``spp`` (pyramid pooling over the
    layer-4 skip), ``decoder`` (ladder blocks ``up1``..``up3`` that add the layer-3, 2 and 1
    skips), ``post`` (a pre-activation 1×1 classifier at stride 4, then bilinear upsampling
    to the input size).

    Parameter names follow the torchstat table of the users' notes; official checkpoints load
    through :func:`~.checkpoint.official_key` (see the builder's ``checkpoint`` option).
    See :func:`~.builders.swiftnet` for the arguments.
    """

    first_conv = "encoder.conv1"

    stage_names = ("encoder", "stem", "layer1", "layer2", "layer3", "layer4", "spp", "decoder",
                   "up1", "up2", "up3", "post")
    default_input_size = (1024, 2048)
    task = "segmentation"
    input_scale = 255.0
    #: the encoder's total stride.
    output_stride = 32

    def __init__(self, in_channels: int = 3, num_classes: int = 19, *, batch_norm: bool = True,
                 conv_bias: bool = False, num_features: int = 128,
                 spp_grids: Sequence[int] = (8, 4, 2), upsample_kernel: int = 3,
                 preact_skip: bool = False, img_mean: Optional[Sequence[float]] = None,
                 img_std: Optional[Sequence[float]] = None) -> None:
        super().__init__()
        check_minimum(1, in_channels=in_channels, num_classes=num_classes,
                      num_features=num_features, upsample_kernel=upsample_kernel,
                      spp_grids=spp_grids)
        if num_features < len(spp_grids):  # each SPP level gets num_features // levels
            raise ConfigError(f"num_features={num_features} is not accepted with "
                              f"{len(spp_grids)} spp_grids; accepted: an integer >= "
                              f"{len(spp_grids)}, so that every pyramid level has a channel")
        self.in_channels = in_channels
        self.register_buffer("img_mean", _channel_stats(img_mean, OFFICIAL_MEAN, in_channels,
                                                        "img_mean"))
        self.register_buffer("img_std", _channel_stats(img_std, OFFICIAL_STD, in_channels,
                                                       "img_std"))
        self.encoder = ResNetEncoder(in_channels, batch_norm=batch_norm, conv_bias=conv_bias,
                                     preact_skip=preact_skip)
        units = dict(batch_norm=batch_norm, bias=conv_bias)
        self.spp = SpatialPyramidPooling(self.encoder.channels[-1], num_features,
                                         num_features // len(spp_grids), num_features,
                                         spp_grids, **units)
        self.decoder = LadderDecoder(num_features, self.encoder.channels[-2::-1],
                                     upsample_kernel, **units)
        # The official classifier always has a bias (SemsegModel's bias=True).
        self.post = BNReluConv(num_features, num_classes, 1, batch_norm=batch_norm, bias=True)
        self._init_weights()

    def _init_weights(self) -> None:
        """The official initialisation: He normal (fan-out) convolutions, unit BatchNorms."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, num_classes, H, W]`` for ``image`` ``[B, in_channels, H, W]`` in 0..255."""
        self.check_channels(image)
        with stage("encoder", image) as s:
            skips = s.output(self.encoder((image - self.img_mean) / self.img_std))
        with stage("spp", skips[-1]) as s:
            x = s.output(self.spp(skips[-1]))
        with stage("decoder", x, skips[:-1]) as s:
            x = s.output(self.decoder(x, skips[-2::-1]))
        with stage("post", x) as s:
            return s.output(upsample(self.post(x), image.shape[-2:]))

    def check_input_size(self, size: Sequence[int], *, pad: bool = False) -> tuple[int, int]:
        """Any size from one output stride (32 px) up: the ladder resizes every level to its
        skip, so sizes need not divide by 32; below 32 px the deepest maps fall under one cell.
        With ``pad=True``, a smaller side is padded up to 32."""
        height, width = int(size[0]), int(size[1])
        stride = self.output_stride
        if min(height, width) >= stride:
            return height, width
        nearest = (max(height, stride), max(width, stride))
        if pad:
            return nearest
        raise ConfigError(f"input size {height}x{width} is below SwiftNet's output stride "
                          f"{stride}; sides must be at least {stride} px (nearest valid size "
                          f"{nearest[0]}x{nearest[1]}, or set input.pad=true)")

    def adapt_state_dict(self, state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Adapt a 3-channel checkpoint to ``in_channels``: the first convolution with
        :func:`~zoo.models.base.sum_input_channels`; each normalisation buffer becomes, in every
        channel, the mean of the checkpoint's channels (one grey level for all channels)."""
        state_dict = dict(super().adapt_state_dict(state_dict))
        for name in ("img_mean", "img_std"):
            value = state_dict.get(name)
            if value is not None and value.numel() != self.in_channels:
                state_dict[name] = value.mean().expand(1, self.in_channels, 1, 1).clone()
        return state_dict


def _channel_stats(values: Optional[Sequence[float]], official: Sequence[float],
                   channels: int, name: str) -> torch.Tensor:
    """The ``[1, channels, 1, 1]`` buffer for ``values``; by default the official RGB values,
    or their mean in every channel when the image does not have 3 channels."""
    if values is None:
        grey = sum(official) / len(official)
        values = official if channels == len(official) else [grey] * channels
    values = [float(v) for v in values]
    if len(values) != channels:
        raise ConfigError(f"{name} has {len(values)} values for in_channels={channels}; "
                          f"give one value per input channel")
    return torch.tensor(values).view(1, channels, 1, 1)
