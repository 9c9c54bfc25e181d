"""torchvision's detection models on the meta device.

On the meta device a tensor has a shape but no values, so the steps of a detector whose output
size depends on the values (score thresholds, NMS, the FPN level each box is pooled from,
pasting masks into their boxes, reading keypoints out of resized heatmaps) cannot run. As the
zoo's Faster R-CNN does, the forward on meta inputs assumes their outcome instead, with the
shapes and operation counts that outcome gives:

- every score threshold and small-box filter keeps every candidate;
- NMS keeps every box, in score order, so the model's own limits set the counts: the RPN keeps
  ``post_nms_top_n`` proposals, a detector ``detections_per_img`` detections (after its per-level
  ``topk_candidates`` for RetinaNet, FCOS and SSD);
- every box is pooled from the finest FPN level (same output shape and cost per box);
- keypoints are read from the heatmaps at their own resolution, and masks are resized to the
  whole image, rather than to each box.

These steps are not counted as the real ones; everything before them is exact. The
assumptions hold only while the forward runs (:func:`meta_assumptions`); on real tensors
the model is torchvision's, unchanged.
"""

from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Any, Iterator, Optional

import torch
import torch.nn.functional as F

__all__ = ["MetaSafeDetector", "meta_assumptions", "finest_level_roi_align"]


def _keep_all_in_score_order(boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor,
                             iou_threshold: float) -> torch.Tensor:
    """``batched_nms`` on meta: every box is kept, best score first."""
    return torch.argsort(scores, descending=True)


def finest_level_roi_align(x_filtered, boxes, output_size, sampling_ratio, scales, mapper):
    """``MultiScaleRoIAlign`` on meta: every box is pooled from the finest level (the same
    output shape and cost per box as the real pooler, whose level depends on box sizes)."""
    from torchvision.ops import roi_align
    from torchvision.ops.poolers import _convert_to_roi_format

    return roi_align(x_filtered[0], _convert_to_roi_format(boxes), output_size=output_size,
                     spatial_scale=scales[0], sampling_ratio=sampling_ratio)


def _keypoints_at_heatmap_resolution(maps: torch.Tensor, rois: torch.Tensor):
    """``heatmaps_to_keypoints`` on meta: the maximum of each heatmap at its own resolution,
    mapped into its box (torchvision first resizes each heatmap to its box's size)."""
    height, width = maps.shape[-2:]
    scores, position = maps.flatten(2).max(dim=2)
    box_width = (rois[:, 2] - rois[:, 0]).clamp(min=1)[:, None]
    box_height = (rois[:, 3] - rois[:, 1]).clamp(min=1)[:, None]
    x = (position % width + 0.5) * box_width / width + rois[:, 0, None]
    y = (position // width + 0.5) * box_height / height + rois[:, 1, None]
    return torch.stack([x, y, torch.ones_like(x)], dim=2), scores


def _masks_over_whole_image(masks: torch.Tensor, boxes: torch.Tensor, img_shape, padding=1):
    """``paste_masks_in_image`` on meta: each mask resized to the whole image."""
    return F.interpolate(masks, size=tuple(int(s) for s in img_shape), mode="bilinear",
                         align_corners=False)


@contextmanager
def _replaced(module: Any, name: str, value: Any) -> Iterator[None]:
    original = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, original)


@contextmanager
def meta_assumptions() -> Iterator[None]:
    """While the block runs, torchvision's data-dependent detection steps take the outcomes
    this module's docstring lists (everything is restored on the way out)."""
    import torch.fx.experimental._config as fx_config
    import torchvision.models.detection.roi_heads as roi_heads
    import torchvision.models.detection.transform as transform
    import torchvision.ops.boxes as boxes
    import torchvision.ops.poolers as poolers

    with ExitStack() as stack:
        stack.enter_context(fx_config.patch(meta_nonzero_assume_all_nonzero=True))
        stack.enter_context(_replaced(boxes, "batched_nms", _keep_all_in_score_order))
        stack.enter_context(_replaced(poolers, "_multiscale_roi_align",
                                      finest_level_roi_align))
        stack.enter_context(_replaced(roi_heads, "heatmaps_to_keypoints",
                                      _keypoints_at_heatmap_resolution))
        stack.enter_context(_replaced(transform, "paste_masks_in_image",
                                      _masks_over_whole_image))
        yield


def _is_meta(images: Any) -> bool:
    first = images[0] if isinstance(images, (list, tuple)) and images else images
    return isinstance(first, torch.Tensor) and first.is_meta


class MetaSafeDetector:
    """Mixin of a torchvision detector (placed before its class): on meta inputs the forward
    runs under :func:`meta_assumptions`; ``meta_note`` states them with the model's numbers."""

    def forward(self, images, targets=None):
        if _is_meta(images):
            with meta_assumptions():
                return super().forward(images, targets)
        return super().forward(images, targets)

    def meta_note(self) -> Optional[str]:
        """What the meta device assumes, with this model's limits."""
        rpn, heads = getattr(self, "rpn", None), getattr(self, "roi_heads", None)
        name = type(self).__name__
        if rpn is not None and heads is not None:
            parts = [f"NMS keeps every box, so the RPN keeps {rpn.post_nms_top_n()} proposals "
                     f"per image and the box head {heads.detections_per_img} detections",
                     "every box is pooled from the finest FPN level"]
            if heads.has_mask():
                parts.append("masks are resized to the whole image rather than to their box")
            if heads.has_keypoint():
                parts.append("keypoints are read from heatmaps at their own resolution")
        else:
            parts = [f"NMS keeps every box, so {getattr(self, 'topk_candidates', '?')} "
                     f"candidates per level and {getattr(self, 'detections_per_img', '?')} "
                     f"detections per image are kept"]
        return (f"meta device: {name} assumes every score threshold keeps every candidate, "
                + "; ".join(parts) + "; these data-dependent steps are not run or counted")
