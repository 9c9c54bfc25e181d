"""GMFlow: optical flow as global matching of transformer features (Xu et al., CVPR 2022).

A re-implementation of the official ``gmflow/gmflow.py`` (haofeixu/gmflow) with the same
parameter names and shapes, so the official checkpoints load with ``strict=True``, instrumented
with stage markers, and with the official forward options stored as model options.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Optional, Sequence

import torch
import torch.nn.functional as F

from profiling import probe, stage
from ...base import ZooModel

from .backbone import CNNEncoder
from .geometry import flow_warp
from .matching import (FLOAT32_MATCHING, global_correlation_softmax,
                       local_correlation_softmax)
from .option_checks import check_options, fitted_input_size, per_scale
from .position import add_position
from .propagation import ConvexUpsampler, FeatureFlowAttention
from .transformer import FeatureTransformer
from .utils import image_statistics

__all__ = ["GMFlow", "gmflow_stage_names", "Prediction"]


def _correlation_stage(radius: int) -> str:
    return "global_correlation_softmax" if radius == -1 else "local_correlation_softmax"


def gmflow_stage_names(corr_radius_list: Sequence[int], num_transformer_layers: int = 6,
                       position_encoding: str = "sine") -> tuple[str, ...]:
    """The stage (and probe) names of a GMFlow forward with one scale per entry of
    ``corr_radius_list``, in order of first call (``position_encoding`` is a stage of the
    sine encoding only)."""
    names = ["normalize", "backbone", "conv1", "layer1", "layer2", "layer3", "conv2"]
    if len(corr_radius_list) > 1:
        names.append("trident_conv")
    names += ["feature0", "feature1"]
    for scale_idx, radius in enumerate(corr_radius_list):
        if scale_idx > 0:
            names.append("flow_warp")
        if position_encoding == "sine":
            names.append("position_encoding")
        names.append("transformer")
        if num_transformer_layers > 0:
            names += ["self_attn", "cross_attn_ffn"]
        names += [_correlation_stage(radius), "feature_flow_attn"]
    names.append("upsampler")
    return tuple(dict.fromkeys(names))


class Prediction(NamedTuple):
    """What :meth:`GMFlow.predict` returns: the flows, and what a decoder on top can use.

    Attributes:
        flow_preds: flows at full resolution, the final one last.
        feature0: the transformer's image-0 feature of the finest scale (image 0's then image
            1's for bidirectional flow), the one the upsampler sees.
        skips: the encoder's ``layer3``, ``layer2``, ``layer1`` outputs (deepest first) for both
            images, ``[2B, ...]``, image 0 first.
    """

    flow_preds: list[torch.Tensor]
    feature0: torch.Tensor
    skips: list[torch.Tensor]


class GMFlow(ZooModel):
    """GMFlow with its CNN encoder, in one or more scales (two: the refinement model).

    ``model(img0, img1)`` takes two ``[B, C, H, W]`` image batches with values in ``[0, 255]``
    and returns ``{"flow_preds": [flow]}``, ``flow`` being ``[B, 2, H, W]`` (x, y) in pixels, or
    ``[2B, 2, H, W]`` (forward then backward flow) with ``pred_bidir_flow``. In training mode the
    list also holds the intermediate flows, upsampled bilinearly, as the official model returns.

    Args:
        num_scales: 1 (global matching at 1/8) or more (each finer scale refines by local
            matching; the official refinement model has 2).
        upsample_factor: stride of the finest feature, which the convex upsampler undoes.
            It is ``first_stride * 2 * layer3_stride`` with a ``layer3`` stride of 1 or 2.
        feature_channels: channels of the features the transformer and matching use.
        attention_type: ``"swin"`` (split windows, shifted on odd layers) or ``"full"``.
        num_transformer_layers, ffn_dim_expansion, num_head: of the transformer.
        in_channels: image channels; 1 normalises with the mean of ImageNet's statistics.
        first_kernel_size, first_stride: of the encoder's ``conv1``.
        attn_splits_list: per scale, K for K×K attention windows (1: whole map).
        corr_radius_list: per scale, -1 for global matching, R for a (2R+1)² local window.
        prop_radius_list: per scale, -1 for global flow propagation, R for a local one.
        pred_bidir_flow: also predict the backward flow (image 1 to image 0).
        attention_impl: ``"sdpa"`` (fused kernels) or ``"math"`` (explicit, as the official).
        position_encoding: ``"sine"`` (the official absolute encoding, added per window),
            ``"relative"`` (a learned relative position bias in every attention layer,
            :mod:`.relative_position`) or ``"none"``.
    """

    first_conv = "backbone.conv1"

    stage_names = gmflow_stage_names((-1,))
    default_input_size = (384, 768)
    task = "flow"
    input_scale = 255.0
    input_kind = "image_pair"

    def __init__(self, *, num_scales: int = 1, upsample_factor: int = 8,
                 feature_channels: int = 128, attention_type: str = "swin",
                 num_transformer_layers: int = 6, ffn_dim_expansion: int = 4, num_head: int = 1,
                 in_channels: int = 3, first_kernel_size: int = 7, first_stride: int = 2,
                 attn_splits_list: Sequence[int] = (2,), corr_radius_list: Sequence[int] = (-1,),
                 prop_radius_list: Sequence[int] = (-1,), pred_bidir_flow: bool = False,
                 attention_impl: str = "sdpa", position_encoding: str = "sine") -> None:
        super().__init__()
        layer3_stride = check_options(
            num_scales=num_scales, upsample_factor=upsample_factor, first_stride=first_stride,
            feature_channels=feature_channels, num_head=num_head,
            first_kernel_size=first_kernel_size, attention_type=attention_type,
            attention_impl=attention_impl, position_encoding=position_encoding,
            in_channels=in_channels, ffn_dim_expansion=ffn_dim_expansion,
            num_transformer_layers=num_transformer_layers)
        self.num_scales = num_scales
        self.attn_splits_list = per_scale(attn_splits_list, "attn_splits_list", num_scales)
        self.corr_radius_list = per_scale(corr_radius_list, "corr_radius_list", num_scales)
        self.prop_radius_list = per_scale(prop_radius_list, "prop_radius_list", num_scales)
        self.pred_bidir_flow = bool(pred_bidir_flow)
        self.in_channels = in_channels
        self.upsample_factor = upsample_factor
        self.feature_channels = feature_channels
        self.attention_type = attention_type
        self.attention_impl = attention_impl
        self.position_encoding = position_encoding

        self.backbone = CNNEncoder(feature_channels, num_scales, in_channels=in_channels,
                                   first_kernel_size=first_kernel_size,
                                   first_stride=first_stride, layer3_stride=layer3_stride)
        self.transformer = FeatureTransformer(num_transformer_layers, feature_channels,
                                              num_head, attention_type, ffn_dim_expansion,
                                              attention_impl,
                                              relative_position=position_encoding == "relative")
        self.feature_flow_attn = FeatureFlowAttention(feature_channels, attention_impl)
        self.upsampler = ConvexUpsampler(feature_channels, upsample_factor)
        mean, std = image_statistics(in_channels)
        self.register_buffer("mean", mean, persistent=False)
        self.register_buffer("std", std, persistent=False)
        self.stage_names = gmflow_stage_names(self.corr_radius_list, num_transformer_layers,
                                              position_encoding)

    # ---- the calling convention -------------------------------------------------------------

    def example_inputs(self, batch: int, size: Sequence[int], *,
                       generator: Optional[torch.Generator] = None, device: Any = "cpu"
                       ) -> tuple[torch.Tensor, torch.Tensor]:
        """Two seeded image batches ``(img0, img1)`` with values in ``[0, 255)``."""
        generator = generator if generator is not None else torch.Generator().manual_seed(0)
        make = super().example_inputs
        return (make(batch, size, generator=generator, device=device)[0],
                make(batch, size, generator=generator, device=device)[0])

    @property
    def size_divisor(self) -> int:
        """What the input height and width must be multiples of: at every scale, the feature
        stride times the number of attention splits."""
        n = self.num_scales
        return math.lcm(*(self.upsample_factor * 2 ** (n - 1 - i) * splits
                          for i, splits in enumerate(self.attn_splits_list)))

    def float32_parts(self) -> dict[str, str]:
        """The flow path stays float32 in a half-precision run: matching (coordinate grids,
        correlation softmax, expected positions), propagation, convex upsampling and warping."""
        parts = {
            "global_correlation_softmax": FLOAT32_MATCHING,
            "local_correlation_softmax": FLOAT32_MATCHING,
            "feature_flow_attn": "attention whose values are the float32 flow (query and key "
                                 "cast to float32); flow out in float32",
            "flow_warp": "flow upsampling, sampling grid and bilinear warp in float32; the "
                         "warped feature is cast back",
            "upsampler": "convex-combination softmax and weighted flow sum in float32; its "
                         "conv head runs in run.dtype",
        }
        return {name: what for name, what in parts.items() if name in self.stage_names}

    def check_input_size(self, size: Sequence[int], *, pad: bool = False) -> tuple[int, int]:
        """``(H, W)`` when both are multiples of :attr:`size_divisor`; the next multiples up
        with ``pad=True``; otherwise a :class:`~zoo.options.ConfigError` naming the nearest
        valid sizes."""
        return fitted_input_size(
            size, self.size_divisor, pad=pad, model=type(self).__name__,
            because=f"upsample_factor={self.upsample_factor}, "
                    f"attn_splits_list={list(self.attn_splits_list)}")

    # ---- forward ----------------------------------------------------------------------------

    def forward(self, img0: torch.Tensor, img1: torch.Tensor, **options: Any
                ) -> dict[str, list[torch.Tensor]]:
        """Flow from ``img0`` to ``img1``: ``{"flow_preds": [..., flow]}``.

        ``options`` override the stored forward options for this call (``attn_splits_list``,
        ``corr_radius_list``, ``prop_radius_list``, ``pred_bidir_flow``).
        """
        return {"flow_preds": self.predict(img0, img1, **options).flow_preds}

    def normalize(self, img0: torch.Tensor, img1: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """``[0, 255]`` images to ImageNet-normalised ones."""
        return (img0 / 255.0 - self.mean) / self.std, (img1 / 255.0 - self.mean) / self.std

    def predict(self, img0: torch.Tensor, img1: torch.Tensor, *,
                attn_splits_list: Optional[Sequence[int]] = None,
                corr_radius_list: Optional[Sequence[int]] = None,
                prop_radius_list: Optional[Sequence[int]] = None,
                pred_bidir_flow: Optional[bool] = None) -> Prediction:
        """The forward pass, returning the flows and the features a decoder can use."""
        n = self.num_scales
        attn_splits_list = per_scale(attn_splits_list or self.attn_splits_list,
                                    "attn_splits_list", n)
        corr_radius_list = per_scale(corr_radius_list or self.corr_radius_list,
                                    "corr_radius_list", n)
        prop_radius_list = per_scale(prop_radius_list or self.prop_radius_list,
                                    "prop_radius_list", n)
        bidir = self.pred_bidir_flow if pred_bidir_flow is None else bool(pred_bidir_flow)

        with stage("normalize", img0, img1) as s:
            img0, img1 = s.output(self.normalize(img0, img1))
        features, skips = self._extract_features(img0, img1)

        flow_preds: list[torch.Tensor] = []
        flow: Optional[torch.Tensor] = None
        for scale_idx, (feature0, feature1) in enumerate(features):
            if bidir and scale_idx > 0:
                feature0, feature1 = torch.cat((feature0, feature1)), torch.cat((feature1,
                                                                                 feature0))
            upsample_factor = self.upsample_factor * 2 ** (n - 1 - scale_idx)
            if flow is not None:
                with stage("flow_warp", flow, feature1) as s:
                    flow = _bilinear_upsample(flow, 2).detach()
                    feature1 = flow_warp(feature1, flow)
                    s.output((flow, feature1))
            feature0, feature1, flow = self._match(
                feature0, feature1, flow, attn_splits=attn_splits_list[scale_idx],
                corr_radius=corr_radius_list[scale_idx], bidir=bidir and scale_idx == 0)
            if self.training:
                flow_preds.append(_bilinear_upsample(flow, upsample_factor))
            if bidir and scale_idx == 0:
                feature0 = torch.cat((feature0, feature1))
            with stage("feature_flow_attn", feature0, flow) as s:
                flow = s.output(self.feature_flow_attn(feature0, flow.detach(),
                                                       prop_radius_list[scale_idx]))
            if self.training and scale_idx < n - 1:
                flow_preds.append(_bilinear_upsample(flow, upsample_factor))
        with stage("upsampler", flow, feature0) as s:
            flow_preds.append(s.output(self.upsampler(flow, feature0)))
        return Prediction(flow_preds, feature0, skips)

    def _extract_features(self, img0: torch.Tensor, img1: torch.Tensor
                          ) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], list[torch.Tensor]]:
        """Both images through the encoder as one batch; per scale (coarsest first) the
        ``(feature0, feature1)`` pair, and the encoder's skip features."""
        images = torch.cat((img0, img1))
        with stage("backbone", images) as s:
            encoded = self.backbone(images)
            s.output(encoded.features)
        pairs = []
        for feature in encoded.features:
            feature0, feature1 = feature.chunk(2)
            pairs.append((probe("feature0", feature0), probe("feature1", feature1)))
        return pairs, encoded.skips

    def _match(self, feature0: torch.Tensor, feature1: torch.Tensor,
               flow: Optional[torch.Tensor], *, attn_splits: int, corr_radius: int,
               bidir: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Position encoding, transformer and correlation softmax of one scale; returns the
        transformed features and the flow (the previous one plus this scale's estimate)."""
        if self.position_encoding == "sine":
            with stage("position_encoding", feature0, feature1) as s:
                feature0, feature1 = s.output(add_position(feature0, feature1, attn_splits))
        with stage("transformer", feature0, feature1) as s:
            feature0, feature1 = s.output(self.transformer(feature0, feature1, attn_splits))
        with stage(_correlation_stage(corr_radius), feature0, feature1) as s:
            if corr_radius == -1:
                flow_pred = global_correlation_softmax(feature0, feature1, pred_bidir_flow=bidir,
                                                       impl=self.attention_impl)
            else:
                flow_pred = local_correlation_softmax(feature0, feature1, corr_radius)
            s.output(flow_pred)
        return feature0, feature1, flow_pred if flow is None else flow + flow_pred


def _bilinear_upsample(flow: torch.Tensor, factor: int) -> torch.Tensor:
    """Bilinear upsampling of a flow by ``factor``; its values scale too."""
    return F.interpolate(flow, scale_factor=factor, mode="bilinear", align_corners=True) * factor
