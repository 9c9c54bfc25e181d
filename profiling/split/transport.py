"""The bytes of a cut as they travel: each storage's bytes read after the cut, encoded.

:func:`encode_piece` turns the gathered bytes of one storage (a flat ``uint8`` tensor, the
ranges of :class:`~profiling.split.CutTensor` read after the cut, in order) into what is sent
under an encoding of :mod:`profiling.split.encodings` (``raw`` or a codec), and
:func:`decode_piece` gives them back on the other side. The lossless encodings give the very
bytes back; ``int8+zlib`` sends each floating storage quantised, with its zero point and scale
in the header (8 bytes that the analysis leaves out). Decompression never produces more than
the bytes the header announces, so a small message cannot expand into a large one.
"""

from __future__ import annotations

import lzma
import zlib
from typing import Any, Callable

import torch

from .encodings import quantise_int8_scaled
from .wire import WireError

__all__ = ["TRANSPORT_ENCODINGS", "DTYPES", "encode_piece", "decode_piece"]

#: The dtypes a cut's storages may have, by name (what the headers write).
DTYPES = {str(dtype).removeprefix("torch."): dtype for dtype in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


def _bounded(decompressor: Any, data: bytes, size: int, name: str) -> bytes:
    out = decompressor.decompress(data, size)
    if len(out) != size or getattr(decompressor, "unconsumed_tail", b"") \
            or not getattr(decompressor, "eof", True):
        raise WireError(f"{name} data does not decompress to the {size:,} bytes announced")
    return out


def _zstd_decompress(data: bytes, size: int) -> bytes:
    import zstandard

    try:
        out = zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
    except zstandard.ZstdError as error:
        raise WireError(f"zstd data does not decompress ({error})") from None
    if len(out) != size:
        raise WireError(f"zstd data does not decompress to the {size:,} bytes announced")
    return out


def _zstd_compress(data: memoryview) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(level=3).compress(data)


#: name -> (compress, decompress(data, size)); ``int8+zlib`` quantises first.
TRANSPORT_ENCODINGS: dict[str, tuple[Callable, Callable]] = {
    "raw": (bytes, lambda data, size: data),
    "zlib": (lambda data: zlib.compress(data, 1),
             lambda data, size: _bounded(zlib.decompressobj(), data, size, "zlib")),
    "int8+zlib": (lambda data: zlib.compress(data, 1),
                  lambda data, size: _bounded(zlib.decompressobj(), data, size, "zlib")),
    "lzma": (lambda data: lzma.compress(data, preset=1),
             lambda data, size: _bounded(lzma.LZMADecompressor(), data, size, "lzma")),
    "zstd": (_zstd_compress, _zstd_decompress),
}


def _quantised(dtype: torch.dtype, encoding: str) -> bool:
    return encoding == "int8+zlib" and dtype.is_floating_point


def encode_piece(raw: torch.Tensor, dtype: torch.dtype, encoding: str
                 ) -> tuple[bytes, dict[str, Any]]:
    """``raw`` (a flat ``uint8`` CPU tensor of ``dtype`` elements) under ``encoding``: the
    bytes to send and what the header must say besides (the quantisation's ``low`` and
    ``scale``)."""
    compress = TRANSPORT_ENCODINGS[encoding][0]
    if _quantised(dtype, encoding):
        quantised, low, scale = quantise_int8_scaled(raw.view(dtype))
        return compress(memoryview(quantised.numpy())), {"low": low, "scale": scale}
    return compress(memoryview(raw.numpy())), {}


def decode_piece(data: bytes, dtype: torch.dtype, encoding: str, size: int,
                 extra: dict[str, Any]) -> torch.Tensor:
    """The flat ``uint8`` tensor of ``size`` bytes that :func:`encode_piece` encoded (the
    quantised encoding: its values dequantised, ``low + q * scale``)."""
    decompress = TRANSPORT_ENCODINGS[encoding][1]
    if size == 0:
        return torch.empty(0, dtype=torch.uint8)
    if _quantised(dtype, encoding):
        count = size // dtype.itemsize
        quantised = torch.frombuffer(bytearray(decompress(data, count)), dtype=torch.uint8)
        low, scale = (extra.get(key) for key in ("low", "scale"))
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, scale)):
            raise WireError("an int8+zlib tensor needs numbers 'low' and 'scale' in the header")
        values = quantised.float() * float(scale) + float(low)
        return values.to(dtype).view(torch.uint8)
    out = decompress(bytes(data), size)
    if len(out) != size:
        raise WireError(f"{encoding} data of {len(out):,} bytes where {size:,} were announced")
    return torch.frombuffer(bytearray(out), dtype=torch.uint8)
