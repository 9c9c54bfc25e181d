"""Window split and merge, the shifted-window mask, and image normalisation for GMFlow."""

from __future__ import annotations

import torch

__all__ = ["split_windows", "merge_windows", "shifted_window_mask", "IMAGENET_MEAN",
           "IMAGENET_STD", "image_statistics"]

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


def merge_windows(x: torch.Tensor, num_splits: int, height: int, width: int) -> torch.Tensor:
    """Inverse of :func:`split_windows`: ``[B, K*K, H/K * W/K, C]`` -> ``[B, H, W, C]``."""
    b, _, _, c = x.shape
    k = num_splits
    x = x.view(b, k, k, height // k, width // k, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, height, width, c)


def _region_ids(length: int, window: int, shift: int, device: torch.device) -> torch.Tensor:
    """Swin's region index along one axis after a cyclic shift: 0 for the part that stays
    inside its window, 1 and 2 for the two parts that wrap around. No shift, no regions."""
    index = torch.arange(length, device=device)
    if shift == 0:
        return torch.zeros_like(index)
    return (index >= length - window).long() + (index >= length - shift).long()


def shifted_window_mask(height: int, width: int, num_splits: int,
                        device: torch.device | str = "cpu", *, fill: float = -100.0
                        ) -> torch.Tensor:
    """The additive attention mask of shifted windows, ``[K*K, L, L]`` with ``L = H/K * W/K``.

    After the feature map is rolled by half a window, a window can hold tokens from regions
    that are not neighbours in the image; pairs from different regions get ``fill``, others 0.
    Swin and GMFlow use -100, which leaves those pairs a softmax weight of about ``e^-100``:
    float32 denormals, which CPUs compute very slowly. ``-inf`` excludes them exactly (every
    token shares a region with itself, so no row is fully masked).
    """
    window_h, window_w = height // num_splits, width // num_splits
    rows = _region_ids(height, window_h, window_h // 2, device)
    cols = _region_ids(width, window_w, window_w // 2, device)
    regions = (rows[:, None] * 3 + cols[None, :]).to(torch.float32)
    windows = split_windows(regions[None, :, :, None], num_splits)[0, :, :, 0]  # [K*K, L]
    different = windows[:, None, :] != windows[:, :, None]
    return torch.zeros(different.shape, device=device).masked_fill(different, fill)
