"""The one message type that a split's two sides exchange: a length-prefixed frame.

A frame is a fixed prefix, a JSON header and a body of raw bytes::

    b"SZ01" | header length (uint32, big-endian) | body length (uint64, big-endian)
    | header: UTF-8 JSON object | body: raw bytes (tensors, the head's tape)

Nothing is ever unpickled: tensors travel as their bytes, and the header names their dtype,
ranges and encoding. Both lengths are checked against limits before anything is read, so a
header that announces 10 GB is refused at once, and a read that stalls longer than
``timeout`` seconds is refused too. Every refusal is a :class:`WireError` whose message is one
line; the server answers it with an error frame and closes that connection only.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from typing import Any, Optional, Sequence

from ..errors import ProfilingError

__all__ = ["MAGIC", "PREFIX", "MAX_HEADER_BYTES", "DEFAULT_MAX_BODY_BYTES", "WireError",
           "frame", "parse_prefix", "parse_header", "read_frame", "send_frame", "receive_frame"]

MAGIC = b"SZ01"
PREFIX = struct.Struct(">4sIQ")
#: The largest JSON header accepted (the head's tape travels in the body, not here).
MAX_HEADER_BYTES = 1 << 20
#: The largest body accepted unless the server is told otherwise (``--max-mb``).
DEFAULT_MAX_BODY_BYTES = 1 << 30


class WireError(ProfilingError):
    """A frame that breaks the protocol (one line: what was wrong)."""


def frame(header: dict, body: Sequence[bytes] = ()) -> list[bytes]:
    """The pieces of one frame (prefix, header, then the body's pieces), ready to send."""
    encoded = json.dumps(header, separators=(",", ":"), allow_nan=False).encode()
    length = sum(len(memoryview(piece).cast("B")) for piece in body)
    return [PREFIX.pack(MAGIC, len(encoded), length), encoded, *body]


def parse_prefix(prefix: bytes, max_body: int) -> tuple[int, int]:
    """``(header length, body length)`` of a frame's prefix, or :class:`WireError`."""
    magic, header_length, body_length = PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise WireError(f"not a stagezoo frame (starts {magic!r}, expected {MAGIC!r})")
    if header_length > MAX_HEADER_BYTES:
        raise WireError(f"header of {header_length:,} bytes announced; at most "
                        f"{MAX_HEADER_BYTES:,} accepted")
    if body_length > max_body:
        raise WireError(f"body of {body_length:,} bytes announced; at most {max_body:,} "
                        f"accepted")
    return header_length, body_length


def _finite(value: str) -> Any:
    raise WireError(f"the header holds {value}, which JSON does not allow")


def parse_header(data: bytes) -> dict:
    """The JSON object of a frame's header, or :class:`WireError`."""
    try:
        header = json.loads(data.decode("utf-8"), parse_constant=_finite)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise WireError(f"the header is not JSON ({type(error).__name__})") from None
    if not isinstance(header, dict):
        raise WireError(f"the header is a JSON {type(header).__name__}, not an object")
    return header


async def read_frame(reader: asyncio.StreamReader, max_body: int, timeout: float
                     ) -> Optional[tuple[dict, bytes, int, int]]:
    """The next frame from ``reader``: ``(header, body, first, last)``, where ``first`` and
    ``last`` are the :func:`time.monotonic_ns` at which its first and last bytes were read;
    ``None`` when the peer closed cleanly between frames."""
    import time

    try:
        prefix = await reader.readexactly(PREFIX.size)
    except asyncio.IncompleteReadError as error:
        if not error.partial:
            return None
        raise WireError(f"truncated frame: the connection closed after {len(error.partial)} "
                        f"of the prefix's {PREFIX.size} bytes") from None
    first = time.monotonic_ns()
    header_length, body_length = parse_prefix(prefix, max_body)
    try:
        header = await asyncio.wait_for(reader.readexactly(header_length), timeout)
        body = await asyncio.wait_for(reader.readexactly(body_length), timeout)
    except asyncio.IncompleteReadError as error:
        raise WireError(f"truncated frame: the connection closed {len(error.partial):,} bytes "
                        f"into a part of {error.expected:,}") from None
    except asyncio.TimeoutError:
        raise WireError(f"no complete frame within {timeout:g} s") from None
    return parse_header(header), body, first, time.monotonic_ns()


def send_frame(connection: socket.socket, header: dict, body: Sequence[bytes] = ()) -> int:
    """Send one frame on a blocking socket; the bytes sent."""
    prefix, encoded, *pieces = frame(header, body)
    connection.sendall(prefix + encoded)
    for piece in pieces:
        connection.sendall(piece)
    return len(prefix) + len(encoded) + sum(len(memoryview(p).cast("B")) for p in pieces)


def _exactly(connection: socket.socket, size: int) -> bytearray:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        count = connection.recv_into(view[got:], size - got)
        if count == 0:
            raise WireError(f"the server closed the connection {got:,} bytes into a part of "
                            f"{size:,}")
        got += count
    return data


def receive_frame(connection: socket.socket, max_body: int = DEFAULT_MAX_BODY_BYTES
                  ) -> tuple[dict, bytearray]:
    """The next frame on a blocking socket: ``(header, body)``."""
    header_length, body_length = parse_prefix(bytes(_exactly(connection, PREFIX.size)),
                                              max_body)
    header = parse_header(bytes(_exactly(connection, header_length)))
    return header, _exactly(connection, body_length)

