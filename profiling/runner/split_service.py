"""An executed split's request and its service: the head's bytes in a ``run`` frame, and the
tail that the server runs for it (:class:`TailService`, the handler of
:class:`~profiling.split.server.SplitServer`).

A ``run`` frame's header::

    {"op": "run", "position": P, "output": false,
     "tape": {"sha": SHA256, "size": N, "raw": R},
     "tensors": [{"made_by": [K, J], "dtype": "float32", "ranges": [[B, E], ...],
                  "encoding": "zlib", "size": S, "low": L, "scale": Q}, ...]}

and its body the tape (``N`` bytes of zlib'd JSON, or none when the server already holds the
tape of that hash) followed by each tensor's ``S`` encoded bytes. The reply says how long the
server decoded, passed the head's operators and ran the tail (``decode_ms``, ``skip_ms``,
``tail_ms``), and with ``"output": true`` carries the forward's output tensors as raw bytes.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from collections import OrderedDict
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import torch

from ..split.cuts import CutTensor
from ..split.transport import DTYPES, TRANSPORT_ENCODINGS, decode_piece, encode_piece
from ..split.wire import WireError
from ..stages.payload import iter_tensors
from .split_run import HeadRun, run_tail

__all__ = ["TailService", "run_request", "output_tensors", "MAX_TAPE_BYTES"]

#: The largest tape (uncompressed JSON) a server takes.
MAX_TAPE_BYTES = 64 << 20
#: Tapes a server keeps, by hash, so that a repeated request need not carry its tape again.
KEPT_TAPES = 16


def _tape_bytes(tape: Sequence[Any]) -> bytes:
    return json.dumps(tape, separators=(",", ":")).encode()


def run_request(head: HeadRun, tensors: Sequence[CutTensor], position: int, encoding: str, *,
                send_tape: bool = True, output: bool = False
                ) -> tuple[dict, list[bytes], float]:
    """The ``run`` frame of a head's result under ``encoding``: ``(header, body, encode_ms)``
    (the time to encode the tensors; the tape's own is not counted, a server keeps it)."""
    raw_tape = _tape_bytes(head.tape)
    packed = zlib.compress(raw_tape, 1) if send_tape else b""  # level 1, as the zlib codec
    start = time.perf_counter()
    described, body = [], [packed]
    for tensor, piece in zip(tensors, head.pieces):
        data, extra = encode_piece(piece, tensor.dtype, encoding)
        described.append({"made_by": list(tensor.made_by),
                          "dtype": str(tensor.dtype).removeprefix("torch."),
                          "ranges": [[int(b), int(e)] for b, e in zip(*tensor.ranges)],
                          "encoding": encoding, "size": len(data), **extra})
        body.append(data)
    encode_ms = (time.perf_counter() - start) * 1e3
    header = {"op": "run", "position": position, "output": output, "tensors": described,
              "tape": {"sha": hashlib.sha256(raw_tape).hexdigest(), "size": len(packed),
                       "raw": len(raw_tape)}}
    return header, body, encode_ms


def _integer(value: Any, what: str, low: int = 0, high: int = 1 << 48) -> int:
    if type(value) is not int or not low <= value <= high:
        raise WireError(f"{what} must be an integer in [{low}, {high}], got {str(value)[:40]}")
    return value


def _tensor(entry: Any) -> tuple[CutTensor, str, int, dict]:
    """One tensor of a request's header, checked."""
    if not isinstance(entry, dict):
        raise WireError("each of 'tensors' must be an object")
    made_by = entry.get("made_by")
    if not (isinstance(made_by, list) and len(made_by) == 2):
        raise WireError("a tensor's 'made_by' must be [operator, slot]")
    made_by = tuple(_integer(v, "made_by") for v in made_by)
    dtype, encoding = entry.get("dtype"), entry.get("encoding")
    if dtype not in DTYPES:
        raise WireError(f"dtype {str(dtype)[:30]!r} is not one of {', '.join(DTYPES)}")
    if encoding not in TRANSPORT_ENCODINGS:
        raise WireError(f"encoding {str(encoding)[:30]!r} is not one of "
                        f"{', '.join(TRANSPORT_ENCODINGS)}")
    ranges = entry.get("ranges")
    if not isinstance(ranges, list) or not ranges or not all(
            isinstance(r, list) and len(r) == 2 for r in ranges):
        raise WireError("a tensor's 'ranges' must be a list of [begin, end]")
    bounds = np.array([[_integer(b, "a range's begin"), _integer(e, "a range's end")]
                       for b, e in ranges], np.int64)
    if (bounds[:, 1] <= bounds[:, 0]).any() or (bounds[1:, 0] < bounds[:-1, 1]).any():
        raise WireError("a tensor's ranges must be non-empty, in order and apart")
    tensor = CutTensor((), DTYPES[dtype], int((bounds[:, 1] - bounds[:, 0]).sum()), "",
                       made_by=made_by, ranges=(bounds[:, 0], bounds[:, 1]))
    return tensor, encoding, _integer(entry.get("size"), "a tensor's 'size'"), entry


class TailService:
    """Runs the tail of each ``run`` request on ``model`` (the server's handler).

    Args:
        model: the model, on the server's device.
        inputs: placeholders of the head's inputs (their values are never read unless they
            cross the cut, when the request's bytes replace them).
        attach: the stages attached by module path, as on the head.
        poison: fill every stand-in with NaN (tests).
    """

    def __init__(self, model: torch.nn.Module, inputs: Any,
                 attach: Optional[Mapping[str, str]] = None, *, poison: bool = False) -> None:
        self.model, self.inputs, self.attach, self.poison = model, inputs, attach, poison
        self.tapes: OrderedDict[str, list] = OrderedDict()
        self.device = next((t.device for t in iter_tensors(inputs)), torch.device("cpu"))

    def _tape(self, header: dict, body: bytes) -> tuple[list, int]:
        """The request's tape (from the body, or kept from an earlier request) and the body
        bytes it took."""
        tape = header.get("tape")
        if not isinstance(tape, dict) or not isinstance(tape.get("sha"), str):
            raise WireError("a run request needs 'tape': {sha, size, raw}")
        size = _integer(tape.get("size"), "the tape's size", 0, len(body))
        if size == 0:
            if tape["sha"] not in self.tapes:
                raise WireError("this server holds no tape of that hash; send it")
            return self.tapes[tape["sha"]], 0
        raw = _integer(tape.get("raw"), "the tape's raw size", 1, MAX_TAPE_BYTES)
        decompressor = zlib.decompressobj()
        # at most ``raw`` bytes: a tape that inflates past its announced size is refused unheld
        data = decompressor.decompress(body[:size], raw)
        if len(data) != raw or not decompressor.eof or decompressor.unconsumed_tail:
            raise WireError("the tape does not decompress to the size announced")
        if hashlib.sha256(data).hexdigest() != tape["sha"]:
            raise WireError("the tape does not match its hash")
        try:
            entries = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise WireError("the tape is not JSON") from None
        if not isinstance(entries, list) or not all(
                isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) for e in entries):
            raise WireError("the tape must be a list of [operator, result]")
        self.tapes[tape["sha"]] = entries
        while len(self.tapes) > KEPT_TAPES:
            self.tapes.popitem(last=False)
        return entries, size

    def __call__(self, header: dict, body: bytes) -> tuple[dict, list[bytes]]:
        position = _integer(header.get("position"), "position")
        tape, offset = self._tape(header, body)
        if not isinstance(header.get("tensors"), list):
            raise WireError("a run request needs 'tensors': a list")
        parsed = [_tensor(entry) for entry in header["tensors"]]
        if offset + sum(size for _, _, size, _ in parsed) != len(body):
            raise WireError("the tensors' sizes do not add up to the body")
        start = time.perf_counter()
        pieces = []
        for tensor, encoding, size, entry in parsed:
            pieces.append(decode_piece(body[offset:offset + size], tensor.dtype, encoding,
                                       tensor.nbytes, entry).to(self.device))
            offset += size
        decode_ms = (time.perf_counter() - start) * 1e3
        tail = run_tail(self.model, self.inputs, position, [t for t, *_ in parsed], pieces,
                        tape, self.attach, poison=self.poison)
        reply = {"op": "done", "decode_ms": decode_ms, "skip_ms": tail.skip_ms,
                 "tail_ms": tail.tail_ms}
        if not header.get("output"):
            return reply, []
        outputs = [t.detach().contiguous().cpu() for t in iter_tensors(tail.output)]
        reply["outputs"] = [{"dtype": str(t.dtype).removeprefix("torch."),
                             "shape": list(t.shape)} for t in outputs]
        return reply, [t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
                       for t in outputs]


def output_tensors(reply: dict, body: bytes) -> list[torch.Tensor]:
    """The output tensors a reply with ``outputs`` carries."""
    tensors, offset = [], 0
    for entry in reply.get("outputs", []):
        dtype = DTYPES[entry["dtype"]]
        count = int(np.prod(entry["shape"], dtype=np.int64))
        size = count * dtype.itemsize
        data = bytearray(body[offset:offset + size])  # writable: frombuffer warns on bytes
        flat = torch.frombuffer(data, dtype=dtype) if size else torch.empty(0, dtype=dtype)
        tensors.append(flat.reshape(entry["shape"]))
        offset += size
    return tensors
