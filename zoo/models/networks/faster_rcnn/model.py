"""The staged Faster R-CNN: torchvision's model, its forward marked with the seed log's stages."""

from __future__ import annotations

from typing import Optional, Sequence

from torchvision.models.detection.faster_rcnn import FasterRCNN

from profiling import StageCall, stage

from zoo.options import ConfigError
from ...base import ZooModel

__all__ = ["StagedFasterRCNN", "SEED_LOG_LABELS"]

#: Labels of the users' hand-made log (seeds/001) where they differ from ``{stage}_in/_out``;
#: ``None`` leaves the line out. ``{call}`` is the call's index (the feature level).
SEED_LOG_LABELS = {
    "get_original_images_sizes": (None, None),
    "transform": ("transform_in([input])", "transform_out([images])"),
    "backbonefpn_body": (None, "backbonefpn_body_out([x])"),
    "backbonefpn_fpn": (None, "backbone_fpn_out([features])"),
    "backbonefpn_fpn_extra": (None, None),
    **{f"backbonefpn_fpn_interpolate{i}": (f"fpn_interpolate{i}_in", f"fpn_interpolate{i}_out")
       for i in range(4)},
    "rpn_head_on_5_features": ("rpn_head_in", None),
    "rpn_head_details_conv_per_feature": ("rpn_head_conv_in(on feature[{call}])",
                                          "rpn_head_conv_out(on feature[{call}])"),
    "rpn_head_details_logits_per_feature": ("rpn_head_logits_in(on feature[{call}])",
                                            "rpn_head_logits_out(on feature[{call}])"),
    "rpn_head_details_regression_per_feature": ("rpn_head_bbox_in(on feature[{call}])",
                                                "rpn_head_bbox_out(on feature[{call}])"),
    "rpn_anchor_generator": (None, "rpn_anchor_out([proposals])"),
    "roi_heads": (None, None),
    "roi_heads_box_roi_pool": (None, "roi_head_box_roi_pool"),
    "roi_heads_box_predictor": (None, None),
    "roi_heads_box_predictor_cls_score(linear)": ("roi_heads_box_predictor_cls_scores_in",
                                                  "roi_heads_box_predictor_cls_scores_out"),
    "roi_heads_box_predictor_bbox_pred(linear)": ("roi_heads_box_predictor_bbox_pred_in",
                                                  "roi_heads_box_predictor_bbox_pred_out"),
    "roi_heads_postprocess_detections": (None, None),
}

_MIN_SIDE = 32


class StagedFasterRCNN(FasterRCNN, ZooModel):
    """torchvision's ``FasterRCNN`` whose inference forward carries the seed log's stages.

    ``forward(images)`` takes a ``[B, 3, H, W]`` batch (or a list of ``[3, H, W]`` images) in
    [0, 1] and returns torchvision's detections, a list of dicts with ``boxes``, ``labels`` and
    ``scores``. The ``state_dict`` is torchvision's, so its checkpoints load unchanged.
    """

    default_input_size = (224, 224)
    task = "detection"
    stage_names = (
        "get_original_images_sizes", "transform", "backbonefpn_body", "backbonefpn_fpn",
        "backbonefpn_fpn_inner_3", "backbonefpn_fpn_layer_3",
        *[name for idx in (2, 1, 0) for name in (
            f"backbonefpn_fpn_inner_{idx}", f"backbonefpn_fpn_interpolate{idx}",
            f"backbonefpn_fpn_layer_{idx}")],
        "backbonefpn_fpn_extra", "rpn_head_on_5_features", "rpn_head_details_conv_per_feature",
        "rpn_head_details_logits_per_feature", "rpn_head_details_regression_per_feature",
        "rpn_anchor_generator", "roi_heads", "roi_heads_box_roi_pool", "roi_heads_box_head",
        "roi_heads_box_head_fc6", "roi_heads_box_head_fc7", "roi_heads_box_predictor",
        "roi_heads_box_predictor_cls_score(linear)", "roi_heads_box_predictor_bbox_pred(linear)",
        "roi_heads_postprocess_detections",
    )

    def forward(self, images, targets: Optional[list] = None):
        if self.training:
            return super().forward(images, targets)
        with stage("get_original_images_sizes", images):
            original_image_sizes = [(int(img.shape[-2]), int(img.shape[-1])) for img in images]
        with stage("transform", images) as s:
            image_list, _ = self.transform(images)
            s.output(image_list)
        features = self.backbone(image_list.tensors)
        proposals, _ = self.rpn(image_list, features)
        detections, _ = self.roi_heads(features, proposals, image_list.image_sizes)
        return self.transform.postprocess(detections, image_list.image_sizes,
                                          original_image_sizes)

    def check_input_size(self, size: Sequence[int], *, pad: bool = False) -> tuple[int, int]:
        """Any size from 32×32 up works: the transform resizes to ``min_size`` anyway."""
        height, width = int(size[0]), int(size[1])
        if min(height, width) < _MIN_SIDE:
            raise ConfigError(f"input size {height}x{width} is too small for Faster R-CNN; "
                              f"both sides must be at least {_MIN_SIDE}, e.g. "
                              f"{max(height, _MIN_SIDE)}x{max(width, _MIN_SIDE)}")
        return height, width

    def float32_parts(self) -> dict[str, str]:
        """Box coding, NMS and RoI Align stay float32 in a half-precision run."""
        return {
            "rpn_anchor_generator": "anchors, box decoding, objectness and NMS in float32 "
                                    "(proposals are float32 boxes: a bfloat16 coordinate of "
                                    "800 px is known to 4 px)",
            "roi_heads": "float32 proposals in, float32 detections out",
            "roi_heads_box_roi_pool": "RoI Align on float32 copies of the pooled levels "
                                      "(torchvision has no half-precision RoI Align on the CPU); "
                                      "pooled features cast back",
            "roi_heads_postprocess_detections": "box decoding, class softmax and NMS in "
                                                "float32; detections are float32",
        }

    def meta_note(self) -> str:
        """What the meta device assumes where the real computation depends on the data."""
        return (f"meta device: Faster R-CNN assumes NMS keeps "
                f"{self.rpn.post_nms_top_n()} proposals per image and "
                f"{self.roi_heads.detections_per_img} detections, and pools every box from the "
                f"finest FPN level; NMS and score thresholds are not run or counted")

    def payload_log_label(self, call: StageCall, direction: str) -> Optional[str]:
        """The seed log's label for a line of ``payload.log`` (``None`` leaves it out)."""
        if direction == "probe":
            return call.name
        labels = SEED_LOG_LABELS.get(call.name)
        if labels is None:
            return f"{call.name}_{direction}"
        label = labels[0 if direction == "in" else 1]
        return None if label is None else label.format(call=call.call_index)
