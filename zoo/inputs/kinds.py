"""Inputs that follow the model: one image batch, a list of images, an image pair or a clip.

A zoo model says what its ``forward`` takes through :attr:`zoo.models.ZooModel.input_kind`:

- ``"image"``: one ``[B, C, H, W]`` batch (classification, segmentation, the zoo's Faster R-CNN);
- ``"image_list"``: a list of ``B`` images ``[C, H, W]`` (torchvision's detection models);
- ``"image_pair"``: two ``[B, C, H, W]`` batches, the first and second frames (optical flow);
- ``"clip"``: one ``[B, C, T, H, W]`` batch of ``T`` frames each (video models).

Random and real inputs go through the same arrangement (:func:`arrange_frames`): the ``B`` items
of the batch take consecutive groups of frames (one image, a pair, ``T`` frames), so a folder
of frames ``f0, f1, f2, f3`` gives a flow model the pairs ``(f0, f1)`` and ``(f2, f3)``.
"""

from __future__ import annotations

from typing import Any, Optional

import torch

from ..options import ConfigError

__all__ = ["INPUT_KINDS", "frames_per_item", "arrange_frames", "check_frames"]

#: The input kinds and what each item of the batch is.
INPUT_KINDS = {
    "image": "one image batch [B, C, H, W]",
    "image_list": "a list of B images [C, H, W]",
    "image_pair": "two image batches [B, C, H, W] (first and second frames)",
    "clip": "one clip batch [B, C, T, H, W]",
}


def check_frames(frames: Any) -> Optional[int]:
    """``input.frames`` checked: ``None`` (the model's default) or an integer >= 1."""
    if frames is None:
        return None
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise ConfigError(f"input.frames={frames!r} is not accepted; accepted: null (the "
                          f"model's default clip length) or an integer >= 1")
    return frames


def frames_per_item(kind: str, frames: Optional[int] = None) -> int:
    """How many images one item of the batch takes: 1, 2 for a pair, ``frames`` for a clip."""
    if kind not in INPUT_KINDS:
        raise ValueError(f"unknown input kind '{kind}'; known: {', '.join(INPUT_KINDS)}")
    if kind == "image_pair":
        return 2
    if kind == "clip":
        if frames is None:
            raise ValueError("a clip needs its number of frames")
        return frames
    return 1


def arrange_frames(images: torch.Tensor, kind: str, batch: int) -> tuple[Any, ...]:
    """The positional arguments of ``forward`` from ``images`` ``[N, C, H, W]``.

    ``N`` is ``batch * frames_per_item``; item ``b`` takes images ``b * k .. b * k + k - 1``.
    """
    count, channels, height, width = images.shape
    per_item = count // batch
    if count != batch * per_item or count == 0:
        raise ValueError(f"{count} images do not make {batch} equal items")
    if kind == "image":
        return (images,)
    if kind == "image_list":
        return (list(images.unbind(0)),)
    grouped = images.reshape(batch, per_item, channels, height, width)
    if kind == "image_pair":
        return grouped[:, 0].contiguous(), grouped[:, 1].contiguous()
    if kind == "clip":
        return (grouped.transpose(1, 2).contiguous(),)
    raise ValueError(f"unknown input kind '{kind}'; known: {', '.join(INPUT_KINDS)}")
