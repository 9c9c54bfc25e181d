"""GMFlow (haofeixu/gmflow) with its CNN encoder: ``gmflow``, ``gmflow_refine``, ``gmflow_unet``.

The files follow the official split: ``backbone`` (CNN encoder), ``trident_conv``,
``transformer``, ``attention``, ``matching`` (correlation softmax), ``propagation``
(feature-flow attention and convex upsampling), ``geometry``, ``position``, ``utils``,
the models (``model``, ``refine``, ``unet``), the checks of their options
(``option_checks``) and their ``builders``.
"""

from . import builders  # noqa: F401  (registers the models)
from .model import GMFlow
from .refine import GMFlowRefine
from .unet import GMFlowUNet

__all__ = ["GMFlow", "GMFlowRefine", "GMFlowUNet"]
