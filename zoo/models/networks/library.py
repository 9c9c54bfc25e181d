"""Any model of torchvision or timm as a zoo model: ``model=torchvision model.arch=resnet50``.

The library builds the model (randomly initialised; nothing is downloaded); the zoo then gives
the instance the zoo's calling convention by making its class a subclass of both the
library's class and :class:`~zoo.models.ZooModel`. The modules, the forward and the
``state_dict`` keys stay the library's own, so the library's checkpoints load unchanged. Its
top-level children are its stages (``stage_paths()``), attached by path when profiling.

The inputs follow the model's family (:attr:`~zoo.models.ZooModel.input_kind`): torchvision's
detection models take a list of images, its ``raft_*`` an image pair, its video models a clip
``[B, C, T, H, W]``, every other model one image batch. The normalisation of real images is the
one the library's own preset transform applies (``weights.DEFAULT.transforms()``; timm's
``pretrained_cfg``); detection models normalise inside their forward and take ``[0, 1]``.
"""

from __future__ import annotations

import difflib
import inspect
import re
from typing import Any, Callable, Optional, Sequence

from torch import nn

from zoo.options import ConfigError, check_minimum
from ..base import ZooModel
from ..registry import register_model
from .detection_meta import MetaSafeDetector

__all__ = ["torchvision_model", "timm_model", "as_zoo_model"]

_CLASSES: dict[tuple[type, ...], type] = {}


class _LibraryModel(ZooModel):
    """The methods a library model gets. Instance attributes hold its configuration:
    ``in_channels``, ``default_input_size``, ``first_conv`` (the path of the convolution that
    takes the image), ``_exact_size`` (the only size it takes, for fixed-size models) and
    ``_size_rule`` (``(multiple, minimum)`` that both sides must meet, or None)."""

    @property
    def stage_names(self) -> tuple[str, ...]:
        """Stage names: the top-level children (a child called ``stages``, as timm's ConvNeXt
        and CSPNet have, stays the library's own ``model.stages``)."""
        return tuple(self.stage_paths())

    def own_stage_paths(self) -> dict[str, str]:
        """``{name: name}`` for every top-level child."""
        return {name: name for name, _ in self.named_children()}

    def check_input_size(self, size: Sequence[int], *, pad: bool = False) -> tuple[int, int]:
        """Fixed-size models (ViTs built for one image size) take only that size; with
        ``pad=True`` a smaller size is padded to it. Models with a size rule (RAFT: multiples
        of 8, at least 128) take sizes that meet it; with ``pad=True`` others are padded up."""
        height, width = int(size[0]), int(size[1])
        if getattr(self, "_size_rule", None) is not None:
            return self._check_size_rule(height, width, pad)
        exact = self._exact_size
        if exact is None or (height, width) == exact:
            return height, width
        if pad and height <= exact[0] and width <= exact[1]:
            return exact
        raise ConfigError(f"{type(self).__name__} takes only {exact[0]}x{exact[1]} inputs, got "
                          f"{height}x{width}; use input.size=[{exact[0]}, {exact[1]}] or build it "
                          f"for another size through model.arch_options")


    def _check_size_rule(self, height: int, width: int, pad: bool) -> tuple[int, int]:
        multiple, minimum = self._size_rule

        def fitting(n: int) -> int:
            return max(minimum, -(-n // multiple) * multiple)

        fitted = (fitting(height), fitting(width))
        if fitted == (height, width):
            return fitted
        if pad:
            return fitted
        raise ConfigError(f"input size {height}x{width} does not fit {type(self).__name__}: "
                          f"height and width must be multiples of {multiple} and at least "
                          f"{minimum}; nearest valid size above: {fitted[0]}x{fitted[1]} "
                          f"(or set input.pad=true)")


#: torchvision packages whose models take only some sizes: (multiple, minimum) of each side.
#: RAFT's encoders downsample by 8 and its correlation pyramid needs 16 cells at 1/8.
_TORCHVISION_SIZE_RULES = {"optical_flow": (8, 128)}


def as_zoo_model(model: nn.Module, *, in_channels: int, default_input_size: Sequence[int],
                 first_conv: str, exact_size: Optional[Sequence[int]] = None,
                 inputs: Optional[dict[str, Any]] = None, mixins: tuple[type, ...] = (),
                 size_rule: Optional[tuple[int, int]] = None) -> ZooModel:
    """Give the library ``model`` the zoo's calling convention, in place, and return it.

    ``inputs`` sets what the forward takes and what the model is: ``input_kind``,
    ``input_mean``, ``input_std``, ``default_frames``, ``task`` (see
    :class:`~zoo.models.ZooModel`). ``mixins`` come before the library's
    class (:class:`~zoo.models.networks.detection_meta.MetaSafeDetector` for detectors).
    ``size_rule``: ``(multiple, minimum)`` of each input side, for models that take only such
    sizes.
    """
    base = type(model)
    cls = _CLASSES.get((*mixins, base))
    if cls is None:
        cls = _CLASSES[(*mixins, base)] = type(base.__name__, (*mixins, base, _LibraryModel),
                                               {"__module__": base.__module__,
                                                "__qualname__": base.__qualname__})
    model.__class__ = cls
    model.in_channels = in_channels
    model.default_input_size = (int(default_input_size[0]), int(default_input_size[1]))
    model.first_conv = first_conv
    model._exact_size = tuple(int(s) for s in exact_size) if exact_size is not None else None
    model._size_rule = size_rule
    for name, value in (inputs or {}).items():
        setattr(model, name, value)
    return model


def _unknown_arch(library: str, arch: str, available: Sequence[str], listing: str) -> ConfigError:
    close = difflib.get_close_matches(arch, available, n=5, cutoff=0.5)
    hint = f"closest: {', '.join(close)}; " if close else ""
    return ConfigError(f"unknown {library} arch '{arch}'; {hint}all {len(available)} are listed "
                       f"by {listing}")


def _first_conv_path(model: nn.Module) -> str:
    for path, module in model.named_modules():
        if isinstance(module, nn.Conv2d):
            return path
    return ""


def _replace_first_conv(model: nn.Module, path: str, in_channels: int) -> None:
    conv = model.get_submodule(path)
    if conv.in_channels == in_channels:
        return
    new = nn.Conv2d(in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                    conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode)
    parent_path, _, name = path.rpartition(".")
    setattr(model.get_submodule(parent_path), name, new)


def _check_sizes(in_channels: int, num_classes: Optional[int]) -> None:
    check_minimum(1, in_channels=in_channels)
    if num_classes is not None:
        check_minimum(0, num_classes=num_classes)  # 0: no classifier, as in timm


def _build(builder: Callable[..., nn.Module], library: str, arch: str, **kwargs: Any
           ) -> nn.Module:
    try:
        return builder(**kwargs)
    except TypeError as error:
        raise ConfigError(f"{library} arch '{arch}' does not take these options: {error}") \
            from None


@register_model(name="torchvision")
def torchvision_model(*, arch: str = "resnet50", num_classes: Optional[int] = None,
                      in_channels: int = 3, arch_options: Optional[dict] = None) -> ZooModel:
    """A torchvision model (``torchvision.models.list_models()``), randomly initialised.

    Args:
        arch: the model's name, as ``torchvision.models.get_model`` takes it.
        num_classes: classifier outputs; None keeps the library's default (1000 for ImageNet).
        in_channels: image channels; the first convolution is rebuilt for other than 3.
        arch_options: more keyword arguments of the library's builder (e.g. ``image_size``).

    ``model.checkpoint=`` loads a local file of torchvision's weights for this arch (for other
    channel counts, the first convolution's kernels are summed or repeated).
    """
    import torchvision

    _check_sizes(in_channels, num_classes)
    available = torchvision.models.list_models()
    if arch not in available:
        raise _unknown_arch("torchvision", arch, available, "torchvision.models.list_models()")
    builder = torchvision.models.get_model_builder(arch)
    kwargs = dict(arch_options or {}, weights=None)
    if "weights_backbone" in inspect.signature(builder).parameters:
        kwargs["weights_backbone"] = None
    if num_classes is not None:
        kwargs["num_classes"] = num_classes
    model = _build(builder, "torchvision", arch, **kwargs)
    first_conv = _first_conv_path(model)
    if first_conv:
        _replace_first_conv(model, first_conv, in_channels)
    exact = getattr(model, "image_size", None)
    exact = (exact, exact) if isinstance(exact, int) else None
    weights = _default_weights(arch)
    inputs = _torchvision_inputs(builder, weights)
    mixins = (MetaSafeDetector,) if inputs["input_kind"] == "image_list" else ()
    return as_zoo_model(model, in_channels=in_channels, first_conv=first_conv,
                        default_input_size=exact or _torchvision_size(weights),
                        exact_size=exact, inputs=inputs, mixins=mixins,
                        size_rule=_TORCHVISION_SIZE_RULES.get(_package(builder)))


def _default_weights(arch: str) -> Any:
    """The arch's default weights enum entry (its metadata and preset transform), or None."""
    import torchvision

    try:
        return torchvision.models.get_model_weights(arch).DEFAULT
    except (ValueError, AttributeError, KeyError):
        return None


def _torchvision_size(weights: Any) -> tuple[int, int]:
    crop = getattr(weights.transforms(), "crop_size", None) if weights is not None else None
    return (int(crop[0]), int(crop[-1])) if crop else (224, 224)


#: torchvision's package of a builder -> the input kind of its models.
_TORCHVISION_KINDS = {"detection": "image_list", "optical_flow": "image_pair", "video": "clip"}
#: torchvision's package of a builder -> the task of its models (the others classify: images,
#: clips, quantised images).
_TORCHVISION_TASKS = {"detection": "detection", "segmentation": "segmentation",
                      "optical_flow": "flow"}
#: RAFT's preset maps [0, 1] images to [-1, 1]: a mean and std of 0.5.
_HALF = (0.5, 0.5, 0.5)


def _package(builder: Callable[..., nn.Module]) -> str:
    """The package of torchvision.models that a builder is in ("detection", ...; "" for
    classification)."""
    return builder.__module__.split(".")[2] if builder.__module__.count(".") > 2 else ""


def _torchvision_inputs(builder: Callable[..., nn.Module], weights: Any) -> dict[str, Any]:
    """Input kind, normalisation, clip length and task of a torchvision model, from the
    package of its builder (its architecture family) and the preset transform and
    documentation of its default weights."""
    kind = _TORCHVISION_KINDS.get(_package(builder), "image")
    preset = weights.transforms() if weights is not None else None
    mean, std = getattr(preset, "mean", None), getattr(preset, "std", None)
    if kind == "image_pair":
        mean, std = _HALF, _HALF
    inputs: dict[str, Any] = {"input_kind": kind, "input_mean": _floats(mean),
                              "input_std": _floats(std),
                              "task": _TORCHVISION_TASKS.get(_package(builder),
                                                             "classification")}
    if kind == "clip":
        docs = weights.meta.get("_docs", "") if weights is not None else ""
        match = re.search(r"clip_len=(\d+)", docs)
        inputs["default_frames"] = int(match.group(1)) if match else 16
    return inputs


def _floats(values: Optional[Sequence[float]]) -> Optional[tuple[float, ...]]:
    return tuple(float(v) for v in values) if values is not None else None


@register_model(name="timm")
def timm_model(*, arch: str = "resnet50", num_classes: Optional[int] = None,
               in_channels: int = 3, arch_options: Optional[dict] = None) -> ZooModel:
    """A timm model (``timm.list_models()``), randomly initialised.

    Args:
        arch: the model's name, as ``timm.create_model`` takes it.
        num_classes: classifier outputs; None keeps the library's default (1000).
        in_channels: image channels (timm's ``in_chans``).
        arch_options: more keyword arguments of ``timm.create_model`` (e.g. ``img_size``,
            ``dynamic_img_size``).

    ``model.checkpoint=`` loads a local file of timm's weights for this arch (for other channel
    counts, the first convolution's kernels are summed or repeated).
    """
    import timm

    _check_sizes(in_channels, num_classes)
    if not timm.is_model(arch):
        raise _unknown_arch("timm", arch, timm.list_models(), "timm.list_models()")
    kwargs = dict(arch_options or {}, pretrained=False, in_chans=in_channels)
    if num_classes is not None:
        kwargs["num_classes"] = num_classes
    model = _build(timm.create_model, "timm", arch, model_name=arch, **kwargs)
    config = getattr(model, "pretrained_cfg", {}) or {}
    patch_embed = getattr(model, "patch_embed", None)
    exact = None
    if getattr(patch_embed, "strict_img_size", False):
        exact = tuple(patch_embed.img_size)
    size = exact or tuple(config.get("input_size", (in_channels, 224, 224))[1:])
    first_conv = config.get("first_conv") or _first_conv_path(model)
    if isinstance(first_conv, (list, tuple)):
        first_conv = first_conv[0]
    inputs = {"input_mean": _floats(config.get("mean")), "input_std": _floats(config.get("std")),
              "task": "classification"}  # timm's architectures are image classifiers
    return as_zoo_model(model, in_channels=in_channels, default_input_size=size,
                        first_conv=first_conv, exact_size=exact, inputs=inputs)
