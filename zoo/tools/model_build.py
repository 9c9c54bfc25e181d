"""A ``model`` config node to a built model, its weights' initialisation seeded, and on the
meta device built without allocating its parameters."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Optional

import torch
from omegaconf import DictConfig, OmegaConf

from ..models import create_model
from ..options import check_plain_config

__all__ = ["build_model", "parameters_on_meta"]


def build_model(model_config: Any, seed: int, device: Optional[torch.device] = None
                ) -> torch.nn.Module:
    """Instantiate the ``model`` config node with the weights' initialisation seeded.

    For ``device=meta`` (and no checkpoint) every parameter is put on the meta device as it is
    registered, so that its initialisation costs nothing, whatever the model's size. A builder
    that runs the model while building (torchvision's SSDlite probes its backbone's channels)
    is built on the CPU instead.
    """
    if device is not None and device.type == "meta" and not model_config.get("checkpoint"):
        try:
            with parameters_on_meta():
                return _instantiate(model_config, seed)
        except (NotImplementedError, RuntimeError) as error:
            if "meta" not in str(error):
                raise
    return _instantiate(model_config, seed)


@contextmanager
def parameters_on_meta() -> Iterator[None]:
    """While the block runs, every parameter a module registers is moved to the meta device.

    Other tensors a builder makes stay where they are made, so a builder that computes sizes
    from tensors (torchvision's RegNet) still works; ``nn.Module.register_parameter`` is
    restored on the way out, also after an exception.
    """
    original = torch.nn.Module.register_parameter

    def register_on_meta(module: torch.nn.Module, name: str, param: Any) -> None:
        if param is not None and not param.is_meta:
            param = type(param)(param.to("meta"), requires_grad=param.requires_grad)
        original(module, name, param)

    torch.nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = original


def _instantiate(model_config: Any, seed: int) -> torch.nn.Module:
    """Build with the shipped target, :func:`zoo.create_model`, from plain values that it
    checks against the builder's types; nothing in a value is ever instantiated."""
    options = OmegaConf.to_container(model_config, resolve=True) if isinstance(
        model_config, DictConfig) else dict(model_config)
    check_plain_config({"model": options}, "in the model's options")
    options.pop("_target_", None)
    torch.manual_seed(seed)
    return create_model(str(options.pop("name")), **options)
