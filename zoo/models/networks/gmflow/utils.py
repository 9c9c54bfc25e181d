"""Window split, the window order of tokens, the shifted-window mask, and image
normalisation for GMFlow."""

from __future__ import annotations

import functools
from typing import Callable, Optional, TypeVar

import torch

from profiling import is_counting

__all__ = ["split_windows", "window_order", "reorder_index", "shifted_window_mask",
           "IMAGENET_MEAN", "IMAGENET_STD", "image_statistics"]

#: Sizes (and devices) whose window orders and masks are kept; a mask of 2x2 windows of a
#: 48x96 map is 21 MB.
_CACHED_SIZES = 4

_Function = TypeVar("_Function", bound=Callable[..., torch.Tensor])


def _cached_per_size(entries: int) -> Callable[[_Function], _Function]:
    """Cache a tensor-making function's results per arguments, except in the counting pass,
    which makes them anew (as the official code does in every forward), so that the counts
    never depend on what an earlier forward left in the cache. The tensors are made outside
    inference mode, so a cached one also serves a forward with autograd; never modify one."""
    def decorate(make: _Function) -> _Function:
        cached = functools.lru_cache(maxsize=entries)(make)

        @functools.wraps(make)
        def get(*args, **kwargs):
            if is_counting():
                return make(*args, **kwargs)
            with torch.inference_mode(False):
                return cached(*args, **kwargs)
        get.cache_clear = cached.cache_clear
        return get
    return decorate

#: ImageNet statistics GMFlow normalises its [0, 255] inputs with.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def image_statistics(in_channels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean, std)`` of shape ``[1, C, 1, 1]`` for ``in_channels`` input channels.

    Three channels take ImageNet's statistics; one channel (grayscale) takes their averages,
    as timm does when it adapts a model to one input channel.
    """
    mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
    if in_channels != len(IMAGENET_MEAN):
        mean = mean.mean().repeat(in_channels)
        std = std.mean().repeat(in_channels)
    return mean.view(1, -1, 1, 1), std.view(1, -1, 1, 1)


def split_windows(x: torch.Tensor, num_splits: int) -> torch.Tensor:
    """``[B, H, W, C]`` -> ``[B, K*K, H/K * W/K, C]``: K×K windows, row-major, tokens flattened."""
    b, h, w, c = x.shape
    k = num_splits
    x = x.view(b, k, h // k, k, w // k, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, k * k, (h // k) * (w // k), c)


def _shift(height: int, width: int, num_splits: int) -> tuple[int, int]:
    """Swin's shift: half a window along each axis."""
    return height // num_splits // 2, width // num_splits // 2


def window_order(height: int, width: int, num_splits: int, shifted: bool,
                 device: torch.device | str = "cpu") -> torch.Tensor:
    """The row-major grid index of every token in window order, ``[H*W]`` (int64).

    Window order lists the K×K windows row-major, each window's tokens row-major; with
    ``shifted``, the windows are those of the grid rolled back by half a window (Swin's
    shifted windows). ``tokens[:, window_order(...)]`` is what rolling and
    :func:`split_windows` give, in one gather.
    """
    index = torch.arange(height * width, device=device).view(1, height, width, 1)
    if shifted:
        shift = _shift(height, width, num_splits)
        index = torch.roll(index, shifts=(-shift[0], -shift[1]), dims=(1, 2))
    return split_windows(index, num_splits).flatten()


@_cached_per_size(4 * _CACHED_SIZES)
def reorder_index(height: int, width: int, num_splits: int, source: Optional[bool],
                  target: Optional[bool], device: torch.device) -> torch.Tensor:
    """The gather index from one token order to another, cached per size and device.

    An order is ``None`` (the row-major grid) or ``shifted`` (:func:`window_order`):
    ``tokens_in_target_order = tokens_in_source_order[:, index]``.
    """
    grid = torch.arange(height * width, device=device)
    to_grid = grid if source is None else torch.argsort(
        window_order(height, width, num_splits, source, device))
    wanted = grid if target is None else window_order(height, width, num_splits, target, device)
    return to_grid[wanted]


def _region_ids(length: int, window: int, shift: int, device: torch.device) -> torch.Tensor:
    """Swin's region index along one axis after a cyclic shift: 0 for the part that stays
    inside its window, 1 and 2 for the two parts that wrap around. No shift, no regions."""
    index = torch.arange(length, device=device)
    if shift == 0:
        return torch.zeros_like(index)
    return (index >= length - window).long() + (index >= length - shift).long()


@_cached_per_size(_CACHED_SIZES)
def shifted_window_mask(height: int, width: int, num_splits: int,
                        device: torch.device | str = "cpu", *, fill: float = -100.0
                        ) -> torch.Tensor:
    """The additive attention mask of shifted windows, ``[K*K, L, L]`` with ``L = H/K * W/K``.

    After the feature map is rolled by half a window, a window can hold tokens from regions
    that are not neighbours in the image; pairs from different regions get ``fill``, others 0.
    Swin and GMFlow use -100, which leaves those pairs a softmax weight of about ``e^-100``:
    float32 denormals, which CPUs compute very slowly. ``-inf`` excludes them exactly (every
    token shares a region with itself, so no row is fully masked).

    Cached per size, device and fill (the official code builds it in every forward).
    """
    window_h, window_w = height // num_splits, width // num_splits
    shift_h, shift_w = _shift(height, width, num_splits)
    rows = _region_ids(height, window_h, shift_h, device)
    cols = _region_ids(width, window_w, shift_w, device)
    regions = (rows[:, None] * 3 + cols[None, :]).to(torch.float32)
    windows = split_windows(regions[None, :, :, None], num_splits)[0, :, :, 0]  # [K*K, L]
    different = windows[:, None, :] != windows[:, :, None]
    return torch.zeros(different.shape, device=device).masked_fill(different, fill)
