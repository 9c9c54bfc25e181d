"""An instrumented model zoo for detection, segmentation and optical flow.

``create_model(name, **options)`` builds a registered model, ``list_models()`` names them.
Every zoo model follows the calling convention of :class:`zoo.base.ZooModel`.
"""

from .errors import ConfigError
from .registry import create_model, list_models, model_options, register_model

__all__ = ["create_model", "list_models", "model_options", "register_model", "ConfigError"]
