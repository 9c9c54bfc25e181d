"""The calling convention every zoo model follows, and what the models share."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import torch
from torch import nn

from ..inputs import arrange_frames, frames_per_item
from ..options import ConfigError

__all__ = ["ZooModel", "TASK_METRICS", "random_images", "sum_input_channels"]

#: What each task's output is judged by when an int8 runtime's output is set against the
#: float32 one (:func:`zoo.deploy.int8_metric`): the share of samples whose top-1 class holds,
#: the share of pixels whose label holds, the mean end-point error of the flow in pixels; a
#: detector's boxes have no cheap metric (``None``).
TASK_METRICS: dict[str, Optional[str]] = {"classification": "top1_agreement",
                                          "segmentation": "pixel_agreement",
                                          "flow": "end_point_error_px", "detection": None}


def random_images(batch: int, channels: int, size: Sequence[int], *, generator: torch.Generator,
                  device: Any = "cpu", scale: float = 1.0) -> torch.Tensor:
    """A seeded ``[batch, channels, H, W]`` float tensor uniform in ``[0, scale)``.

    The values are drawn on the CPU so that every device sees the same data, then moved. On
    the meta device nothing is drawn: the tensor is made there directly, so a meta analysis
    needs no memory for its inputs at any size.
    """
    shape = (batch, channels, int(size[0]), int(size[1]))
    if torch.device(device).type == "meta":
        return torch.empty(shape, device="meta")
    return torch.rand(shape, generator=generator).mul_(scale).to(device)


class ZooModel(nn.Module):
    """Base of the zoo's models: one calling convention, whatever the inputs.

    ``model(*model.example_inputs(batch, size, generator=g, device=d))`` runs a forward pass.
    A model describes itself without being run: :attr:`stage_names` lists its stages in
    forward order, :attr:`in_channels` and :attr:`default_input_size` say what it takes.

    Subclasses set the class attributes (:attr:`input_kind` says whether the forward takes an
    image batch, a list of images, an image pair or a clip) and override
    :meth:`check_input_size` when not every size works.
    """

    #: stage names in forward order (a stage called several times is listed once).
    stage_names: tuple[str, ...] = ()
    #: ``(H, W)`` used when the configuration gives no size.
    default_input_size: tuple[int, int] = (224, 224)
    #: the upper end of the input values: 1.0 for [0, 1) images, 255.0 for [0, 255).
    input_scale: float = 1.0
    in_channels: int = 3
    #: what ``forward`` takes, one of :data:`zoo.inputs.INPUT_KINDS`.
    input_kind: str = "image"
    #: per-channel mean and std (in [0, 1] units) with which real images are normalised before
    #: the forward, as the model's weights expect; ``None``: images in ``[0, input_scale]``.
    input_mean: Optional[tuple[float, ...]] = None
    input_std: Optional[tuple[float, ...]] = None
    #: frames per clip when ``input.frames`` is null (``input_kind == "clip"`` only).
    default_frames: Optional[int] = None
    #: module path of the first convolution, whose checkpoint weight is adapted to
    #: :attr:`in_channels` on loading (``None``: no adaptation).
    first_conv: Optional[str] = None
    #: what the model's output is, one of :data:`TASK_METRICS` (``None``: undeclared, judged
    #: by no task metric).
    task: Optional[str] = None

    @property
    def int8_task_metric(self) -> Optional[str]:
        """The metric of :data:`TASK_METRICS` by which the int8 runtime's output is judged
        against the float32 one, as the model's :attr:`task` declares it."""
        return TASK_METRICS.get(self.task) if self.task is not None else None

    def example_inputs(self, batch: int, size: Sequence[int], *,
                       generator: Optional[torch.Generator] = None, device: Any = "cpu",
                       frames: Optional[int] = None) -> tuple[Any, ...]:
        """Seeded positional arguments of ``forward`` for ``batch`` items of ``size``, in the
        form :attr:`input_kind` names (``frames`` per clip; ``None``: :attr:`default_frames`).

        The values are uniform in ``[0, input_scale)``, not normalised.
        """
        generator = generator if generator is not None else torch.Generator().manual_seed(0)
        count = batch * frames_per_item(self.input_kind, frames or self.default_frames)
        images = random_images(count, self.in_channels, size, generator=generator,
                               device=device, scale=self.input_scale)
        return arrange_frames(images, self.input_kind, batch)

    def check_input_size(self, size: Sequence[int], *, pad: bool = False) -> tuple[int, int]:
        """Validate ``size`` and return the ``(H, W)`` the network is fed.

        Models with size constraints raise :class:`~zoo.options.ConfigError` naming the nearest
        valid sizes, or, with ``pad=True``, return the padded size they will pad the input to.
        """
        return int(size[0]), int(size[1])

    def check_channels(self, images: torch.Tensor) -> None:
        """Raise :class:`~zoo.options.ConfigError` unless ``images`` is ``[B, in_channels, H, W]``.

        Models call it at the top of ``forward``, so a channel mismatch reads as a configuration
        error rather than a convolution's shape error deep inside the network.
        """
        if images.dim() != 4 or images.shape[1] != self.in_channels:
            raise ConfigError(f"{type(self).__name__} takes images [B, {self.in_channels}, H, W] "
                              f"(model.in_channels={self.in_channels}); got a tensor of shape "
                              f"{list(images.shape)}")

    def pad_inputs(self, inputs: tuple[Any, ...], size: Sequence[int]) -> tuple[Any, ...]:
        """Pad every image batch in ``inputs`` to ``size`` by edge replication, split evenly
        between the two sides of each axis (as GMFlow's and RAFT's ``InputPadder`` do)."""
        return tuple(_pad_image(x, size) if isinstance(x, torch.Tensor) and x.dim() == 4 else x
                     for x in inputs)

    def adapt_state_dict(self, state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Adapt a checkpoint's tensors to this configuration.

        The first convolution's weight (the module at :attr:`first_conv`) of a checkpoint made
        for another number of input channels is adapted with :func:`sum_input_channels`.
        """
        key = f"{self.first_conv}.weight" if self.first_conv else None
        weight = state_dict.get(key) if key else None
        if weight is None or weight.dim() != 4 or weight.shape[1] == self.in_channels:
            return state_dict
        return {**state_dict, key: sum_input_channels(weight, self.in_channels)}

    def float32_parts(self) -> dict[str, str]:
        """The stages whose payload keeps float32 tensors when the run is in half precision
        (``run.dtype=bfloat16|float16``), ``{stage_name: what stays float32 and why}``: parts
        computed on float32 copies (:mod:`zoo.models.precision`) because half precision is too
        coarse there or has no kernel. Every other stage's floating tensors take ``run.dtype``."""
        return {}

    def meta_note(self) -> Optional[str]:
        """What a run on the meta device assumes where the model's control flow depends on the
        data (``None`` when nothing does)."""
        return None

    def stage_paths(self) -> dict[str, str]:
        """Stages attached to submodules by path, ``{stage_name: module_path}``: the model's own
        (:meth:`own_stage_paths`) and those added by ``model.stage_depth`` and
        ``model.stage_paths`` (:meth:`add_stage_paths`)."""
        return {**self.own_stage_paths(), **self.__dict__.get("_added_stage_paths", {})}

    def own_stage_paths(self) -> dict[str, str]:
        """The stages this model attaches by path itself; none here (a zoo model marks its
        stages in its forward)."""
        return {}

    def add_stage_paths(self, paths: Mapping[str, str]) -> None:
        """Make each ``{stage_name: module_path}`` of ``paths`` a stage too (see
        :func:`zoo.models.stage_selection.select_stage_paths`)."""
        self.__dict__["_added_stage_paths"] = {**self.__dict__.get("_added_stage_paths", {}),
                                               **paths}


def _pad_image(images: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
    pad_h, pad_w = int(size[0]) - images.shape[-2], int(size[1]) - images.shape[-1]
    if pad_h == 0 and pad_w == 0:
        return images
    padding = [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2]
    return nn.functional.pad(images, padding, mode="replicate")


def sum_input_channels(weight: torch.Tensor, in_channels: int) -> torch.Tensor:
    """Adapt a first-conv ``weight`` to ``in_channels`` inputs.

    For one channel, the kernels are summed over the checkpoint's channels, so a grayscale image
    gives the response the original gave to the same value in every channel. For other counts,
    the kernels are repeated cyclically and rescaled to keep the response magnitude.
    """
    trained = weight.shape[1]
    if in_channels == trained:
        return weight
    if in_channels == 1:
        return weight.sum(dim=1, keepdim=True)
    index = torch.arange(in_channels) % trained
    return weight[:, index] * (trained / in_channels)
