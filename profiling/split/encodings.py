"""How the bytes alive across a cut can be sent, and what each encoding makes of them.

Every encoding applies to each storage's elements read after the cut (see
:mod:`profiling.split.byte_ranges`), storage by storage:

- ``raw``: the elements as they are in memory.
- ``fp16``: floating elements wider than 16 bits cast to 16 bits; integers, booleans and
  16-bit floats as they are.
- ``int8``: floating elements quantised to 8 bits (per-tensor affine; the scale and zero
  point, 8 bytes per tensor, are left out); integers and booleans as they are.
- ``zlib``: the raw bytes through ``zlib`` at level 1, its fast setting: what a link that
  compresses every inference in real time would use (level 6, its default, is several
  times slower for a few percent fewer bytes of float data: ``docs/split.md``).
- ``lzma``: the raw bytes through ``lzma`` (xz) at preset 1.
- ``int8+zlib``: the ``int8`` bytes (floating elements quantised to
  ``round((x - min) / (max - min) * 255)``, one ``uint8`` each) through ``zlib`` at level 1.
- ``zstd``: the raw bytes through Zstandard at level 3 (its default); only when the optional
  ``zstandard`` package is installed (``pip install stagezoo[zstd]``).

The compressed encodings need real data (not the meta device). Sizes are measured on each
storage on its own, so they add up across the tensors of a cut.
"""

from __future__ import annotations

import lzma
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Mapping, Optional, Sequence

import numpy as np
import torch

from .byte_ranges import ByteRanges, ranges_size
from ..errors import ProfilingError, require_extra
from ..statistics.noise import usable_cores

__all__ = ["CODECS", "SIZE_ENCODINGS", "encoded_bytes", "check_codecs", "gather",
           "compressed_sizes", "quantise_int8", "quantise_int8_scaled"]

#: Encodings whose size follows from the element count (always available, meta included).
SIZE_ENCODINGS = ("raw", "fp16", "int8")

#: Bytes a codec's compressor takes in, before the compression: raw or quantised.
Compressor = Callable[[memoryview], bytes]


def _zstd() -> Optional[Compressor]:
    try:
        import zstandard
    except ImportError:
        return None
    return lambda data: zstandard.ZstdCompressor(level=3).compress(data)


#: The compressed encodings available here: name -> (quantise first, compress).
CODECS: dict[str, tuple[bool, Compressor]] = {
    "zlib": (False, lambda data: zlib.compress(data, 1)),
    "lzma": (False, lambda data: lzma.compress(data, preset=1)),
    "int8+zlib": (True, lambda data: zlib.compress(data, 1)),
}
if _zstd() is not None:
    CODECS["zstd"] = (False, _zstd())

#: Below this many bytes in all, compressing in one thread beats starting a pool.
POOL_MIN_BYTES = 8 << 20


def check_codecs(codecs: Iterable[str]) -> tuple[str, ...]:
    """``codecs`` as a tuple, each one available; otherwise a one-line error."""
    codecs = tuple(codecs)
    for codec in codecs:
        if codec == "zstd":
            require_extra("zstandard", "zstd", "the zstd codec")
        if codec not in CODECS:
            raise ProfilingError(f"unknown codec '{codec}'; choose from: {', '.join(CODECS)}")
    return codecs


def encoded_bytes(nbytes: int, dtype: torch.dtype, itemsize: int) -> int:
    """The bytes of ``nbytes`` of ``dtype`` data once its floating elements take ``itemsize``
    bytes each. Integer and boolean tensors (indices, masks) are sent as they are, and
    floating tensors already as small are not widened."""
    if not dtype.is_floating_point or dtype.itemsize <= itemsize:
        return nbytes
    return nbytes // dtype.itemsize * itemsize


def gather(data: torch.Tensor, ranges: ByteRanges) -> torch.Tensor:
    """The bytes of ``data`` (a flat ``uint8`` tensor) inside ``ranges``, in order."""
    starts, ends = ranges
    if len(starts) == 1:
        return data[int(starts[0]):int(ends[0])]
    steps = np.zeros(data.numel() + 1, np.int8)
    steps[starts], steps[ends] = 1, -1
    mask = np.cumsum(steps[:-1], dtype=np.int8).astype(bool)
    return data[torch.from_numpy(mask)]


def quantise_int8(values: torch.Tensor) -> torch.Tensor:
    """Floating ``values`` as ``uint8``: ``round((x - min) / (max - min) * 255)`` per tensor
    (non-finite values taken as 0)."""
    return quantise_int8_scaled(values)[0]


def quantise_int8_scaled(values: torch.Tensor) -> tuple[torch.Tensor, float, float]:
    """:func:`quantise_int8` with its zero point and scale: ``x ~ low + q * scale``."""
    values = torch.nan_to_num(values.float(), nan=0.0, posinf=0.0, neginf=0.0)
    if values.numel() == 0:
        return values.to(torch.uint8), 0.0, 1.0
    low, high = values.min(), values.max()
    scale = (high - low) / 255 if high > low else torch.ones((), dtype=values.dtype)
    quantised = ((values - low) / scale).round_().clamp_(0, 255).to(torch.uint8)
    return quantised, float(low), float(scale)


def _sizes(data: torch.Tensor, ranges: ByteRanges, dtype: torch.dtype,
           codecs: Sequence[str]) -> dict[str, int]:
    raw = gather(data.cpu(), ranges).contiguous()
    quantised = None
    sizes = {}
    for codec in codecs:
        quantise, compress = CODECS[codec]
        payload = raw
        if quantise and dtype.is_floating_point and raw.numel() % dtype.itemsize == 0:
            if quantised is None:
                quantised = quantise_int8(raw.view(dtype))
            payload = quantised
        sizes[codec] = len(compress(memoryview(payload.numpy())))
    return sizes


def compressed_sizes(items: Sequence[tuple[torch.Tensor, ByteRanges, torch.dtype]],
                     codecs: Sequence[str], workers: Optional[int] = None
                     ) -> list[Mapping[str, int]]:
    """The compressed size under each codec of each ``(bytes, ranges, dtype)`` item, where
    ``bytes`` is a storage's content as a flat ``uint8`` tensor.

    A pool of threads compresses when there is enough to do (the codecs release the GIL, so
    the threads use every core); ``workers`` defaults to the cores this process may use
    (:func:`~profiling.statistics.usable_cores`). The largest items go first, so that no
    large one is left to run alone at the end.
    """
    if not codecs or not items:
        return [{} for _ in items]
    payloads = [ranges_size(ranges) for _, ranges, _ in items]
    workers = workers or usable_cores()
    if workers == 1 or len(items) == 1 or sum(payloads) < POOL_MIN_BYTES:
        return [_sizes(data, ranges, dtype, codecs) for data, ranges, dtype in items]
    order = sorted(range(len(items)), key=lambda i: -payloads[i])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {i: pool.submit(_sizes, *items[i], codecs) for i in order}
        return [futures[i].result() for i in range(len(items))]
