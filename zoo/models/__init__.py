"""The models room: the zoo's networks (:mod:`.networks`, each registered by name) and the kit
that builds them: :class:`ZooModel`, the calling convention every zoo model follows;
:func:`register_model` and :func:`create_model` (:mod:`.registry`), checkpoints, stage
selection and the float32 parts of a lower-precision run (:mod:`.precision`).

A model of your own subclasses ``zoo.models.ZooModel`` and registers its builder with
``@zoo.models.register_model`` (CONTRIBUTING.md). Above :mod:`zoo.inputs`, below
:mod:`zoo.deploy`.
"""

from .base import TASK_METRICS, ZooModel
from .registry import create_model, list_models, model_options, register_model

__all__ = ["TASK_METRICS", "ZooModel", "create_model", "list_models", "model_options",
           "register_model"]
