"""GMFlow with a TransUNet-style decoder on top: the seed's decoder experiment."""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import nn

from profiling import stage
from zoo.options import ConfigError
from ..decoders.unet import UNetDecoder

from .backbone import CNNEncoder
from .model import GMFlow

__all__ = ["GMFlowUNet"]


class GMFlowUNet(GMFlow):
    """GMFlow whose flow is refined at full resolution by a U-Net decoder.

    The encoder's ``layer3``, ``layer2`` and ``layer1`` outputs (1/8, 1/4, 1/2 with the default
    strides; 128, 96, 64 channels) are kept as skips. The shared
    :class:`~zoo.models.networks.decoders.unet.UNetDecoder` takes the transformer's image-0
    feature (1/8, ``feature_channels``, TransUNet's ``hidden_size``): ``conv_more``, then block 1
    fuses the 1/8 skip without upsampling, blocks 2 and 3 upsample ×2 and fuse the 1/4 and 1/2
    skips, and
    block 4 upsamples to full resolution. The head, a 3×3 conv ``flow_head`` to 2 channels,
    predicts a dense flow *residual* that is added to GMFlow's convex-upsampled flow. The head
    starts at zero, so an untrained decoder leaves GMFlow's flow unchanged.

    Returns ``{"flow_preds": [..., gmflow_flow, refined_flow]}``, the refined flow last. With
    ``pred_bidir_flow``, the decoder sees both images' features and skips, for the forward and
    the backward flow.

    Args:
        decoder_channels: output channels of the four decoder blocks.
        head_channels: output channels of ``conv_more`` (TransUNet: 512).
        n_skip: how many blocks take a skip (3: all three encoder levels).
        **options: GMFlow's options (one scale).
    """

    stage_names = GMFlow.stage_names + ("decoder_conv_more", "decoder_block1",
                                        "decoder_block2", "decoder_block3", "decoder_block4",
                                        "flow_head")

    def __init__(self, *, decoder_channels: Sequence[int] = (128, 96, 64, 16),
                 head_channels: int = 512, n_skip: int = 3, **options: Any) -> None:
        super().__init__(**options)
        decoder_channels = tuple(int(c) for c in decoder_channels)
        if len(decoder_channels) != 4:
            raise ConfigError(f"decoder_channels={list(decoder_channels)} needs 4 entries "
                              f"(1/8 -> 1/8, 1/4, 1/2, full resolution)")
        first_stride = self.backbone.conv1.stride[0]
        skip_strides = (self.upsample_factor, 2 * first_stride, first_stride)
        scale_factors = (1, skip_strides[0] // skip_strides[1], skip_strides[1] // skip_strides[2],
                         skip_strides[2])
        self.decoder = UNetDecoder(self.feature_channels, CNNEncoder.feature_dims[::-1],
                                   decoder_channels, n_skip=n_skip, head_channels=head_channels,
                                   scale_factors=scale_factors)
        self.flow_head = nn.Conv2d(decoder_channels[-1], 2, 3, padding=1)
        nn.init.zeros_(self.flow_head.weight)
        nn.init.zeros_(self.flow_head.bias)
        self.stage_names = self.stage_names + self.decoder.stage_names + ("flow_head",)

    def forward(self, img0: torch.Tensor, img1: torch.Tensor, **options: Any
                ) -> dict[str, list[torch.Tensor]]:
        """Flow from ``img0`` to ``img1``, refined by the decoder: ``{"flow_preds": [...]}``."""
        prediction = self.predict(img0, img1, **options)
        skips = prediction.skips
        if prediction.feature0.shape[0] != skips[0].shape[0]:  # one direction: image 0's skips
            skips = [skip.chunk(2)[0] for skip in skips]
        decoded = self.decoder(prediction.feature0, skips)
        with stage("flow_head", decoded) as s:
            residual = s.output(self.flow_head(decoded))
        flow_preds = prediction.flow_preds
        return {"flow_preds": flow_preds + [flow_preds[-1] + residual]}
