"""Staged versions of torchvision's detection parts: same modules and weights, marked forwards.

Each class subclasses the torchvision part and only overrides ``forward`` for inference, with
the same computation as torchvision's and stage markers around its steps. Training falls back
to torchvision's own forward. :func:`stage_parts` swaps the classes of a built model's parts in
place, so the ``state_dict`` is exactly torchvision's.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.roi_heads import RoIHeads
from torchvision.models.detection.rpn import (RegionProposalNetwork, RPNHead,
                                              concat_box_prediction_layers)
from torchvision.ops.feature_pyramid_network import FeaturePyramidNetwork
from torchvision.ops.poolers import _filter_input, _setup_scales

from profiling import probe, stage

from ..detection_meta import finest_level_roi_align

from ...precision import as_float32, float32_shaped

#: Per pyramid level: the names of its inner, layer and interpolate stages and of its top-down
#: and lateral probes, made once rather than in every forward.
_LEVEL_NAMES = [(f"backbonefpn_fpn_inner_{i}", f"backbonefpn_fpn_layer_{i}",
                 f"backbonefpn_fpn_interpolate{i}", f"sum{i}_topdown", f"sum{i}_lateral")
                for i in range(16)]
_HEAD_NAMES = [f"rpn_head_on_{n}_features" for n in range(17)]

__all__ = ["stage_parts", "unstage_parts"]


class StagedBackboneWithFPN(BackboneWithFPN):
    """``backbonefpn_body`` then ``backbonefpn_fpn``."""

    def forward(self, x: torch.Tensor) -> "OrderedDict[str, torch.Tensor]":
        with stage("backbonefpn_body", x) as s:
            features = s.output(self.body(x))
        with stage("backbonefpn_fpn", features) as s:
            return s.output(self.fpn(features))


class StagedFPN(FeaturePyramidNetwork):
    """Per level ``inner_i``, ``interpolate{i}``, the ``sum{i}`` probes, ``layer_i``; ``extra``."""

    def _inner(self, x: torch.Tensor, idx: int) -> torch.Tensor:
        with stage(_LEVEL_NAMES[idx][0], x) as s:
            return s.output(self.inner_blocks[idx](x))

    def _layer(self, x: torch.Tensor, idx: int) -> torch.Tensor:
        with stage(_LEVEL_NAMES[idx][1], x) as s:
            return s.output(self.layer_blocks[idx](x))

    def forward(self, x: "dict[str, torch.Tensor]") -> "OrderedDict[str, torch.Tensor]":
        names, features = list(x.keys()), list(x.values())
        last = len(features) - 1
        last_inner = self._inner(features[last], last)
        results = [self._layer(last_inner, last)]
        for idx in range(last - 1, -1, -1):
            inner_lateral = self._inner(features[idx], idx)
            with stage(_LEVEL_NAMES[idx][2], last_inner) as s:
                inner_top_down = s.output(F.interpolate(last_inner, size=inner_lateral.shape[-2:],
                                                        mode="nearest"))
            probe(_LEVEL_NAMES[idx][3], inner_top_down)
            probe(_LEVEL_NAMES[idx][4], inner_lateral)
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self._layer(last_inner, idx))
        if self.extra_blocks is not None:
            with stage("backbonefpn_fpn_extra", results) as s:
                results, names = self.extra_blocks(results, features, names)
                s.output(results)
        return OrderedDict(zip(names, results))


class StagedRPNHead(RPNHead):
    """``rpn_head_on_{n}_features`` with the per-feature conv, logits and regression."""

    def forward(self, x: "list[torch.Tensor]"):
        logits, bbox_reg = [], []
        with stage(_HEAD_NAMES[len(x)], x):
            for feature in x:
                with stage("rpn_head_details_conv_per_feature", feature) as s:
                    t = s.output(self.conv(feature))
                with stage("rpn_head_details_logits_per_feature", t) as s:
                    logits.append(s.output(self.cls_logits(t)))
                with stage("rpn_head_details_regression_per_feature", t) as s:
                    bbox_reg.append(s.output(self.bbox_pred(t)))
        return logits, bbox_reg


class StagedRPN(RegionProposalNetwork):
    """The head, then ``rpn_anchor_generator``: anchors, box decoding and proposal filtering,
    in float32 whatever the features' type (proposals are float32 boxes)."""

    def forward(self, images, features, targets=None):
        if self.training:
            return super().forward(images, features, targets)
        features = list(features.values())
        objectness, pred_bbox_deltas = self.head(features)
        with stage("rpn_anchor_generator", images, features) as s:
            anchors = self.anchor_generator(images, float32_shaped(features))
            num_anchors_per_level = [o[0].numel() for o in objectness]
            objectness, pred_bbox_deltas = concat_box_prediction_layers(objectness,
                                                                        pred_bbox_deltas)
            objectness, pred_bbox_deltas = as_float32(objectness), as_float32(pred_bbox_deltas)
            proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors)
            proposals = proposals.view(len(anchors), -1, 4)
            if proposals.is_meta:
                boxes = self._assumed_proposals(proposals, objectness, num_anchors_per_level)
            else:
                boxes, _ = self.filter_proposals(proposals, objectness, images.image_sizes,
                                                 num_anchors_per_level)
            s.output(boxes)
        return boxes, {}

    def _assumed_proposals(self, proposals, objectness, num_anchors_per_level):
        """On the meta device: the per-level top-k as usual, then the first
        ``post_nms_top_n`` boxes, as if NMS kept that many (its outcome depends on the data)."""
        objectness = objectness.reshape(proposals.shape[0], -1)
        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)
        batch_idx = torch.arange(proposals.shape[0], device=proposals.device)[:, None]
        return [boxes[: self.post_nms_top_n()] for boxes in proposals[batch_idx, top_n_idx]]


class StagedRoIHeads(RoIHeads):
    """``roi_heads`` with ``box_roi_pool``, ``box_head``, ``box_predictor`` and
    ``postprocess_detections``.

    With half-precision features, RoI Align pools float32 copies of the pooled levels
    (torchvision has no bfloat16 or float16 RoI Align on the CPU) and casts the pooled features
    back; box decoding, the class softmax and NMS run in float32, so detections are float32.
    """

    def forward(self, features, proposals, image_shapes, targets=None):
        if self.training or self.has_mask() or self.has_keypoint():
            return super().forward(features, proposals, image_shapes, targets)
        with stage("roi_heads", features, proposals) as s:
            with stage("roi_heads_box_roi_pool", features, proposals) as p:
                pool = self._assumed_roi_pool if proposals[0].is_meta else self.box_roi_pool
                dtype = next(iter(features.values())).dtype
                pooled = {name: as_float32(level) if name in self.box_roi_pool.featmap_names
                          else level for name, level in features.items()}
                box_features = p.output(pool(pooled, proposals, image_shapes).to(dtype))
            with stage("roi_heads_box_head", box_features) as p:
                box_features = p.output(self.box_head(box_features))
            with stage("roi_heads_box_predictor", box_features) as p:
                class_logits, box_regression = p.output(self.box_predictor(box_features))
            with stage("roi_heads_postprocess_detections", class_logits, box_regression) as p:
                postprocess = (self._assumed_detections if class_logits.is_meta
                               else self.postprocess_detections)
                boxes, scores, labels = p.output(postprocess(
                    as_float32(class_logits), as_float32(box_regression), proposals,
                    image_shapes))
            result = [{"boxes": b, "labels": l, "scores": c}
                      for b, c, l in zip(boxes, scores, labels)]
            return s.output(result), {}

    def _assumed_roi_pool(self, features, proposals, image_shapes):
        """On the meta device: every box pooled from the finest level (same output shape and
        operation count as the real pooler, whose level assignment depends on box sizes)."""
        pooler = self.box_roi_pool
        levels = _filter_input(features, pooler.featmap_names)
        if pooler.scales is None or pooler.map_levels is None:
            pooler.scales, pooler.map_levels = _setup_scales(levels, image_shapes,
                                                             pooler.canonical_scale,
                                                             pooler.canonical_level)
        return finest_level_roi_align(levels, proposals, pooler.output_size,
                                      pooler.sampling_ratio, pooler.scales, pooler.map_levels)

    def _assumed_detections(self, class_logits, box_regression, proposals, image_shapes):
        """On the meta device: decoding and softmax as usual, then the first
        ``detections_per_img`` class-boxes, as if thresholding and NMS kept that many."""
        pred_boxes = self.box_coder.decode(box_regression, proposals)
        pred_scores = F.softmax(class_logits, -1)
        sizes = [len(b) for b in proposals]
        count, keep = class_logits.shape[-1] - 1, self.detections_per_img
        all_boxes, all_scores, all_labels = [], [], []
        for boxes, scores in zip(pred_boxes.split(sizes), pred_scores.split(sizes)):
            labels = torch.arange(1, count + 1, device=scores.device).expand(len(scores), count)
            all_boxes.append(boxes[:, 1:].reshape(-1, 4)[:keep])
            all_scores.append(scores[:, 1:].reshape(-1)[:keep])
            all_labels.append(labels.reshape(-1)[:keep])
        return all_boxes, all_scores, all_labels


class StagedTwoMLPHead(TwoMLPHead):
    """``fc6`` and ``fc7`` (each followed by its ReLU)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(start_dim=1)
        with stage("roi_heads_box_head_fc6", x) as s:
            x = s.output(F.relu(self.fc6(x)))
        with stage("roi_heads_box_head_fc7", x) as s:
            return s.output(F.relu(self.fc7(x)))


class StagedFastRCNNPredictor(FastRCNNPredictor):
    """The two linear layers ``cls_score`` and ``bbox_pred``."""

    def forward(self, x: torch.Tensor):
        x = x.flatten(start_dim=1)
        with stage("roi_heads_box_predictor_cls_score(linear)", x) as s:
            scores = s.output(self.cls_score(x))
        with stage("roi_heads_box_predictor_bbox_pred(linear)", x) as s:
            bbox_deltas = s.output(self.bbox_pred(x))
        return scores, bbox_deltas


_STAGED = {BackboneWithFPN: StagedBackboneWithFPN, FeaturePyramidNetwork: StagedFPN,
           RPNHead: StagedRPNHead, RegionProposalNetwork: StagedRPN, RoIHeads: StagedRoIHeads,
           TwoMLPHead: StagedTwoMLPHead, FastRCNNPredictor: StagedFastRCNNPredictor}


def stage_parts(model: torch.nn.Module) -> torch.nn.Module:
    """Swap each torchvision part of ``model`` for its staged subclass, in place."""
    for module in model.modules():
        staged = _STAGED.get(type(module))
        if staged is not None:
            module.__class__ = staged
    return model


def unstage_parts(model: torch.nn.Module) -> torch.nn.Module:
    """Give each staged part back its torchvision class, in place (the plain model)."""
    originals = {staged: original for original, staged in _STAGED.items()}
    for module in model.modules():
        original = originals.get(type(module))
        if original is not None:
            module.__class__ = original
    return model
