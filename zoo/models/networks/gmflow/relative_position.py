"""A relative position bias for GMFlow's attention, as an alternative to its absolute sine
encoding: Swin Transformer V2's continuous position bias.

GMFlow's attention windows follow the input size (K×K windows of an H/8 × W/8 map), so a bias
table of fixed size (Swin V1) does not fit; Swin V2's small MLP maps any (Δy, Δx) offset,
log-spaced, to a bias per head, so one set of weights serves every window size.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["POSITION_ENCODINGS", "RelativePositionBias"]

#: the accepted values of GMFlow's ``position_encoding`` option: the official absolute sine
#: encoding added to the features, this module's bias added to the attention scores, or none.
POSITION_ENCODINGS = ("sine", "relative", "none")


class RelativePositionBias(nn.Module):
    """``16 · sigmoid(MLP(offset))`` per head for every (query, key) pair of a window.

    The offsets are normalised to ``[-8, 8]`` over the window and log-spaced
    (``sign(d) · log2(1 + |d|) / 3``), as in Swin V2. The MLP is ``Linear(2, hidden)``, ReLU,
    ``Linear(hidden, num_heads, bias=False)``: ``3 · hidden + hidden · num_heads`` parameters.

    Args:
        num_heads: heads of the attention it serves.
        hidden: the MLP's hidden width (Swin V2: 512).
    """

    def __init__(self, num_heads: int = 1, hidden: int = 512) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(inplace=True),
                                 nn.Linear(hidden, num_heads, bias=False))

    def forward(self, height: int, width: int) -> torch.Tensor:
        """The bias ``[num_heads, L, L]`` of a ``height`` × ``width`` window, ``L = h·w``
        tokens in row-major order."""
        weight = self.mlp[0].weight
        table = self.mlp(_log_spaced_offsets(height, width, weight.device, weight.dtype))
        table = 16 * torch.sigmoid(table).permute(2, 0, 1).contiguous()  # [heads, 2h-1, 2w-1]
        return _expand_offsets(table, height, width)


def _expand_offsets(table: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """``bias[:, q, k] = table[:, y_q - y_k + h - 1, x_q - x_k + w - 1]`` for the ``L = h·w``
    tokens of a window, ``[heads, L, L]``, without ``[L, L]`` index tensors.

    With the table flipped in both offsets, the entry of ``(h-1-y_q, w-1-x_q)`` against
    ``(y_k, x_k)`` sits at ``(h-1-y_q + y_k, w-1-x_q + x_k)``: a strided view of the flipped
    table, whose query axes are flipped back.
    """
    heads = table.shape[0]
    flipped = table.flip(1, 2).contiguous()
    row_stride, col_stride = flipped.stride(1), flipped.stride(2)
    view = flipped.as_strided((heads, height, width, height, width),
                              (flipped.stride(0), row_stride, col_stride, row_stride, col_stride))
    return view.flip(1, 2).reshape(heads, height * width, height * width)


def _log_spaced_offsets(height: int, width: int, device: torch.device, dtype: torch.dtype
                        ) -> torch.Tensor:
    """Every (Δy, Δx) offset of a window, ``[2h-1, 2w-1, 2]``, scaled to ``[-8, 8]`` and
    log-spaced."""
    dy = torch.arange(1 - height, height, device=device, dtype=dtype) / max(height - 1, 1)
    dx = torch.arange(1 - width, width, device=device, dtype=dtype) / max(width - 1, 1)
    offsets = torch.stack(torch.meshgrid(dy, dx, indexing="ij"), dim=-1) * 8
    return torch.sign(offsets) * torch.log2(offsets.abs() + 1) / math.log2(8)
