"""A Swin transformer encoder (timm) with the zoo's U-Net decoder: ``swin_unet``."""

from __future__ import annotations

import math
from typing import Optional, Sequence

import timm
import torch
from torch import nn

from profiling import stage
from zoo.options import ConfigError, check_minimum
from ..base import ZooModel
from ..registry import register_model
from .decoders.unet import UNetDecoder

__all__ = ["SwinUNet", "swin_unet"]

#: Swin's stage count; the decoder reads all four.
_NUM_LEVELS = 4


class SwinUNet(ZooModel):
    """A timm Swin transformer, :class:`~zoo.models.networks.decoders.unet.UNetDecoder` over its
    four stages, and a 3×3 convolution to per-pixel logits at the input resolution.

    The encoder is ``timm.create_model(variant, features_only=True, strict_img_size=False)``:
    it takes any size divisible by its patch size, padding each stage to whole windows and
    building the shifted-window masks for that size on each forward. Windows and shifts are
    those timm derives for ``img_size`` (for Swin-T at 224, the last stage, 7×7, is one
    window and does not shift). The decoder's skips must meet the upsampled path exactly, so
    the input sides must divide by the encoder's total stride (32).

    The encoder's NHWC outputs become NCHW views; the deepest feeds ``conv_more``, the three
    others (deepest first) are the skips of the first ``n_skip`` decoder blocks. Every block
    upsamples ×2 except the last, which upsamples to the input resolution (×4 for four blocks,
    as Swin-Unet's final patch expanding), so the head works at full resolution, as
    TransUNet's segmentation head does.

    Stages: ``encoder`` (``patch_embed``, ``stage1``..``stage4``), ``decoder`` (``conv_more``,
    ``block1``..), ``head``. Inputs are images normalised as timm's weights expect (ImageNet
    mean and std), hence ``input_scale = 1.0``. See :func:`swin_unet` for the arguments.
    """

    stage_names = ("encoder", "patch_embed", "stage1", "stage2", "stage3", "stage4", "decoder",
                   "conv_more", "block1", "block2", "block3", "block4", "head")
    default_input_size = (224, 224)
    task = "segmentation"

    def __init__(self, variant: str = "swin_tiny_patch4_window7_224", in_channels: int = 3,
                 num_classes: int = 9, *, decoder_channels: Sequence[int] = (256, 128, 64, 16),
                 head_channels: int = 512, n_skip: int = 3, img_size: int | Sequence[int] = 224,
                 encoder_state_dict: Optional[dict[str, torch.Tensor]] = None) -> None:
        super().__init__()
        check_minimum(1, in_channels=in_channels, num_classes=num_classes)
        self.in_channels = in_channels
        self.encoder = _create_encoder(variant, in_channels, img_size, encoder_state_dict)
        channels = self.encoder.feature_info.channels()
        self.output_stride = self.encoder.feature_info.reduction()[-1]
        decoder_channels = [int(c) for c in decoder_channels]
        factors = _scale_factors(len(decoder_channels), n_skip, self.output_stride)
        self.decoder = UNetDecoder(channels[-1], channels[-2::-1], decoder_channels,
                                   n_skip=n_skip, head_channels=head_channels,
                                   scale_factors=factors, stage_prefix="")
        self.head = nn.Conv2d(decoder_channels[-1], num_classes, 3, padding=1)
        self.stage_names = (("encoder", "patch_embed")
                            + tuple(f"stage{i + 1}" for i in range(_NUM_LEVELS))
                            + ("decoder",) + self.decoder.stage_names + ("head",))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, num_classes, H, W]`` for a normalised ``image`` ``[B, C, H, W]``."""
        self.check_channels(image)
        with stage("encoder", image) as s:
            features = s.output(self.forward_features(image))
        skips = features[-2::-1]
        with stage("decoder", features[-1], skips[:self.decoder.n_skip]) as s:
            x = s.output(self.decoder(features[-1], skips))
        with stage("head", x) as s:
            return s.output(self.head(x))

    def forward_features(self, image: torch.Tensor) -> list[torch.Tensor]:
        """The four Swin stages' outputs as NCHW (views of timm's NHWC tensors), shallowest
        first. Runs the modules of timm's feature extractor one by one, so that each is a
        stage: ``patch_embed``, then ``stage1``..``stage4`` (timm's ``layers_0``..)."""
        x = image
        features = []
        for index, (name, module) in enumerate(self.encoder.items()):
            with stage("patch_embed" if index == 0 else f"stage{index}", x) as s:
                x = s.output(module(x))
            if name in self.encoder.return_layers:
                features.append(x.permute(0, 3, 1, 2))
        return features

    def check_input_size(self, size: Sequence[int], *, pad: bool = False) -> tuple[int, int]:
        """Sides must be positive multiples of the encoder's stride (32): the patch embedding
        needs multiples of 4, and each decoder block's upsampled path must meet its skip.
        With ``pad=True``, the size is rounded up to the next valid one."""
        height, width = int(size[0]), int(size[1])
        stride = self.output_stride
        if height > 0 and width > 0 and height % stride == 0 and width % stride == 0:
            return height, width
        up = (_round_up(height, stride), _round_up(width, stride))
        if pad:
            return up
        down = (max(stride, height // stride * stride), max(stride, width // stride * stride))
        nearest = " or ".join(dict.fromkeys(f"{h}x{w}" for h, w in (down, up)))
        raise ConfigError(f"input size {height}x{width} does not suit swin_unet: sides must be "
                          f"multiples of its stride {stride} (nearest valid sizes {nearest}, "
                          f"or set input.pad=true)")


def _round_up(value: int, multiple: int) -> int:
    return max(multiple, math.ceil(value / multiple) * multiple)


def _scale_factors(blocks: int, n_skip: int, stride: int) -> list[int]:
    """×2 per block, the last block taking what is left to reach stride 1."""
    if not 1 <= blocks <= round(math.log2(stride)) + 1:
        raise ConfigError(f"decoder_channels has {blocks} blocks; swin_unet takes 1 to "
                          f"{round(math.log2(stride)) + 1} (one ×2 upsampling each, the last one "
                          f"up to the input resolution)")
    if not 0 <= n_skip <= min(_NUM_LEVELS - 1, blocks - 1):
        raise ConfigError(f"n_skip={n_skip} with {blocks} decoder blocks; accepted: 0 to "
                          f"{min(_NUM_LEVELS - 1, blocks - 1)} (the last block takes no skip)")
    return [2] * (blocks - 1) + [stride // 2 ** (blocks - 1)]


def _create_encoder(variant: str, in_channels: int, img_size: int | Sequence[int],
                    state_dict: Optional[dict[str, torch.Tensor]]) -> nn.Module:
    """timm's Swin feature extractor; with ``state_dict``, timm's pretrained weights.

    timm itself loads the weights (it renames official Microsoft checkpoints and adapts the
    patch embedding to ``in_channels``). The classifier is dropped from the file, so the load
    can be strict: a file that is not a checkpoint of ``variant`` is an error, not a silent
    partial load.
    """
    accepted = timm.list_models("swin_*")
    if variant not in accepted:
        raise ConfigError(f"unknown Swin variant '{variant}'; accepted: {', '.join(accepted)}")
    img_size = tuple(int(s) for s in img_size) if isinstance(img_size, Sequence) else int(img_size)
    options = dict(features_only=True, out_indices=tuple(range(_NUM_LEVELS)), num_classes=0,
                   in_chans=in_channels, img_size=img_size, strict_img_size=False)
    if state_dict is None:
        return timm.create_model(variant, pretrained=False, **options)
    state_dict = {k: v for k, v in state_dict.items() if not k.startswith("head.")}
    try:
        return timm.create_model(variant, pretrained=True, pretrained_strict=True,
                                 pretrained_cfg_overlay=dict(state_dict=state_dict,
                                                             classifier=None), **options)
    except RuntimeError as error:
        raise ConfigError(f"checkpoint does not hold timm's {variant} weights: "
                          f"{_first_problem(error)}") from None


def _first_problem(error: RuntimeError, limit: int = 160) -> str:
    """The first problem ``load_state_dict`` lists (its message spans several lines)."""
    lines = [line.strip() for line in str(error).strip().splitlines()]
    problem = lines[1] if len(lines) > 1 else lines[0]
    return problem if len(problem) <= limit else problem[:limit] + "..."


@register_model(state_dict_argument="encoder_state_dict")
def swin_unet(*, variant: str = "swin_tiny_patch4_window7_224", in_channels: int = 3,
              num_classes: int = 9, decoder_channels: Sequence[int] = (256, 128, 64, 16),
              head_channels: int = 512, n_skip: int = 3, img_size: int | Sequence[int] = 224,
              encoder_state_dict: Optional[dict[str, torch.Tensor]] = None) -> SwinUNet:
    """Swin transformer (timm) + U-Net decoder, for dense per-pixel prediction.

    Args:
        variant: timm's Swin name (``timm.list_models("swin_*")``), Swin-T by default.
        in_channels: image channels.
        num_classes: output maps (Synapse's 9 organs + background, as Swin-Unet and TransUNet).
        decoder_channels: output channels of each decoder block (TransUNet's by default);
            the number of blocks is its length.
        head_channels: output channels of the decoder's ``conv_more``.
        n_skip: how many decoder blocks take an encoder skip (stage 3, 2, 1 in that order).
        img_size: the size timm derives the windows and shifts for; other sizes run too.
        encoder_state_dict: what ``model.checkpoint=`` holds (read by
            :func:`zoo.create_model`): timm's (or Microsoft's) pretrained Swin weights for the
            encoder; the decoder and head stay randomly initialised. None: all random.
    """
    return SwinUNet(variant, in_channels, num_classes, decoder_channels=decoder_channels,
                    head_channels=head_channels, n_skip=n_skip, img_size=img_size,
                    encoder_state_dict=encoder_state_dict)
