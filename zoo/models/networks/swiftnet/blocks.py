"""SwiftNet's pre-activation unit: (BatchNorm), ReLU, then a convolution."""

from __future__ import annotations

from torch import nn

__all__ = ["BNReluConv"]


class BNReluConv(nn.Sequential):
    """``norm`` (when ``batch_norm``), ``relu``, ``conv``: the official ``_BNReluConv``.

    The ReLU works in place only behind a BatchNorm, whose output is a fresh tensor; without
    one it would overwrite the block's input, which the caller still holds (a skip feature).

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: odd kernel size; the padding keeps the spatial size.
        batch_norm: put a BatchNorm before the ReLU.
        bias: give the convolution a bias.
        bn_momentum: the BatchNorm's momentum (the official SPP uses 0.005).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3, *,
                 batch_norm: bool = True, bias: bool = False, bn_momentum: float = 0.1) -> None:
        super().__init__()
        if batch_norm:
            self.add_module("norm", nn.BatchNorm2d(in_channels, momentum=bn_momentum))
        self.add_module("relu", nn.ReLU(inplace=batch_norm))
        self.add_module("conv", nn.Conv2d(in_channels, out_channels, kernel_size,
                                          padding=kernel_size // 2, bias=bias))
