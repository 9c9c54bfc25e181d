"""Real images as input: ``input.images=[PATH, ...]``, a folder, or the shipped ``sample``.

Files are read by :mod:`.image_files` (PNG, JPEG, GIF, WebP, AVIF, HEIC, TIFF, 8 or 16 bits;
an animated GIF or a multi-page TIFF is a sequence of frames; other video files where this
torchvision can read them; the header checked against ``input.max_pixels`` first). A folder gives its
image and video files sorted by name. The batch takes the frames in order, one group of frames
per item (one image, a pair, a clip of ``T``: :mod:`zoo.inputs.kinds`), cycling back to the first
when there are too few. Each frame is converted as the model expects, by one stated rule:

1. channels: an alpha channel is dropped; a grey image is repeated into every channel; a
   colour image fed to a 1-channel model becomes its luma ``0.299 R + 0.587 G + 0.114 B``
   (ITU-R BT.601, as PIL's ``convert("L")``); for other channel counts the R, G, B channels are
   repeated cyclically (R, G, B, R, ...), as the zoo adapts a first convolution's weights;
2. size: scaled, keeping its aspect ratio, to the smallest size that covers ``input.size``
   (bilinear, antialiased), then centre-cropped to it;
3. values: ``[0, 255]`` for models with ``input_scale`` 255 (GMFlow, SwiftNet); otherwise
   ``[0, 1]``, then normalised with the model's ``input_mean`` / ``input_std`` when it has them
   (ImageNet's for torchvision and timm classifiers; detection models normalise inside).
   The mean and std of other channel counts follow rule 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

import torch
import torch.nn.functional as F

from profiling.files import file_problem

from ..options import ConfigError
from .image_files import IMAGE_SUFFIXES, MAX_PIXELS, VIDEO_SUFFIXES, read_frames
from .kinds import arrange_frames, frames_per_item

__all__ = ["SAMPLE_DIR", "SAMPLE_FILES", "image_inputs", "resolve_image_files", "read_frames",
           "convert_channels", "fit_size", "LUMA"]

#: The shipped sample (see its README.md for sources and licences).
SAMPLE_DIR = Path(__file__).resolve().parent / "sample"
#: ``input.images=sample``: the files each input kind takes.
SAMPLE_FILES = {
    "image": ("coffee.jpg",),
    "image_list": ("coffee.jpg",),
    "image_pair": ("chelsea_0.png", "chelsea_1.png"),
    "clip": ("chelsea_0.png", "chelsea_1.png"),
}
#: ITU-R BT.601 luma weights of R, G and B.
LUMA = (0.299, 0.587, 0.114)

def resolve_image_files(images: Any, kind: str) -> list[Path]:
    """The files ``input.images`` names: ``sample``, files and folders, in order."""
    entries = [images] if isinstance(images, (str, Path)) else list(images) if isinstance(
        images, (list, tuple)) else []
    if not entries or not all(isinstance(e, (str, Path)) and str(e) for e in entries):
        raise ConfigError(f"input.images={images!r} is not accepted; accepted: sample, a file, "
                          f"a folder, or a list of them")
    files: list[Path] = []
    for entry in entries:
        if str(entry) == "sample":
            files += [SAMPLE_DIR / name for name in SAMPLE_FILES[kind]]
            continue
        path = Path(entry).expanduser()
        if path.is_dir():
            found = sorted(p for p in path.iterdir()
                           if p.suffix.lower() in IMAGE_SUFFIXES | VIDEO_SUFFIXES)
            if not found:
                raise ConfigError(f"input.images: folder {path} holds no image or video file "
                                  f"({', '.join(sorted(IMAGE_SUFFIXES | VIDEO_SUFFIXES))})")
            files += [_regular(p, f" (in the folder {path})") for p in found]
        else:
            files.append(_regular(path, ""))
    return files


def _regular(path: Path, where: str) -> Path:
    """``path``, refused unless it is a regular file: a FIFO would be waited on forever."""
    problem = file_problem(path)
    if problem == "does not exist":
        raise ConfigError(f"input.images: no file or folder {path}; accepted: sample, image or "
                          f"video files, folders of them")
    if problem:
        raise ConfigError(f"input.images: {path}{where} {problem}; accepted: image or video "
                          f"files, folders of them")
    return path


def convert_channels(image: torch.Tensor, channels: int) -> torch.Tensor:
    """``image`` ``[c, ...]`` (c = 1 or 3) as ``channels`` channels, by the module's rule 1."""
    have = image.shape[0]
    if have == channels:
        return image
    if have == 1:
        return image.expand(channels, *image.shape[1:]).clone()
    if have != 3:
        raise ValueError(f"images have 1 or 3 channels after decoding, not {have}")
    if channels == 1:
        weights = torch.tensor(LUMA, dtype=image.dtype).reshape(3, *[1] * (image.dim() - 1))
        return (image * weights).sum(0, keepdim=True)
    return image[torch.arange(channels) % 3]


def fit_size(image: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
    """``image`` ``[C, h, w]`` scaled to cover ``size`` keeping its aspect ratio (bilinear,
    antialiased), then centre-cropped to ``size``."""
    height, width = int(size[0]), int(size[1])
    have_h, have_w = image.shape[-2:]
    if (have_h, have_w) != (height, width):
        scale = max(height / have_h, width / have_w)
        scaled = (max(height, round(have_h * scale)), max(width, round(have_w * scale)))
        if scaled != (have_h, have_w):
            image = F.interpolate(image[None], size=scaled, mode="bilinear",
                                  align_corners=False, antialias=True)[0]
    top, left = (image.shape[-2] - height) // 2, (image.shape[-1] - width) // 2
    return image[:, top:top + height, left:left + width]


def _model_values(images: torch.Tensor, model: Any) -> torch.Tensor:
    """``[0, 255]`` images to the model's range and normalisation (rule 3)."""
    scale = float(getattr(model, "input_scale", 1.0))
    if scale == 255.0:
        return images
    images = images * (scale / 255.0)
    mean, std = getattr(model, "input_mean", None), getattr(model, "input_std", None)
    if mean is None or std is None:
        return images
    channels = images.shape[1]
    return (images - _statistics(mean, channels)) / _statistics(std, channels)


def _statistics(values: Sequence[float], channels: int) -> torch.Tensor:
    stats = torch.tensor([float(v) for v in values]).reshape(-1, 1, 1)
    if len(stats) != channels:
        stats = convert_channels(stats, channels)
    return stats.reshape(1, channels, 1, 1)


def _rule(model: Any, size: Sequence[int]) -> str:
    channels = int(model.in_channels)
    scale = float(getattr(model, "input_scale", 1.0))
    mean, std = getattr(model, "input_mean", None), getattr(model, "input_std", None)
    values = "values in [0, 255]" if scale == 255.0 else f"values in [0, {scale:g}]"
    if scale != 255.0 and mean is not None and std is not None:
        values += (f" then normalised with mean {[round(float(v), 4) for v in mean]} and std "
                   f"{[round(float(v), 4) for v in std]}")
    return (f"rule: {channels} channel(s) (alpha dropped, grey repeated, colour to grey by luma "
            f"0.299R+0.587G+0.114B, else RGB cycled), scaled to cover {size[0]}x{size[1]} "
            f"keeping the aspect ratio (bilinear, antialiased) and centre-cropped, {values}")


def image_inputs(model: Any, images: Any, *, batch: int, size: Sequence[int],
                 frames: Optional[int] = None, device: Any = "cpu",
                 max_pixels: int = MAX_PIXELS) -> tuple[tuple[Any, ...], list[str]]:
    """The positional arguments of ``model``'s forward made from the files ``images`` names,
    and notes naming the files used and the conversion rule (for ``meta.json``). A file whose
    header declares more than ``max_pixels`` pixels is refused before it is decoded."""
    kind = str(getattr(model, "input_kind", "image"))
    files = resolve_image_files(images, kind)
    available = [frame for path in files for frame in read_frames(path, max_pixels)]
    needed = batch * frames_per_item(kind, frames)
    chosen = [available[i % len(available)] for i in range(needed)]
    channels = int(model.in_channels)
    pixels = torch.stack([fit_size(convert_channels(frame.pixels.float(), channels), size)
                          for frame in chosen])
    inputs = arrange_frames(_model_values(pixels, model).to(device), kind, batch)
    used = list(dict.fromkeys(frame.source for frame in chosen))
    reuse = f" (the {len(available)} frame(s) reused in order)" if needed > len(available) else ""
    notes = [f"input.images: {needed} frame(s) for {batch} {kind} item(s){reuse}: "
             f"{', '.join(_shown(source) for source in used)}", _rule(model, size)]
    resized = _resized_note(chosen, size)
    return inputs, notes + ([resized] if resized else [])


def _resized_note(frames: Sequence[Any], size: Sequence[int]) -> Optional[str]:
    """A line naming the frames of another size than ``size`` and how to keep their size."""
    other = {}
    for frame in frames:
        have = tuple(int(n) for n in frame.pixels.shape[-2:])
        if have != tuple(size):
            other.setdefault(_shown(frame.source), have)
    if not other:
        return None
    source, (height, width) = next(iter(other.items()))
    more = f" and {len(other) - 1} more" if len(other) > 1 else ""
    return (f"input.images: {source} ({height}x{width}){more} resized and centre-cropped to "
            f"{size[0]}x{size[1]}, the model's input size; to keep an image's size, give it "
            f"as input.size=[{height},{width}] (input.pad=true if the model needs a multiple)")


def _shown(source: str) -> str:
    """A sample file by its name under ``zoo/inputs/sample``; others as given."""
    try:
        return "sample/" + str(Path(source).relative_to(SAMPLE_DIR))
    except ValueError:
        return source
