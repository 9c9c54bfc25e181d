"""The registered SwiftNet builders."""

from __future__ import annotations

from typing import Optional, Sequence

from ...registry import register_model

from .checkpoint import official_key
from .model import SwiftNet

__all__ = ["swiftnet"]


@register_model(key_map=official_key)
def swiftnet(*, in_channels: int = 3, num_classes: int = 19, batch_norm: bool = True,
             conv_bias: bool = False, num_features: int = 128,
             spp_grids: Sequence[int] = (8, 4, 2), upsample_kernel: int = 3,
             preact_skip: bool = False, img_mean: Optional[Sequence[float]] = None,
             img_std: Optional[Sequence[float]] = None) -> SwiftNet:
    """Single-scale SwiftNet with a ResNet-18 encoder (the official ``rn18_single_scale``).

    Args:
        in_channels: image channels.
        num_classes: output maps.
        batch_norm: BatchNorm in the encoder and before every ReLU-conv unit (official: on).
        conv_bias: biases in the encoder's 3×3/7×7 convolutions and in the SPP and decoder
            units (official: off). The classifier always has one, the downsampling 1×1s never.
        num_features: width of the SPP and the decoder (official: 128); each of the SPP's
            levels gets ``num_features // len(spp_grids)`` channels (42 for 128 and 3 levels).
        spp_grids: the SPP levels' grid rows (columns follow the aspect ratio).
        upsample_kernel: kernel of the decoder's blend convolutions (official ``k_up``: 3).
        preact_skip: hand the decoder the layer sums before their ReLU, as the paper describes;
            off reproduces the official code, whose in-place ReLU rectifies them.
        img_mean, img_std: per-channel normalisation in 0..255 units; default: the official
            RGB values (their mean in every channel for other channel counts).

    ``model.checkpoint=`` takes official SwiftNet weights (key mapping in
    :mod:`zoo.models.networks.swiftnet.checkpoint`) or this model's own ``state_dict``.
    """
    return SwiftNet(in_channels, num_classes, batch_norm=batch_norm, conv_bias=conv_bias,
                    num_features=num_features, spp_grids=spp_grids,
                    upsample_kernel=upsample_kernel, preact_skip=preact_skip, img_mean=img_mean,
                    img_std=img_std)
