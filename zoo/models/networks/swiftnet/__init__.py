"""SwiftNet (single scale, ResNet-18): encoder, pyramid pooling, ladder decoder, classifier."""

from .builders import swiftnet
from .checkpoint import official_key
from .model import SwiftNet

__all__ = ["SwiftNet", "official_key", "swiftnet"]
