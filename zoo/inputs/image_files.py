"""Reading one image or video file, safely: the header first, then the pixels, scaled by depth.

Before any pixel is decoded, the file's header is read (with Pillow, which reads headers lazily;
for HEIC, whose header Pillow cannot read, the ``ispe`` box of the ISO media file) and the
image is refused when its pixels (width × height × frames) exceed ``max_pixels``
(``input.max_pixels``, default :data:`MAX_PIXELS`): a small file that declares a huge image
(a decompression bomb) is refused without being decoded. A file that is not a readable image
(truncated, corrupt, or another kind of file under an image's name) is refused with one line
naming it. Pixels are decoded by Pillow, whose decoders raise errors on broken data
(torchvision's PNG decoder can crash the process on a corrupt data stream), and HEIC, which
Pillow does not read, by ``torchvision.io``. Values are scaled by their bit depth to
``[0, 255]``: a 16-bit PNG or TIFF gives the values of its 8-bit twin within 1/255 of the range
(Pillow reads 16-bit grey at 16 bits and 16-bit colour PNG at 8, its high byte).
"""

from __future__ import annotations

import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import numpy as np
import torch

from ..options import ConfigError

__all__ = ["MAX_PIXELS", "IMAGE_SUFFIXES", "VIDEO_SUFFIXES", "Frame", "read_frames",
           "declared_pixels"]

#: The default of ``input.max_pixels``: 100 million pixels, e.g. 10000 × 10000 (1.2 GB once
#: converted to float32 RGB), above any camera's frame and far below a decompression bomb's.
MAX_PIXELS = 100_000_000

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".heic", ".tif", ".tiff"}
VIDEO_SUFFIXES = {".mp4", ".avi", ".mov", ".mkv", ".webm"}
_HEIF = {".heic", ".avif"}
#: Pillow modes of 16 bits per sample (TIFF), read as uint16
_SIXTEEN_BIT_MODES = {"I;16", "I;16L", "I;16B", "I;16N"}
#: Pillow modes converted to RGB or L before reading
_CONVERTED_MODES = {"1": "L", "P": "RGB", "CMYK": "RGB", "YCbCr": "RGB", "LAB": "RGB",
                    "HSV": "RGB", "PA": "RGBA"}


@dataclass(frozen=True)
class Frame:
    """One decoded frame: ``[C, H, W]`` float32 in ``[0, 255]`` whatever the file's bit depth
    (alpha dropped), and where it came from."""

    pixels: torch.Tensor
    source: str


@contextmanager
def _pillow_without_its_limit() -> Iterator[None]:
    """Pillow's own decompression-bomb limit off: :func:`check_pixels` applies ours."""
    from PIL import Image

    limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
    try:
        yield
    finally:
        Image.MAX_IMAGE_PIXELS = limit


def declared_pixels(path: Path) -> tuple[int, int, int]:
    """``(width, height, frames)`` from the header of the image file ``path``, without decoding
    its pixels; :class:`ConfigError` when it is no image file that can be read."""
    from PIL import Image, UnidentifiedImageError

    try:
        with _pillow_without_its_limit(), Image.open(path) as image:
            width, height = image.size
            return width, height, int(getattr(image, "n_frames", 1))
    except UnidentifiedImageError:
        size = _heif_size(path) if path.suffix.lower() in _HEIF else None
        if size is None:
            raise ConfigError(f"input.images: {path} is not an image file that can be read "
                              f"(truncated, corrupt, or not {_kind_of(path)}); accepted: "
                              f"{', '.join(sorted(IMAGE_SUFFIXES))}") from None
        return size[0], size[1], 1
    except (OSError, SyntaxError, ValueError) as error:
        raise ConfigError(f"input.images: cannot read the header of {path} "
                          f"({_first_line(error)})") from None


def _heif_size(path: Path) -> Optional[tuple[int, int]]:
    """The largest ``ispe`` (image spatial extents) box of a HEIF/AVIF file's first 256 kB, or
    ``None`` without one."""
    with open(path, "rb") as file:
        head = file.read(256 * 1024)
    if head[4:8] != b"ftyp":
        return None
    sizes = [(int.from_bytes(head[i + 8:i + 12], "big"), int.from_bytes(head[i + 12:i + 16],
                                                                        "big"))
             for i in (m.start() for m in re.finditer(b"ispe", head)) if i + 16 <= len(head)]
    return max(sizes, key=lambda s: s[0] * s[1]) if sizes else None


def _kind_of(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    return f"a {suffix.upper()} image" if suffix else "an image"


def _first_line(error: BaseException) -> str:
    """The first line of an error, without the C++ source path torchvision prefixes."""
    text = (str(error).splitlines() or [type(error).__name__])[0]
    return re.sub(r"^[\w:()]+, /\S+:\d+, ", "", text).strip() or type(error).__name__


def check_pixels(path: Path, max_pixels: int) -> None:
    """Refuse ``path`` when its header declares more than ``max_pixels`` pixels."""
    width, height, frames = declared_pixels(path)
    if width * height * frames > max_pixels:
        frames_text = f" × {frames} frames" if frames > 1 else ""
        raise ConfigError(f"input.images: {path} declares {width}×{height}{frames_text} = "
                          f"{width * height * frames:,} pixels, over input.max_pixels="
                          f"{max_pixels:,}; refused before decoding (raise input.max_pixels "
                          f"if the image is real)")


def read_frames(path: Path, max_pixels: int = MAX_PIXELS) -> list[Frame]:
    """The frames of an image or video file (an animated GIF or a multi-page TIFF gives one per
    frame), ``[C, H, W]`` float32 in ``[0, 255]``."""
    if path.suffix.lower() in VIDEO_SUFFIXES:
        stack = _read_video(path)
    else:
        check_pixels(path, max_pixels)
        stack = _decode(path)
    stack = stack if stack.dim() == 4 else stack[None]
    stack = stack[:, :3] if stack.shape[1] == 4 else stack[:, :1] if stack.shape[1] == 2 \
        else stack
    stack = _to_255(stack)
    if len(stack) == 1:
        return [Frame(stack[0], str(path))]
    return [Frame(frame, f"{path}#{index}") for index, frame in enumerate(stack)]


def _to_255(pixels: torch.Tensor) -> torch.Tensor:
    """Integer pixels of any bit depth as float32 in ``[0, 255]``."""
    if pixels.dtype == torch.uint8:
        return pixels.float()
    if pixels.dtype == torch.uint16:
        return pixels.to(torch.int32).float() * (255.0 / 65535.0)
    raise ConfigError(f"images of type {pixels.dtype} are not read; accepted: 8 or 16 bits")


def _decode(path: Path) -> torch.Tensor:
    """Every frame of an image file read by Pillow, ``[N, C, H, W]`` uint8 or uint16 (HEIC,
    which Pillow does not read, by torchvision)."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    pages = []
    try:
        with _pillow_without_its_limit(), Image.open(path) as image:
            for page in ImageSequence.Iterator(image):
                pages.append(_page_array(page, path))
    except ConfigError:
        raise
    except UnidentifiedImageError:
        if path.suffix.lower() in _HEIF:
            return _decode_heif(path)
        raise ConfigError(f"input.images: {path} is not an image file that can be read") \
            from None
    except Exception as error:  # noqa: BLE001  (Pillow's plugins raise their own types)
        raise ConfigError(f"input.images: cannot decode {path}: truncated or corrupt "
                          f"({_first_line(error)})") from None
    if len({page.shape for page in pages}) != 1:
        raise ConfigError(f"input.images: the frames of {path} differ in size or channels; "
                          f"give them as separate files")
    return torch.from_numpy(np.stack(pages))


def _decode_heif(path: Path) -> torch.Tensor:
    """A HEIC or AVIF file by torchvision (Pillow reads AVIF where it was built with it)."""
    import torchvision.io as io

    try:
        with warnings.catch_warnings():  # torchvision 0.29 points to TorchCodec
            warnings.simplefilter("ignore", DeprecationWarning)
            return io.decode_image(io.read_file(str(path)), mode=io.ImageReadMode.UNCHANGED)
    except Exception as error:  # noqa: BLE001  (each decoder raises its own types)
        raise ConfigError(f"input.images: cannot decode {path}: truncated or corrupt "
                          f"({_first_line(error)})") from None


def _page_array(page, path: Path) -> np.ndarray:
    """One Pillow page as ``[C, H, W]`` uint8 or uint16."""
    mode = page.mode
    if mode in _CONVERTED_MODES:
        page, mode = page.convert(_CONVERTED_MODES[mode]), _CONVERTED_MODES[mode]
    if mode in _SIXTEEN_BIT_MODES or (mode == "I" and page.format == "PNG"):
        array = np.asarray(page).astype(np.uint16)  # PNG has at most 16 bits per sample
    elif mode in {"L", "LA", "RGB", "RGBA"}:
        array = np.asarray(page)
    else:
        raise ConfigError(f"input.images: {path} has pixels of Pillow mode {mode}; accepted: "
                          f"8- or 16-bit grey or colour")
    return np.ascontiguousarray(array[None] if array.ndim == 2 else array.transpose(2, 0, 1))


def _read_video(path: Path) -> torch.Tensor:
    import torchvision
    import torchvision.io as io

    read_video = getattr(io, "read_video", None)
    if read_video is None:
        raise ConfigError(f"input.images: torchvision {torchvision.__version__} cannot read "
                          f"video files ({path.name}); give its frames as images or an "
                          f"animated GIF (e.g. ffmpeg -i {path.name} frame_%04d.png)")
    try:
        video = read_video(str(path), pts_unit="sec", output_format="TCHW")[0]
    except Exception as error:  # noqa: BLE001  (the video backends raise their own types)
        raise ConfigError(f"input.images: cannot read video {path} "
                          f"({_first_line(error)})") from None
    if len(video) == 0:
        raise ConfigError(f"input.images: video {path} has no frames")
    return video
