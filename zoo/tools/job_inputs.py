"""The inputs of a run in the form its model takes, and the model deployed with them."""

from __future__ import annotations

from typing import Any, Optional

import torch
from omegaconf import DictConfig, ListConfig, OmegaConf

from ..deploy import Deployment
from ..options import ConfigError
from ..inputs import INPUT_KINDS, MAX_PIXELS, check_frames, image_inputs
from .model_build import build_model

__all__ = ["make_inputs", "prepare"]


def _input_size(cfg: DictConfig, model: torch.nn.Module) -> tuple[int, int]:
    size = cfg.input.size
    if size is None:
        return tuple(getattr(model, "default_input_size", (224, 224)))
    pair = list(size) if isinstance(size, ListConfig) else None
    if pair is None or len(pair) != 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in pair):
        raise ConfigError(f"input.size must be [H, W] with positive integers, got "
                          f"{pair if pair is not None else repr(size)}")
    return pair[0], pair[1]


def make_inputs(cfg: DictConfig, model: torch.nn.Module, device: torch.device
                ) -> tuple[tuple[Any, ...], list[str]]:
    """The inputs of the run in the form the model takes (:mod:`zoo.inputs.kinds`): seeded random
    ones, or the files of ``input.images`` converted as the model expects
    (:mod:`zoo.inputs.images`), padded if ``input.pad`` asks for it; and notes (the files, the
    rule, the padding)."""
    batch = int(cfg.input.batch)
    if batch < 1:
        raise ConfigError(f"input.batch must be at least 1, got {batch}")
    size = _input_size(cfg, model)
    fed = tuple(model.check_input_size(size, pad=bool(cfg.input.get("pad", False))))
    kind = getattr(model, "input_kind", "image")
    frames = check_frames(cfg.input.get("frames")) if kind == "clip" else None
    frames = frames or getattr(model, "default_frames", None)
    images = cfg.input.get("images")
    notes: list[str] = []
    if images is not None:  # an empty value is refused, never replaced by random inputs
        images = OmegaConf.to_container(images) if isinstance(images, ListConfig) else images
        inputs, notes = image_inputs(model, images, batch=batch, size=size, frames=frames,
                                     device=device,
                                     max_pixels=int(cfg.input.get("max_pixels", MAX_PIXELS)))
    else:
        generator = torch.Generator().manual_seed(int(cfg.run.seed))
        extra = {"frames": frames} if kind == "clip" else {}
        inputs = model.example_inputs(batch, size, generator=generator, device=device, **extra)
    if kind == "clip":
        notes.append(f"input: clips of {frames} frames ([B, C, T, H, W])")
    elif cfg.input.get("frames") is not None:
        notes.append(f"input.frames={cfg.input.frames} is unused: this model takes "
                     f"{INPUT_KINDS[kind]}, not clips")
    if fed != size:
        inputs = model.pad_inputs(inputs, fed)
        notes.append(f"input padded from {size[0]}x{size[1]} to {fed[0]}x{fed[1]} "
                     f"(edge replication, as InputPadder)")
    return inputs, notes


def prepare(cfg: DictConfig, device: torch.device, deployment: Optional[Deployment] = None
            ) -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, str], list[str]]:
    """The model in eval mode on ``device``, its seeded inputs, its attached stages, and notes
    (padding; on the meta device, what the model assumes there), deployed as ``deployment``
    says (by default the one ``cfg.run`` describes)."""
    model = build_model(cfg.model, int(cfg.run.seed), device).eval().to(device)
    inputs, notes = make_inputs(cfg, model, device)
    if device.type == "meta" and model.meta_note():
        notes.append(model.meta_note())
    if deployment is None:
        deployment = Deployment.from_config(cfg.run)
    model, inputs = deployment.apply(model, inputs)  # run.dtype & co.
    return model, inputs, model.stage_paths(), notes
