"""Registration of the staged Faster R-CNN."""

from __future__ import annotations

from torchvision.models import resnet50
from torchvision.models.detection.backbone_utils import _resnet_fpn_extractor
from torchvision.models.detection.faster_rcnn import FasterRCNN
from torchvision.ops import FrozenBatchNorm2d

from zoo.options import check_minimum
from ...registry import register_model
from .model import StagedFasterRCNN
from .staged_parts import stage_parts

__all__ = ["faster_rcnn"]


@register_model
def faster_rcnn(*, num_classes: int = 91, min_size: int = 800, max_size: int = 1333,
                rpn_post_nms_top_n_test: int = 1000, box_detections_per_img: int = 100
                ) -> StagedFasterRCNN:
    """Faster R-CNN ResNet-50 FPN (torchvision's ``fasterrcnn_resnet50_fpn``), staged.

    Built as torchvision builds it for its COCO weights (frozen BatchNorm, the last three
    ResNet stages trainable: 41,755,286 parameters), but randomly initialised: nothing is
    downloaded. ``model.checkpoint=`` loads torchvision's weights
    (``fasterrcnn_resnet50_fpn_coco-258fb6c6.pth``) or any state dict of the same model from a
    local file. The model is returned in eval mode.
    """
    check_minimum(1, num_classes=num_classes, min_size=min_size, max_size=max_size,
                  rpn_post_nms_top_n_test=rpn_post_nms_top_n_test,
                  box_detections_per_img=box_detections_per_img)
    backbone = _resnet_fpn_extractor(resnet50(weights=None, norm_layer=FrozenBatchNorm2d), 3)
    model = FasterRCNN(backbone, num_classes=num_classes, min_size=min_size, max_size=max_size,
                       rpn_post_nms_top_n_test=rpn_post_nms_top_n_test,
                       box_detections_per_img=box_detections_per_img)
    stage_parts(model)
    model.__class__ = StagedFasterRCNN
    return model.eval()
