"""Scaled dot-product attention as GMFlow uses it: full, split into (shifted) windows, or over
small local windows.

Every attention-shaped computation of GMFlow goes through :func:`attend`, which runs either
torch's fused :func:`~torch.nn.functional.scaled_dot_product_attention` (``impl="sdpa"``) or the
explicit matmul-softmax-matmul of the official code (``impl="math"``). Both compute the same
result (the golden tests check it against the official outputs); the math path exists so that
``benchmarks/gmflow_attention.py`` can compare the two side by side.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F

from profiling import is_counting

__all__ = ["ATTENTION_IMPLS", "attend", "full_attention", "fused_value_width",
           "window_attention"]

#: the accepted values of the ``attention_impl`` option.
ATTENTION_IMPLS = ("sdpa", "math")

#: On the CPU, attention over fewer keys than this runs the explicit path even for ``"sdpa"``:
#: there the fused kernel's overhead outweighs its gain (docs/models/gmflow.md has the
#: measurements). CUDA always takes the fused kernel.
FUSED_MIN_KEYS_CPU = 128


def attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *,
           mask: Optional[torch.Tensor] = None, impl: str = "sdpa") -> torch.Tensor:
    """``softmax(query @ key^T / sqrt(E) + mask) @ value`` over the last two dimensions.

    Args:
        query: ``[..., Lq, E]``; key: ``[..., Lk, E]``; value: ``[..., Lk, Ev]``.
        mask: broadcastable to ``[..., Lq, Lk]``: added to the scores when floating point;
            when boolean, ``False`` excludes a key.
        impl: ``"sdpa"`` (fused kernel, see :data:`FUSED_MIN_KEYS_CPU`) or ``"math"``
            (explicit, as the official code).

    In the profiler's operation-counting pass (never timed) the explicit path runs whatever
    ``impl`` says, so the counts are those of the official algorithm, the same on every
    device, and not those of the fused kernel's padded values.
    """
    if (impl == "sdpa" and not is_counting()
            and (query.device.type != "cpu" or key.shape[-2] >= FUSED_MIN_KEYS_CPU)):
        return _fused_attention(query, key, value, mask)
    # divided by sqrt(E), not multiplied by its inverse: the official code's rounding
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = (scores.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool
                  else scores + mask)
    return torch.matmul(torch.softmax(scores, dim=-1), value)


def fused_value_width(query: torch.Tensor, value_width: int) -> int:
    """The value width :func:`attend` hands the fused kernel for ``value_width``-channel values.

    GMFlow's matching and propagation attend to 2-channel values (pixel positions, flow), which
    no fused kernel takes as they are. On the CPU, the flash kernel wants values as wide as the
    queries. On CUDA, float32 runs on the memory-efficient kernel, which wants widths divisible
    by 4 (8 in half precision); padding only that far keeps its ``probabilities @ values`` GEMM
    as small as the official 2-channel one, not ``query width / 2`` times larger.
    """
    if query.device.type == "cpu":
        return max(value_width, query.shape[-1])
    return -(-value_width // 8) * 8


def _fused_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                     mask: Optional[torch.Tensor]) -> torch.Tensor:
    """:func:`~torch.nn.functional.scaled_dot_product_attention` in the form its fused kernels
    take: 4-D tensors whose last dimension is contiguous, and values zero-padded to
    :func:`fused_value_width` (the padding is dropped after). On the CPU, this turns a fallback
    slower than plain math into the flash kernel. Matching hands in the transposed
    ``[B, C, H*W]`` feature maps: copied to contiguous tokens, its attention takes the flash
    kernel rather than the fallback too (docs/models/gmflow.md has the measurements).
    """
    width = value.shape[-1]
    padded = fused_value_width(query, width)
    if padded > width:
        value = F.pad(value, (0, padded - width))
    query, key, value = (x if x.stride(-1) == 1 else x.contiguous() for x in (query, key, value))
    if query.dim() == 3:
        out = F.scaled_dot_product_attention(
            query[:, None], key[:, None], value[:, None],
            attn_mask=None if mask is None else mask.unsqueeze(-3))[:, 0]
    else:
        out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    return out[..., :width]


def _split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """``[..., L, C]`` -> ``[..., heads, L, C/heads]``."""
    *batch, length, channels = x.shape
    return x.view(*batch, length, num_heads, channels // num_heads).transpose(-3, -2)


def _merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`_split_heads`."""
    *batch, heads, length, head_dim = x.shape
    return x.transpose(-3, -2).reshape(*batch, length, heads * head_dim)


def full_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *,
                   num_heads: int = 1, bias: Optional[torch.Tensor] = None,
                   impl: str = "sdpa") -> torch.Tensor:
    """Attention of every token to every token: ``[B, L, C]`` in, ``[B, L, C]`` out; ``bias``
    ``[heads, L, L]`` is added to the scores."""
    out = attend(*(_split_heads(x, num_heads) for x in (query, key, value)),
                 mask=None if bias is None else bias.unsqueeze(0), impl=impl)
    return _merge_heads(out)


def window_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *,
                     num_windows: int, num_heads: int = 1,
                     shift_mask: Optional[torch.Tensor] = None,
                     bias: Optional[torch.Tensor] = None, impl: str = "sdpa") -> torch.Tensor:
    """Attention inside each of ``num_windows`` windows of tokens given in window order.

    The tokens come in the order of :func:`~.utils.window_order`: window after window, so a
    window is a contiguous block of ``L`` tokens and is a view, never a copy. The official code
    rolls and splits query, key and value, and merges and rolls back the result, in every
    layer; the transformer gathers its tokens into window order once per layer instead
    (projections, norms and the FFN act on each token alone, so they run in any order).
    ``shift_mask`` ``[K*K, L, L]`` (:func:`~.utils.shifted_window_mask`) keeps tokens of
    shifted windows from attending across the seams of the roll; ``bias`` ``[heads, L, L]``
    is added to the scores of every window.

    Args:
        query, key, value: ``[B, K*K*L, C]`` in window order.
    Returns:
        ``[B, K*K*L, C]`` in window order.
    """
    b, tokens, c = query.shape

    def windows(x: torch.Tensor) -> torch.Tensor:
        return _split_heads(x.view(b, num_windows, tokens // num_windows, c),
                            num_heads).flatten(1, 2)

    mask = None
    if shift_mask is not None:
        mask = shift_mask.to(query.dtype).unsqueeze(1)  # [K*K, 1, L, L]
    if bias is not None:
        mask = bias.unsqueeze(0) if mask is None else mask + bias.unsqueeze(0)
    if mask is not None:
        # [1, K*K*heads, L, L]: a 4-D mask keeps torch's fused CPU kernel (a 3-D one does not)
        mask = mask.expand(num_windows, num_heads, -1, -1).flatten(0, 1).unsqueeze(0)
    out = attend(windows(query), windows(key), windows(value), mask=mask, impl=impl)
    return _merge_heads(out.unflatten(1, (num_windows, num_heads))).reshape(b, tokens, c)
