"""torchstat's per-layer definitions of MAdd, Flops, MemRead and MemWrite.

torchstat (Swall0w/torchstat, ``compute_madd.py``, ``compute_flops.py``, ``compute_memory.py``)
prices each leaf module from its type, its first input and its output. Its definitions differ
from this package's ``macs``/``flops`` and are kept here only for the torchstat-compatible
layer table, faithfully, quirks included:

- ``MAdd`` is per sample (no batch factor): a convolution counts ``k*k*C_in/groups``
  multiplications and one addition fewer (one more with a bias) per output element; ReLU one
  per element; max pooling ``k*k - 1`` per output element, average pooling ``k*k``; batch norm
  4 per element; softmax ``3n - 1``; linear ``out * (2 * in - 1)``.
- ``Flops`` include the batch: a convolution counts ``k*k*C_in*C_out/groups`` per output
  position (the full ``C_in``, even with groups) plus the bias; ReLU-like activations and
  pooling one per input element; batch norm 1 per element, 2 with affine parameters; linear
  ``batch * in * out``; ``nn.Upsample`` ``batch * H_out * W_out`` (without channels).
- ``MemRead`` is the input plus the parameters (once per sample), ``MemWrite`` the output, in
  elements times the input's element size.

torchstat has no definition for other layer types (it prints 0 and a warning). Here a
definition missing for a metric falls back to the dispatcher's counts of the module's call:
``MAdd`` to ``flops``, ``Flops`` to ``flops - macs`` (a MAC counted once, as torchstat does
for convolutions), ``MemRead``/``MemWrite`` to ``bytes_read``/``bytes_written``.
Generalisations: a linear layer's leading dimensions beyond the batch are rows; every parameter
counts (torchstat counts only those with ``requires_grad``).
"""

from __future__ import annotations

from math import prod
from typing import NamedTuple, Optional, Sequence

from torch import nn

from .counts import Counts

__all__ = ["TorchstatRow", "torchstat_metrics"]

Shape = Sequence[int]


class TorchstatRow(NamedTuple):
    """torchstat's figures of one layer call."""

    madd: int
    flops: int
    mem_read_bytes: int
    mem_write_bytes: int


def _pair(value) -> tuple[int, int]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def _params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _madd(module: nn.Module, inp: Shape, out: Shape) -> Optional[int]:
    if isinstance(module, (nn.Conv2d, nn.ConvTranspose2d)):
        k_h, k_w = module.kernel_size
        groups = module.groups
        per_output = k_h * k_w * (inp[1] // groups)
        adds = per_output - 1 + (0 if module.bias is None else 1)
        positions = prod(inp[2:]) if isinstance(module, nn.ConvTranspose2d) else prod(out[2:])
        return (per_output + adds) * positions * (out[1] // groups) * groups
    if isinstance(module, nn.BatchNorm2d):
        return 4 * prod(inp[1:])
    if isinstance(module, nn.MaxPool2d):
        k_h, k_w = _pair(module.kernel_size)
        return (k_h * k_w - 1) * prod(out[1:])
    if isinstance(module, nn.AvgPool2d):
        k_h, k_w = _pair(module.kernel_size)
        return k_h * k_w * prod(out[1:])
    if isinstance(module, (nn.ReLU, nn.ReLU6)):
        return prod(inp[1:])
    if isinstance(module, nn.Softmax):
        return 3 * prod(inp[1:]) - 1
    if isinstance(module, nn.Linear):
        return prod(inp[1:-1]) * out[-1] * (2 * inp[-1] - 1)
    return None


def _flops(module: nn.Module, inp: Shape, out: Shape) -> Optional[int]:
    if isinstance(module, nn.Conv2d):
        k_h, k_w = module.kernel_size
        positions = inp[0] * prod(out[2:])
        bias = out[1] * positions if module.bias is not None else 0
        return k_h * k_w * inp[1] * (out[1] // module.groups) * positions + bias
    if isinstance(module, nn.BatchNorm2d):
        return prod(inp) * (2 if module.affine else 1)
    if isinstance(module, (nn.AvgPool2d, nn.MaxPool2d, nn.ReLU, nn.ReLU6, nn.PReLU, nn.ELU,
                           nn.LeakyReLU)):
        return prod(inp)
    if isinstance(module, nn.Upsample):
        return inp[0] * prod(out[2:])
    if isinstance(module, nn.Linear):
        return prod(inp[:-1]) * inp[-1] * out[-1]
    return None


def _memory(module: nn.Module, inp: Shape, out: Shape) -> Optional[tuple[int, int]]:
    batch, per_sample = inp[0], prod(inp[1:])
    if isinstance(module, (nn.ReLU, nn.ReLU6, nn.ELU, nn.LeakyReLU, nn.AvgPool2d,
                           nn.MaxPool2d)):
        return batch * per_sample, prod(out)
    if isinstance(module, (nn.PReLU, nn.Conv2d, nn.Linear)):
        return batch * (per_sample + _params(module)), prod(out)
    if isinstance(module, nn.BatchNorm2d):
        return batch * (per_sample + 2 * inp[1]), prod(inp)
    return None


def torchstat_metrics(module: nn.Module, inp: Shape, out: Shape, itemsize: int,
                      call: Counts) -> TorchstatRow:
    """torchstat's MAdd, Flops, MemRead(B), MemWrite(B) of one call of ``module``.

    Args:
        inp, out: shapes of the first input and the first output tensor (batch first).
        itemsize: bytes per element of the input.
        call: the dispatcher's counts of the same call, the fallback where torchstat has no
            definition.
    """
    madd = _madd(module, inp, out)
    flops = _flops(module, inp, out)
    memory = _memory(module, inp, out)
    return TorchstatRow(
        madd=call.flops if madd is None else madd,
        flops=call.flops - call.macs if flops is None else flops,
        mem_read_bytes=call.bytes_read if memory is None else memory[0] * itemsize,
        mem_write_bytes=call.bytes_written if memory is None else memory[1] * itemsize)
