"""torchvision's Faster R-CNN ResNet-50 FPN, with the stages of the users' hand-made log."""

from . import builders  # noqa: F401  (registers faster_rcnn)
