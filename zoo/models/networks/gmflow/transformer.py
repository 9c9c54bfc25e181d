"""GMFlow's feature transformer: per layer, self-attention, then cross-attention with an FFN,
in (shifted) split windows or over the whole map.

In split windows, the tokens are kept in the window order of the layer
(:func:`~.utils.window_order`): one gather per layer, where the official code rolls, splits,
merges and rolls back query, key, value and message in each of its two attentions."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from profiling import is_counting, stage

from .attention import full_attention, window_attention
from .relative_position import RelativePositionBias
from .utils import reorder_index, shifted_window_mask

__all__ = ["TransformerLayer", "TransformerBlock", "FeatureTransformer"]


class TransformerLayer(nn.Module):
    """Attention of ``source`` to ``target`` (self-attention when they are the same), a
    projection and LayerNorm, then (unless ``no_ffn``) an FFN on ``[source, message]`` and a
    second LayerNorm; the result is added to ``source``.

    Args:
        d_model: token channels.
        num_heads: attention heads (the official code has one; more split the channels).
        attention_type: ``"swin"`` (split windows) or ``"full"``.
        no_ffn: leave out the FFN (the self-attention layer of a block).
        ffn_dim_expansion: the FFN's hidden width is ``2 * d_model * ffn_dim_expansion``.
        with_shift: use shifted windows (odd layers of a swin transformer).
        attention_impl: ``"sdpa"`` or ``"math"`` (see :mod:`.attention`).
        relative_position: add a :class:`~.relative_position.RelativePositionBias` of its own
            (``position_bias``) to the attention scores.
    """

    def __init__(self, d_model: int = 128, num_heads: int = 1, attention_type: str = "swin",
                 no_ffn: bool = False, ffn_dim_expansion: int = 4, with_shift: bool = False,
                 attention_impl: str = "sdpa", relative_position: bool = False) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.attention_type = attention_type
        self.with_shift = with_shift
        self.attention_impl = attention_impl
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.merge = nn.Linear(d_model, d_model, bias=False)
        self.norm1 = nn.LayerNorm(d_model)
        self.mlp = self.norm2 = None
        if not no_ffn:
            hidden = 2 * d_model * ffn_dim_expansion
            self.mlp = nn.Sequential(nn.Linear(2 * d_model, hidden, bias=False), nn.GELU(),
                                     nn.Linear(hidden, d_model, bias=False))
            self.norm2 = nn.LayerNorm(d_model)
        self.position_bias = RelativePositionBias(num_heads) if relative_position else None

    def forward(self, source: torch.Tensor, target: torch.Tensor, *, height: int, width: int,
                attn_num_splits: int = 1, shift_mask: Optional[torch.Tensor] = None
                ) -> torch.Tensor:
        """``source``, ``target``: ``[B, H*W, C]`` tokens of a ``height`` × ``width`` map; in
        split windows (``attention_type="swin"`` and ``attn_num_splits`` > 1), in the window
        order of this layer (:func:`~.utils.window_order`, shifted when ``with_shift``)."""
        query, key, value = self._project(source, target)
        windowed = self.attention_type == "swin" and attn_num_splits > 1
        bias = None
        if self.position_bias is not None:
            splits = attn_num_splits if windowed else 1
            bias = self.position_bias(height // splits, width // splits).to(query.dtype)
        if windowed:
            message = window_attention(
                query, key, value, num_windows=attn_num_splits ** 2, num_heads=self.num_heads,
                shift_mask=shift_mask if self.with_shift else None, bias=bias,
                impl=self.attention_impl)
        else:
            message = full_attention(query, key, value, num_heads=self.num_heads, bias=bias,
                                     impl=self.attention_impl)
        message = self.norm1(self.merge(message))
        if self.mlp is not None:
            message = self.norm2(self.mlp(torch.cat((source, message), dim=-1)))
        return source + message


    def _project(self, source: torch.Tensor, target: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``q_proj(source)``, ``k_proj(target)``, ``v_proj(target)``.

        Projections of the same tokens run as one matrix product with the weights stacked
        (all three in self-attention, key and value in cross-attention): the same values in
        less time than separate products (docs/models/gmflow.md). The counting pass calls
        each module, so that per-module tables keep their rows.
        """
        if is_counting():
            return self.q_proj(source), self.k_proj(target), self.v_proj(target)
        if source is target:
            weight = torch.cat((self.q_proj.weight, self.k_proj.weight, self.v_proj.weight))
            return F.linear(source, weight).chunk(3, dim=-1)
        weight = torch.cat((self.k_proj.weight, self.v_proj.weight))
        return (self.q_proj(source), *F.linear(target, weight).chunk(2, dim=-1))


class TransformerBlock(nn.Module):
    """``self_attn`` (no FFN) then ``cross_attn_ffn``; each is a stage."""

    def __init__(self, d_model: int = 128, num_heads: int = 1, attention_type: str = "swin",
                 ffn_dim_expansion: int = 4, with_shift: bool = False,
                 attention_impl: str = "sdpa", relative_position: bool = False) -> None:
        super().__init__()
        options = dict(d_model=d_model, num_heads=num_heads, attention_type=attention_type,
                       ffn_dim_expansion=ffn_dim_expansion, with_shift=with_shift,
                       attention_impl=attention_impl, relative_position=relative_position)
        self.self_attn = TransformerLayer(no_ffn=True, **options)
        self.cross_attn_ffn = TransformerLayer(**options)

    @property
    def with_shift(self) -> bool:
        """Whether this block attends in shifted windows."""
        return self.self_attn.with_shift

    def forward(self, source: torch.Tensor, target: torch.Tensor, **geometry) -> torch.Tensor:
        with stage("self_attn", source) as s:
            source = s.output(self.self_attn(source, source, **geometry))
        with stage("cross_attn_ffn", source, target) as s:
            return s.output(self.cross_attn_ffn(source, target, **geometry))


class FeatureTransformer(nn.Module):
    """``num_layers`` blocks that update both images' features, each attending to itself and
    to the other image. Both directions run as one batch: the tokens are ``[2B, H*W, C]``
    (image 0's then image 1's), the targets the same halves swapped.

    With ``attention_type="swin"``, odd layers use shifted windows. With ``relative_position``,
    every attention layer adds a relative position bias of its own to its scores.
    """

    def __init__(self, num_layers: int = 6, d_model: int = 128, num_heads: int = 1,
                 attention_type: str = "swin", ffn_dim_expansion: int = 4,
                 attention_impl: str = "sdpa", relative_position: bool = False) -> None:
        super().__init__()
        self.attention_type = attention_type
        self.d_model = d_model
        # The fused path excludes masked pairs exactly; the math path keeps the official -100.
        self.mask_fill = float("-inf") if attention_impl == "sdpa" else -100.0
        self.layers = nn.ModuleList(
            TransformerBlock(d_model=d_model, num_heads=num_heads, attention_type=attention_type,
                             ffn_dim_expansion=ffn_dim_expansion,
                             with_shift=attention_type == "swin" and i % 2 == 1,
                             attention_impl=attention_impl, relative_position=relative_position)
            for i in range(num_layers))
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, feature0: torch.Tensor, feature1: torch.Tensor, attn_num_splits: int = 1
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """``[B, C, H, W]`` features in and out."""
        b, c, h, w = feature0.shape
        windowed = self.attention_type == "swin" and attn_num_splits > 1
        shift_mask = None
        if windowed:
            shift_mask = shifted_window_mask(h, w, attn_num_splits, device=feature0.device,
                                             fill=self.mask_fill)
        source = torch.cat((feature0, feature1)).flatten(2).transpose(1, 2)  # [2B, H*W, C]
        order: Optional[bool] = None  # the grid; True/False: (shifted) window order
        for layer in self.layers:
            if windowed:
                source = self._reorder(source, h, w, attn_num_splits, order, layer.with_shift)
                order = layer.with_shift
            target = torch.cat(source.chunk(2)[::-1])
            source = layer(source, target, height=h, width=w, attn_num_splits=attn_num_splits,
                           shift_mask=shift_mask)
        source = self._reorder(source, h, w, attn_num_splits, order, None)
        feature0, feature1 = source.view(2 * b, h, w, c).permute(0, 3, 1, 2).chunk(2)
        return feature0.contiguous(), feature1.contiguous()

    @staticmethod
    def _reorder(tokens: torch.Tensor, height: int, width: int, num_splits: int,
                 source: Optional[bool], target: Optional[bool]) -> torch.Tensor:
        """``tokens`` ``[B, H*W, C]`` from the ``source`` order to the ``target`` order
        (``None``: the grid, a bool: window order, shifted or not)."""
        if source == target:
            return tokens
        index = reorder_index(height, width, num_splits, source, target, tokens.device)
        return tokens.index_select(1, index)
