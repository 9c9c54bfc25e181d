"""The registered GMFlow builders: ``gmflow``, ``gmflow_refine`` and ``gmflow_unet``."""

from __future__ import annotations

from typing import Sequence

from ...registry import register_model

from .model import GMFlow
from .refine import GMFlowRefine
from .unet import GMFlowUNet

__all__ = ["gmflow", "gmflow_refine", "gmflow_unet"]


@register_model
def gmflow(*, in_channels: int = 3, first_kernel_size: int = 7, first_stride: int = 2,
           feature_channels: int = 128, num_transformer_layers: int = 6, num_head: int = 1,
           ffn_dim_expansion: int = 4, attention_type: str = "swin", upsample_factor: int = 8,
           attn_splits_list: Sequence[int] = (2,), corr_radius_list: Sequence[int] = (-1,),
           prop_radius_list: Sequence[int] = (-1,), pred_bidir_flow: bool = False,
           attention_impl: str = "sdpa", position_encoding: str = "sine") -> GMFlow:
    """GMFlow with global matching at 1/8 (the official ``gmflow_things`` / ``gmflow_sintel``
    / ``gmflow_kitti`` / ``gmflow_chairs`` models).

    Args:
        in_channels: image channels (1: grayscale; a 3-channel checkpoint's ``conv1`` is summed
            over its channels when loaded).
        first_kernel_size, first_stride: of the encoder's first conv (official 7 and 2).
        feature_channels: channels of the matched features (official 128).
        num_transformer_layers, num_head, ffn_dim_expansion: of the transformer (6, 1, 4).
        attention_type: ``"swin"`` or ``"full"``.
        upsample_factor: the feature stride, undone by convex upsampling (8; 4 keeps ``layer3``
            at 1/4; it must be 2 or 4 times ``first_stride``).
        attn_splits_list, corr_radius_list, prop_radius_list, pred_bidir_flow: the official
            forward options (one entry per scale), stored on the model.
        attention_impl: ``"sdpa"`` (torch's fused attention) or ``"math"`` (explicit).
        position_encoding: ``"sine"`` (official), ``"relative"`` (a relative position bias in
            every attention layer, Swin V2's continuous one; 2,048 parameters per layer with
            one head) or ``"none"``. Official checkpoints (``model.checkpoint=``, e.g.
            ``gmflow_things-e9887eda.pth``) need ``"sine"``.
    """
    return GMFlow(**locals())


@register_model
def gmflow_refine(*, in_channels: int = 3, first_kernel_size: int = 7, first_stride: int = 2,
                  feature_channels: int = 128, num_transformer_layers: int = 6,
                  num_head: int = 1, ffn_dim_expansion: int = 4, attention_type: str = "swin",
                  num_scales: int = 2, upsample_factor: int = 4,
                  attn_splits_list: Sequence[int] = (2, 8),
                  corr_radius_list: Sequence[int] = (-1, 4),
                  prop_radius_list: Sequence[int] = (-1, 1), pred_bidir_flow: bool = False,
                  attention_impl: str = "sdpa", position_encoding: str = "sine"
                  ) -> GMFlowRefine:
    """GMFlow with refinement at 1/4 (the official ``gmflow_with_refine_*`` models).

    Options as :func:`gmflow`, plus ``num_scales`` (2; the per-scale lists need one entry per
    scale). ``upsample_factor`` is the stride of the finest scale (4).
    """
    return GMFlowRefine(**locals())


@register_model
def gmflow_unet(*, in_channels: int = 3, first_kernel_size: int = 7, first_stride: int = 2,
                feature_channels: int = 128, num_transformer_layers: int = 6, num_head: int = 1,
                ffn_dim_expansion: int = 4, attention_type: str = "swin",
                upsample_factor: int = 8, attn_splits_list: Sequence[int] = (2,),
                corr_radius_list: Sequence[int] = (-1,), prop_radius_list: Sequence[int] = (-1,),
                pred_bidir_flow: bool = False, attention_impl: str = "sdpa",
                position_encoding: str = "sine",
                decoder_channels: Sequence[int] = (128, 96, 64, 16), head_channels: int = 512,
                n_skip: int = 3) -> GMFlowUNet:
    """GMFlow with a TransUNet-style decoder that refines the flow at full resolution.

    Options as :func:`gmflow`, plus the decoder's ``decoder_channels`` (of its four blocks),
    ``head_channels`` (of ``conv_more``) and ``n_skip`` (blocks that take an encoder skip).
    A ``checkpoint`` must hold the decoder too (this model's own ``state_dict``).
    """
    return GMFlowUNet(**locals())
