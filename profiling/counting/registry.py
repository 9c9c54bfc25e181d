"""The registry of per-operator cost formulas, and what a formula returns.

A formula is one small function per operator family, registered for the ATen (or library)
operator packets it covers, like the formulas of ``torch.utils.flop_counter``. It receives the
operator's real arguments (tensors, so shapes, dtypes and strides are at hand; tensors may live
on the meta device) and its output, and returns an :class:`OpCost`. Bytes default to the
distinct bytes of every tensor argument (read) and of every tensor output (written); a formula
overrides them where the operator touches less (a gather, an in-place fill).

Operators that cost nothing, views and metadata, are registered explicitly with
:func:`register_free`; operators with no entry at all are reported by the counter as
uncounted, never silently taken as zero.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple, Optional, Union

import torch
from torch.utils._pytree import tree_flatten

from ..stages.byte_view import element_bytes

__all__ = ["OpCost", "Formula", "register_formula", "register_free", "formula_for",
           "registered_ops", "op_name", "tensor_bytes", "tensors_in", "numel", "is_float",
           "variants", "FREE"]

Formula = Callable[[tuple, dict, Any], "OpCost"]
Target = torch._ops.OpOverloadPacket


class OpCost(NamedTuple):
    """What one operator call costs.

    Attributes:
        macs: multiply-accumulates of convolution, linear, matmul and attention (bias excluded).
        flops: every floating-point operation: 2 per MAC plus bias, normalisation,
            activation, pooling, elementwise, softmax and interpolation work.
        activations: output elements of convolutions, linear layers and matmuls (fvcore's).
        bytes_read: bytes the operator reads; ``None`` for the default (every tensor argument).
        bytes_written: bytes it writes; ``None`` for the default (every tensor output).
    """

    macs: int = 0
    flops: int = 0
    activations: int = 0
    bytes_read: Optional[int] = None
    bytes_written: Optional[int] = None


#: The cost of an operator that does no work and moves no data (a view, a metadata query).
FREE = OpCost(0, 0, 0, 0, 0)

_FORMULAS: dict[Any, Formula] = {}


def _free(args: tuple, kwargs: dict, out: Any) -> OpCost:
    return FREE


def register_formula(targets: Union[Target, Iterable[Target]]) -> Callable[[Formula], Formula]:
    """Register ``formula(args, kwargs, out) -> OpCost`` for one or several operators.

    A target is an operator packet (``torch.ops.aten.mm``, ``torch.ops.torchvision.roi_align``),
    so one formula serves every overload (``aten.add.Tensor``, ``aten.add.out``, ...).
    """
    target_list = list(targets) if isinstance(targets, (list, tuple, set)) else [targets]

    def register(formula: Formula) -> Formula:
        for target in target_list:
            if target in _FORMULAS:
                raise RuntimeError(f"two formulas registered for {op_name(target)}")
            _FORMULAS[target] = formula
        return formula

    return register


def register_free(targets: Iterable[Target]) -> None:
    """Register operators that neither compute nor move data: views, aliases, metadata."""
    register_formula(list(targets))(_free)


def formula_for(target: Any) -> Optional[Formula]:
    """The formula registered for the operator packet ``target``, or ``None``."""
    return _FORMULAS.get(target)


def registered_ops() -> list[str]:
    """Names of every operator with a formula (free operators included), sorted."""
    return sorted(op_name(target) for target in _FORMULAS)


def op_name(target: Any) -> str:
    """A readable name: ``aten.mm``, ``torchvision.roi_align``."""
    return str(target).replace(".default", "")


def variants(namespace: Any, *names: str) -> list[torch._ops.OpOverloadPacket]:
    """The packets ``name`` and ``name_`` (in place) of every name that ``namespace`` has."""
    found = []
    for name in names:
        for variant in (name, name + "_"):
            if hasattr(namespace, variant):
                found.append(getattr(namespace, variant))
    return found


def tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors anywhere in ``value`` (nested tuples, lists, dicts)."""
    leaves, _ = tree_flatten(value)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def tensor_bytes(tensor: torch.Tensor) -> int:
    """Bytes of the distinct elements of ``tensor``: a broadcast (stride-0) axis counts once.

    A scalar (one distinct element, such as a 0-dim tensor or one expanded from it) counts 0:
    it travels as a kernel argument, and devices differ in whether they make one (``fill_``
    with a number on the CPU, ``copy_`` from an expanded scalar tensor on the meta device).
    """
    elements = 1
    for size, stride in zip(tensor.shape, tensor.stride()):
        if stride != 0:
            elements *= size
    return 0 if elements == 1 else elements * element_bytes(tensor)


def numel(value: Any) -> int:
    """Elements of a tensor, or of the first tensor in a tuple or list of outputs."""
    if isinstance(value, torch.Tensor):
        return value.numel()
    tensors = tensors_in(value)
    return tensors[0].numel() if tensors else 0


def is_float(*values: Any) -> bool:
    """Whether any tensor among ``values`` holds floating-point (or complex) numbers."""
    return any(t.is_floating_point() or t.is_complex() for t in tensors_in(values))
