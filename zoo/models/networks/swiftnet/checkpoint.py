"""Loading the official SwiftNet checkpoints (orsic/swiftnet) into :class:`~.model.SwiftNet`.

The official ``SemsegModel(resnet18(...), num_classes)`` names its weights after its classes;
ours follow the torchstat table of the users' notes. The mapping, key by key:

================================================  =========================================
official                                          ours
================================================  =========================================
``backbone.img_mean``, ``backbone.img_std``       ``img_mean``, ``img_std``
``backbone.conv1.*``, ``backbone.bn1.*``          ``encoder.conv1.*``, ``encoder.bn1.*``
``backbone.layer{1-4}.*``                         ``encoder.layer{1-4}.*``
``backbone.spp.spp.*``                            ``spp.spp.*``
``backbone.upsample.{i}.bottleneck.*``            ``decoder.up{i+1}.skip_conv.*``
``backbone.upsample.{i}.blend_conv.*``            ``decoder.up{i+1}.blend_conv.*``
``logits.*``                                      ``post.*``
================================================  =========================================

``backbone.upsample.0`` is the deepest block (it takes the layer-3 skip), as our ``up1``.
A ``module.`` prefix (``nn.DataParallel``) is dropped; other keys, ours included, pass through.
"""

from __future__ import annotations

import re

__all__ = ["official_key"]

_RULES = (
    (re.compile(r"^module\."), lambda m: ""),
    (re.compile(r"^backbone\.(img_mean|img_std)$"), lambda m: m[1]),
    (re.compile(r"^backbone\.(conv1|bn1|layer\d)\."), lambda m: f"encoder.{m[1]}."),
    (re.compile(r"^backbone\.spp\."), lambda m: "spp."),
    (re.compile(r"^backbone\.upsample\.(\d+)\.bottleneck\."),
     lambda m: f"decoder.up{int(m[1]) + 1}.skip_conv."),
    (re.compile(r"^backbone\.upsample\.(\d+)\.blend_conv\."),
     lambda m: f"decoder.up{int(m[1]) + 1}.blend_conv."),
    (re.compile(r"^logits\."), lambda m: "post."),
)


def official_key(key: str) -> str:
    """Our parameter name for the official SwiftNet ``state_dict`` key ``key``."""
    for pattern, replacement in _RULES:
        key = pattern.sub(replacement, key, count=1)
    return key
