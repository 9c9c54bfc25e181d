"""Payload trees: what crosses a stage boundary.

:func:`walk_payload` turns any nesting of tensors and containers into a tree of
:class:`TensorLeaf` and :class:`PayloadGroup` nodes. Every tensor leaf keeps its shape, dtype,
device and bytes (``numel * element_size``: the logical size, not the size of a shared
storage); every group carries the total bytes of its leaves. Values that hold no tensor
(ints, strings, ``None``) are left out.

Containers understood: tuples, lists, dicts, dataclasses, NamedTuples, and any other object
whose attributes carry tensors (such as torchvision's ``ImageList``). Modules are not walked.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Union

import torch

from .byte_view import element_bytes

__all__ = ["TensorLeaf", "PayloadGroup", "PayloadNode", "walk_payload", "iter_leaves",
           "iter_tensors", "payload_bytes", "format_shape", "device_type_of"]

_MAX_DEPTH = 32


@dataclass(frozen=True)
class TensorLeaf:
    """One tensor of a payload."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    device: str
    nbytes: int

    @property
    def numel(self) -> int:
        """Number of elements."""
        n = 1
        for size in self.shape:
            n *= size
        return n


@dataclass(frozen=True)
class PayloadGroup:
    """A container of payload nodes.

    Attributes:
        kind: ``tuple``, ``list``, ``dict``, ``namedtuple``, ``dataclass`` or ``object``.
        items: ``(key, node)`` pairs in order; keys are ints for sequences, the dict key for
            dicts, and the field or attribute name for the others.
        nbytes: the total bytes of every tensor below.
    """

    kind: str
    items: tuple[tuple[Any, "PayloadNode"], ...]
    nbytes: int


PayloadNode = Union[TensorLeaf, PayloadGroup]


def walk_payload(value: Any) -> Optional[PayloadNode]:
    """Build the payload tree of ``value``; ``None`` when it holds no tensor."""
    return _walk(value, 0, set())


def iter_tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in ``value``, in order, through the same containers as
    :func:`walk_payload`."""
    yield from _iter_tensors(value, 0, set())


def _iter_tensors(value: Any, depth: int, seen: set[int]) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
        return
    kind, pairs = _container(value, depth, seen)
    for _, child in pairs:
        yield from _iter_tensors(child, depth + 1, seen | {id(value)})


def _container(value: Any, depth: int, seen: set[int]) -> tuple[Optional[str], list]:
    """``(kind, [(key, child)])`` of a value to walk into; ``(None, [])`` for a leaf that is
    not a tensor, a module, a value already on the path, or past the depth limit."""
    if depth >= _MAX_DEPTH or id(value) in seen or isinstance(
            value, (str, bytes, int, float, bool, type(None), torch.nn.Module)):
        return None, []
    return _children(value)


def _walk(value: Any, depth: int, seen: set[int]) -> Optional[PayloadNode]:
    if isinstance(value, torch.Tensor):
        return TensorLeaf(tuple(value.shape), value.dtype, str(value.device),
                          value.numel() * element_bytes(value))
    kind, pairs = _container(value, depth, seen)
    seen = seen | {id(value)}
    if kind is None:
        return None
    items = []
    for key, child in pairs:
        node = _walk(child, depth + 1, seen)
        if node is not None:
            items.append((key, node))
    if not items:
        return None
    return PayloadGroup(kind, tuple(items), sum(node.nbytes for _, node in items))


def _children(value: Any) -> tuple[Optional[str], list[tuple[Any, Any]]]:
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return "namedtuple", list(zip(value._fields, value))
    if isinstance(value, tuple):
        return "tuple", list(enumerate(value))
    if isinstance(value, list):
        return "list", list(enumerate(value))
    if isinstance(value, dict):
        return "dict", list(value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return "dataclass", [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        return "object", list(attributes.items())
    return None, []


def iter_leaves(node: Optional[PayloadNode], path: tuple = ()
                ) -> Iterator[tuple[tuple, TensorLeaf]]:
    """Yield ``(path, leaf)`` for every tensor below ``node``, depth first, in order.

    A path is a tuple of ``(group_kind, key)`` steps from the root.
    """
    if node is None:
        return
    if isinstance(node, TensorLeaf):
        yield path, node
        return
    for key, child in node.items:
        yield from iter_leaves(child, path + ((node.kind, key),))


def payload_bytes(node: Optional[PayloadNode]) -> int:
    """Total bytes of a payload tree (0 for ``None``)."""
    return 0 if node is None else node.nbytes


def format_shape(shape: tuple[int, ...]) -> str:
    """``[1, 3, 224, 224]``-style text of a shape."""
    return "[" + ", ".join(str(s) for s in shape) + "]"


def device_type_of(model: Any, inputs: Any) -> str:
    """Where a forward of ``model`` on ``inputs`` runs: the device type of the model's first
    parameter (or buffer), else of the first tensor in ``inputs``, else ``"cpu"``."""
    if isinstance(model, torch.nn.Module):
        for tensor in list(model.parameters())[:1] + list(model.buffers())[:1]:
            return tensor.device.type
    return next((t.device.type for t in iter_tensors(inputs)), "cpu")
