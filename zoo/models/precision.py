"""What models use to keep a part of their forward in float32 when the run is in half precision.

``run.dtype=bfloat16`` (or ``float16``) casts a model's weights and inputs, so every operator
runs in that type. A few computations lose too much there, or have no half-precision kernel
on the CPU: coordinates and the softmax-weighted positions of flow matching, box decoding and
NMS, RoI Align. A model computes those on float32 copies of its tensors and names them in its
:attr:`~zoo.models.ZooModel.float32_parts`. In a float32 run these helpers return their
arguments unchanged, so the float32 forward (and its counts) is exactly what it was. Under ``run.autocast`` the same
parts run with autocast off (:func:`autocast_off`, :func:`float32_part`), else autocast would
compute their matrix products in half precision again.
"""

from __future__ import annotations

import functools
from contextlib import nullcontext
from typing import Any, Callable, ContextManager, Optional, Sequence, TypeVar

import torch

__all__ = ["as_float32", "float32_shaped", "autocast_off", "float32_part"]

T = TypeVar("T")


def as_float32(tensor: T) -> T:
    """``tensor`` in float32 when it is a half-precision floating tensor, else itself."""
    if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() \
            and tensor.dtype != torch.float32 and tensor.element_size() < 4:
        return tensor.float()
    return tensor


def float32_shaped(tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Float32 stand-ins with the shapes and devices of ``tensors``, for code that reads only
    their shapes and type (torchvision's anchor generator makes its anchors in the type of the
    feature maps). Half-precision tensors are replaced by one broadcast element each, which
    costs no copy; the others are returned as they are."""
    return [torch.empty((), dtype=torch.float32, device=t.device).expand(t.shape)
            if t.is_floating_point() and t.element_size() < 4 else t for t in tensors]


def autocast_off(tensor: Optional[torch.Tensor]) -> ContextManager:
    """Autocast disabled on ``tensor``'s device while autocast is on there; else nothing."""
    kind = tensor.device.type if isinstance(tensor, torch.Tensor) else None
    if kind in ("cpu", "cuda") and torch.is_autocast_enabled(kind):
        return torch.autocast(kind, enabled=False)
    return nullcontext()


def float32_part(function: Callable[..., T]) -> Callable[..., T]:
    """Run ``function`` with autocast off on the device of its first tensor argument."""
    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> T:
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        with autocast_off(first):
            return function(*args, **kwargs)
    return run
