"""The inputs room: what a model's ``forward`` takes (its input kind and how frames are
arranged into items) and the images behind it (the shipped sample, image and video files read
within ``input.max_pixels``).

Above :mod:`zoo.options`, below :mod:`zoo.models`.
"""

from .image_files import IMAGE_SUFFIXES, MAX_PIXELS, VIDEO_SUFFIXES, declared_pixels, read_frames
from .images import (LUMA, SAMPLE_DIR, SAMPLE_FILES, convert_channels, fit_size, image_inputs,
                     resolve_image_files)
from .kinds import INPUT_KINDS, arrange_frames, check_frames, frames_per_item

__all__ = ["IMAGE_SUFFIXES", "MAX_PIXELS", "VIDEO_SUFFIXES", "declared_pixels", "read_frames",
           "LUMA", "SAMPLE_DIR", "SAMPLE_FILES", "convert_channels", "fit_size", "image_inputs",
           "resolve_image_files", "INPUT_KINDS", "arrange_frames", "check_frames",
           "frames_per_item"]
