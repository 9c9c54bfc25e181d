"""Tensor liveness across the top-level stage boundaries: what a split there would transmit.

A cut of the forward after a top-level stage must transmit every tensor that was produced
before it and is used after it, not only that stage's output: a skip connection, the input
image kept for post-processing, anchors computed early. This collector sees every operator at
the dispatcher and keeps, per tensor storage, the operator that produced it and the last
operator that read or wrote it. After the forward, the storages alive across each boundary are
known: produced at or before it, used after it. The model's inputs (when given) count as
produced before the first operator; the storages still alive when the forward has returned
(its outputs) count as used after the last one.
"""

from __future__ import annotations

import gc
import lzma
import weakref
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from ..errors import ProfilingError
from ..payload import iter_tensors
from ..stages import StageCall
from .base import Collector

__all__ = ["Liveness", "Cut", "CutTensor", "CODECS", "encoded_bytes"]

#: Standard codecs for the compressed size of a cut: name -> compress(bytes-like) -> bytes.
CODECS: dict[str, Callable[[Any], bytes]] = {
    "zlib": lambda data: zlib.compress(data, 6),
    "lzma": lambda data: lzma.compress(data, preset=1),
}


@dataclass
class CutTensor:
    """One storage alive across a cut (a tensor and all its views).

    Attributes:
        shape, dtype: of the tensor that created the storage.
        nbytes: the bytes of the storage read after the cut: all of it, unless only views of
            a part of it are read (one image of a batched tensor).
        producer: the top-level stage during which it was made (``"input"`` for the inputs,
            ``""`` between stages).
        compressed: its bytes after the codec at the time of the cut (the whole storage's,
            scaled by the part read), or ``None``.
    """

    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int
    producer: str
    compressed: Optional[int] = None


@dataclass
class Cut:
    """A point where the forward can be split, and the storages alive across it.

    Attributes:
        name: ``"input"`` (before everything), the top-level stage it follows (``name[i]``
            for a stage's call ``i > 0``), or ``"output"`` (after the forward).
        stage, call_index: the top-level stage call it follows (``None`` for input/output).
        position: operators run before the cut.
        tensors: the storages alive across it.
    """

    name: str
    stage: Optional[str]
    call_index: Optional[int]
    position: int
    tensors: list[CutTensor] = field(default_factory=list)

    @property
    def raw_bytes(self) -> int:
        """Bytes as they are in memory."""
        return sum(t.nbytes for t in self.tensors)

    @property
    def fp16_bytes(self) -> int:
        """Bytes with every floating tensor of more than 16 bits cast to 16 bits."""
        return sum(encoded_bytes(t.nbytes, t.dtype, 2) for t in self.tensors)

    @property
    def int8_bytes(self) -> int:
        """Bytes with every floating tensor quantised to 8 bits (scale and zero point aside)."""
        return sum(encoded_bytes(t.nbytes, t.dtype, 1) for t in self.tensors)

    @property
    def compressed_bytes(self) -> Optional[int]:
        """Bytes with each storage compressed on its own, or ``None`` when not computed."""
        sizes = [t.compressed for t in self.tensors]
        return None if any(s is None for s in sizes) else sum(sizes)


def encoded_bytes(nbytes: int, dtype: torch.dtype, itemsize: int) -> int:
    """The bytes of a storage once its floating elements take ``itemsize`` bytes each.

    Integer and boolean tensors (indices, masks) are sent as they are, and floating tensors
    already as small are not widened.
    """
    if not dtype.is_floating_point or dtype.itemsize <= itemsize:
        return nbytes
    return nbytes // dtype.itemsize * itemsize


def _byte_span(tensor: torch.Tensor) -> tuple[int, int]:
    """The bytes of its storage a tensor (a view) can reach: ``(first, end)``."""
    if tensor.numel() == 0:
        return 0, 0
    itemsize = tensor.element_size()
    first = tensor.storage_offset() * itemsize
    reach = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    return first, first + (reach + 1) * itemsize


def _union(spans: list[tuple[int, int]]) -> int:
    """Bytes covered by ``[first, end)`` spans."""
    total, reached = 0, 0
    for first, end in sorted(spans):
        first = max(first, reached)
        if end > first:
            total += end - first
            reached = end
    return total


class _Storage:
    """What the collector knows of one storage."""

    __slots__ = ("shape", "dtype", "nbytes", "produced", "last_use", "version", "producer",
                 "ref", "alive", "uses", "__weakref__")

    def __init__(self, tensor: torch.Tensor, produced: int, producer: str) -> None:
        self.shape, self.dtype = tuple(tensor.shape), tensor.dtype
        self.nbytes = tensor.untyped_storage().nbytes()
        self.produced, self.last_use, self.version = produced, produced, 0
        self.uses: list[tuple[int, int, int]] = []  # (operator, first byte, end byte) read
        self.producer = producer
        self.ref: Optional[weakref.ref] = None
        self.alive = True


class _Tracker(TorchDispatchMode):
    """Numbers the operators and updates the producer and last use of their storages."""

    def __init__(self, owner: "Liveness") -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        owner = self.owner
        if owner.paused:
            return out
        owner.clock += 1
        inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        used = {id(t.untyped_storage()) for t in inputs}
        made = [t for t in outputs if id(t.untyped_storage()) not in used]
        # A view reads no data: the view's later uses say which bytes are needed. Ops that
        # may alias (reshape) are views only when they did not copy.
        if not (getattr(func, "is_view", False) and not made):
            for tensor in inputs:
                record = owner.live.get(id(tensor.untyped_storage()))
                if record is not None:
                    record.last_use = owner.clock
                    record.uses.append((owner.clock, *_byte_span(tensor)))
        for index in owner.written_arguments(func):
            target = args[index] if index < len(args) else None
            if isinstance(target, torch.Tensor):
                record = owner.live.get(id(target.untyped_storage()))
                if record is not None:
                    record.version += 1
        for tensor in made:
            if id(tensor.untyped_storage()) not in owner.live:
                owner.track(tensor, owner.clock)
        return out


class Liveness(Collector):
    """Bytes alive across each top-level stage boundary, raw and encoded.

    After each forward, :attr:`cuts` lists the cut before the first operator (``input``),
    after each top-level stage call, and after the forward (``output``); the top-level stage
    calls get the metrics of the cut that follows them. Storages are tracked, not tensors, so
    a tensor and its views count once, with the bytes its views read after the cut.

    What it cannot see: values that are not tensors (Python numbers such as image sizes),
    parameters and buffers (both sides of a split hold the weights). The inputs are counted
    only when given. The outputs are the tensors passed to :meth:`set_outputs` before the
    forward ends (:func:`profiling.split.analyse_cuts` does it); without that call they are
    the storages still alive after the forward, which also takes in any tensor the model keeps
    between forwards (such as cached anchors).

    Args:
        inputs: the forward's arguments (any nesting); their tensors are the model's inputs.
        codec: a name of :data:`CODECS` to measure each storage's compressed size at the time
            of the cut (real data only: on the meta device it is ``None``), or ``None``.
    """

    name = "liveness"
    pass_name = "liveness"
    metrics = ("cut_bytes", "cut_fp16_bytes", "cut_int8_bytes", "cut_compressed_bytes")

    def __init__(self, inputs: Any = None, codec: Optional[str] = None) -> None:
        if codec is not None and codec not in CODECS:
            raise ProfilingError(f"unknown codec '{codec}'; choose one of: "
                                 f"{', '.join(CODECS)}")
        self.inputs = inputs
        self.codec = codec
        self.cuts: list[Cut] = []
        self.live: dict[int, _Storage] = {}
        self.clock = 0
        self.paused = False
        self._records: list[_Storage] = []
        self._boundaries: list[tuple[Optional[StageCall], int, dict[int, int]]] = []
        self._current = ""
        self._written: dict[Any, tuple[int, ...]] = {}
        self._cache: dict[int, tuple[int, int]] = {}
        self._outputs: Optional[dict[int, list[tuple[int, int]]]] = None
        self._mode: Optional[_Tracker] = None

    def written_arguments(self, func: Any) -> tuple[int, ...]:
        """Positions of the arguments ``func`` writes into (in-place and ``out=`` ops)."""
        positions = self._written.get(func)
        if positions is None:
            arguments = getattr(getattr(func, "_schema", None), "arguments", ())
            positions = tuple(i for i, a in enumerate(arguments)
                              if a.alias_info is not None and a.alias_info.is_write)
            self._written[func] = positions
        return positions

    def set_outputs(self, value: Any) -> None:
        """Name the forward's outputs (any nesting); call it inside the forward's block."""
        self._outputs = {}
        for tensor in iter_tensors(value):
            record = self.live.get(id(tensor.untyped_storage()))
            if record is not None and record.produced > 0:
                self._outputs.setdefault(id(record), []).append(_byte_span(tensor))

    def track(self, tensor: torch.Tensor, produced: int) -> None:
        """Start following the storage of ``tensor``, made by operator ``produced``."""
        storage = tensor.untyped_storage()
        key = id(storage)
        record = _Storage(tensor, produced, "input" if produced == 0 else self._current)
        record.ref = weakref.ref(storage, lambda _, key=key, record=record:
                                 self._freed(key, record))
        self.live[key] = record
        self._records.append(record)

    def _freed(self, key: int, record: _Storage) -> None:
        record.alive = False
        if self.live.get(key) is record:
            del self.live[key]

    def bind(self, model, inputs) -> None:
        """Count the forward's ``inputs`` as the model's inputs unless others were given."""
        if self.inputs is None:
            self.inputs = inputs

    def start_forward(self, session) -> None:
        self.live, self._records, self._boundaries, self.cuts = {}, [], [], []
        self.clock, self._current, self._cache, self._outputs = 0, "", {}, None
        for tensor in iter_tensors(self.inputs):
            if id(tensor.untyped_storage()) not in self.live:
                self.track(tensor, 0)
        self._boundaries.append((None, 0, self._snapshot()))
        self._mode = _Tracker(self)
        self._mode.__enter__()

    def enter(self, call: StageCall) -> None:
        if call.depth == 0:
            self._current = call.name

    def exit(self, call: StageCall) -> None:
        if call.depth == 0:
            self._current = ""
            self._boundaries.append((call, self.clock, self._snapshot()))

    def end_forward(self, session) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        gc.collect()  # so that only what the forward returned is still alive
        end = (None, self.clock, self._snapshot())
        self.cuts = [self._cut(call, position, sizes)
                     for call, position, sizes in self._boundaries]
        self.cuts.append(self._cut(*end, last=True))
        for (call, _, _), cut in zip(self._boundaries[1:], self.cuts[1:-1]):
            call.metrics.update({"cut_bytes": cut.raw_bytes, "cut_fp16_bytes": cut.fp16_bytes,
                                 "cut_int8_bytes": cut.int8_bytes})
            if cut.compressed_bytes is not None:
                call.metrics["cut_compressed_bytes"] = cut.compressed_bytes

    def _cut(self, call: Optional[StageCall], position: int, sizes: dict[int, int], *,
             last: bool = False) -> Cut:
        if call is None:
            name = "output" if last else "input"
        else:
            name = call.name + (f"[{call.call_index}]" if call.call_index else "")
        cut = Cut(name, None if call is None else call.name,
                  None if call is None else call.call_index, position)
        for record in self._records:
            used_after = record.last_use > position or self._is_output(record)
            if record.produced <= position and used_after:
                needed = self._needed_bytes(record, position)
                compressed = sizes.get(id(record))
                if compressed is not None and needed < record.nbytes:
                    compressed = round(compressed * needed / record.nbytes)
                cut.tensors.append(CutTensor(record.shape, record.dtype, needed,
                                             record.producer, compressed))
        return cut

    def _needed_bytes(self, record: _Storage, position: int) -> int:
        """The bytes of the storage read after ``position`` (and those of the outputs)."""
        spans = [(first, end) for time, first, end in record.uses if time > position]
        if self._outputs is not None:
            spans += self._outputs.get(id(record), [])
        elif self._is_output(record):
            return record.nbytes
        return min(record.nbytes, _union(spans))

    def _is_output(self, record: _Storage) -> bool:
        if self._outputs is not None:
            return id(record) in self._outputs
        return record.alive and record.produced > 0

    def _snapshot(self) -> dict[int, int]:
        """The compressed size of every storage alive now, by record (cached per version)."""
        if self.codec is None:
            return {}
        compress = CODECS[self.codec]
        sizes = {}
        self.paused = True
        try:
            for record in list(self.live.values()):
                storage = record.ref() if record.ref is not None else None
                if storage is None or storage.device.type == "meta":
                    continue
                sizes[id(record)] = self._compressed(storage, record, compress)
        finally:
            self.paused = False
        return sizes

    def _compressed(self, storage, record: _Storage, compress) -> int:
        cached = self._cache.get(id(record))
        if cached is not None and cached[0] == record.version:
            return cached[1]
        data = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
        size = len(compress(data.cpu().numpy()))
        self._cache[id(record)] = (record.version, size)
        return size

    def close(self) -> None:
        if self._mode is not None:  # a forward that never reached end_forward
            self._mode.__exit__(None, None, None)
            self._mode = None
        self.live, self._records, self._boundaries, self._cache = {}, [], [], {}
