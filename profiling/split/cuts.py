"""From the storages a forward made and read to the bytes alive across each cut.

:class:`~profiling.collectors.liveness.Liveness` records, for every storage, the operator that
made it, every later read (with the exact byte ranges of the views read, see
:mod:`profiling.split.byte_ranges`) and every in-place write. :func:`build_cuts` turns that into
:class:`Cut` objects: a storage is alive across the cut after operator ``c`` when it was made
at or before ``c`` and is read after ``c`` (or is an output of the forward), and what the cut
sends of it is the union of the ranges read after ``c``. The work is done once per storage
and per stretch of the forward where that union and the storage's content stay the same, not
once per cut: every byte is compressed once, whatever the number of cuts.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import torch

from .byte_ranges import EMPTY, ByteRanges, merge_ranges, ranges_size, subtract_ranges
from .encodings import SIZE_ENCODINGS, compressed_sizes, encoded_bytes

__all__ = ["Cut", "CutTensor", "Mark", "build_cuts", "alive_bytes"]


@dataclass
class CutTensor:
    """One storage alive across a cut (a tensor and all its views).

    Attributes:
        shape, dtype: of the tensor that created the storage.
        nbytes: the bytes of the storage's elements read after the cut (the union of the
            views read), never padding that no later operator reads.
        producer: the top-level stage during which it was made (``"input"`` for the inputs,
            ``""`` between stages).
        compressed: its size under each codec, from its content at the cut.
        made_by: ``(operator, slot)``: the operator that made the storage (0 for the inputs)
            and its place among the storages that operator made (among the inputs' tensors):
            how another run of the same forward finds it (:mod:`profiling.runner.split_run`).
        ranges: the byte ranges of the storage read after the cut (what is sent of it).
    """

    shape: tuple[int, ...]
    dtype: torch.dtype
    nbytes: int
    producer: str
    compressed: dict[str, Optional[int]] = field(default_factory=dict)
    made_by: tuple[int, int] = (-1, -1)
    ranges: Optional[ByteRanges] = None


@dataclass
class Mark:
    """A candidate cut point: after operator ``position`` (0: before the first)."""

    name: str
    kind: str
    position: int
    call: Any = None


@dataclass
class Cut:
    """A point where the forward can be split, and what crosses it.

    Attributes:
        name: ``"input"``, ``"output"``, a top-level stage (``name[i]`` for its call ``i >
            0``), a module path (``layer1.0``) or an operator (``#12 aten.convolution``).
        kind: ``input``, ``stage``, ``module``, ``op`` or ``output``.
        position: operators run before the cut.
        tensors: the storages alive across it.
        sizes: bytes sent under each encoding (``raw``, ``fp16``, ``int8`` and each codec
            measured; a codec's is ``None`` on the meta device).
        call: the stage call it follows (a ``stage`` cut), else ``None``.
    """

    name: str
    kind: str
    position: int
    tensors: list[CutTensor] = field(default_factory=list)
    sizes: dict[str, Optional[int]] = field(default_factory=dict)
    call: Any = None

    @property
    def stage(self) -> Optional[str]:
        """The stage call it follows (``stage`` cuts), else ``None``."""
        return None if self.call is None else self.call.name

    @property
    def call_index(self) -> Optional[int]:
        """The call index of :attr:`stage`, else ``None``."""
        return None if self.call is None else self.call.call_index

    @property
    def raw_bytes(self) -> int:
        """Bytes as they are in memory."""
        return self.sizes["raw"]

    @property
    def fp16_bytes(self) -> int:
        """Bytes with every floating tensor of more than 16 bits cast to 16 bits."""
        return self.sizes["fp16"]

    @property
    def int8_bytes(self) -> int:
        """Bytes with every floating tensor quantised to 8 bits (scale and zero point aside)."""
        return self.sizes["int8"]


@dataclass
class _Piece:
    """A stretch ``[first, end)`` of cut positions over which a storage sends the same."""

    first: int
    end: int
    ranges: ByteRanges
    nbytes: int
    version: int


def _pieces(record: Any, output: Optional[ByteRanges], last: int) -> list[_Piece]:
    """The stretches of cut positions where ``record`` is alive, and what it sends there.

    Walking back from the end: an operator's reads add the ranges they read, and a write that
    overwrites without reading (``copy_``, ``fill_``, an ``out=`` argument) removes the ranges
    it writes, since the content before it is never read.
    """
    times: list[int] = []
    events: list[list[tuple[ByteRanges, bool]]] = []
    for time, ranges, overwrite in record.uses:
        if times and times[-1] == time:
            events[-1].append((ranges, overwrite))
        else:
            times.append(time)
            events.append([(ranges, overwrite)])
    covered = output if output is not None else EMPTY
    size = ranges_size(covered)
    stretches = []
    if output is not None:
        stretches.append((times[-1] if times else record.produced, last + 1, covered, size))
    for j in range(len(times) - 1, -1, -1):
        overwritten = [ranges for ranges, overwrite in events[j] if overwrite]
        if overwritten:
            covered = subtract_ranges(covered, merge_ranges(overwritten))
        read = [ranges for ranges, overwrite in events[j] if not overwrite]
        if read and (overwritten or size < record.nbytes):
            merged = merge_ranges([covered, *read])
            if overwritten or ranges_size(merged) > size:
                covered = merged
        size = ranges_size(covered)
        first = record.produced if j == 0 else times[j - 1]
        if times[j] > first and size:
            stretches.append((first, times[j], covered, size))
    return [_Piece(first, end, ranges, size, bisect.bisect_right(record.writes, first))
            for first, end, ranges, size in reversed(stretches)]


def alive_bytes(records: Sequence[Any], outputs: dict[int, ByteRanges], last: int
                ) -> np.ndarray:
    """Raw bytes alive across the cut after every operator ``0..last``."""
    steps = np.zeros(last + 2, np.int64)
    for record in records:
        for piece in _pieces(record, outputs.get(id(record)), last):
            steps[piece.first] += piece.nbytes
            steps[min(piece.end, last + 1)] -= piece.nbytes
    return np.cumsum(steps[:-1])


def build_cuts(records: Sequence[Any], outputs: dict[int, ByteRanges], marks: Sequence[Mark],
               last: int, codecs: Sequence[str]) -> list[Cut]:
    """The cuts at ``marks`` (sorted by position), from the collector's storage records.

    Args:
        records: every storage followed (see ``liveness._Storage``).
        outputs: the ranges of each output storage (by record id) the forward returns.
        marks: the candidate cut points, in position order.
        last: the number of operators the forward ran.
        codecs: the codecs to measure (each storage's content must have been kept). Each
            distinct content and read range is compressed once, after every storage's pieces
            are known: only what crosses a candidate cut is compressed.
    """
    positions = np.array([mark.position for mark in marks], np.int64)
    cuts = [Cut(m.name, m.kind, m.position, call=m.call) for m in marks]
    names = SIZE_ENCODINGS + tuple(codecs)
    steps = {name: np.zeros(len(marks) + 1, np.int64) for name in names + ("missing",)}
    tasks: dict[tuple[int, int, bytes, bytes], int] = {}
    items: list[tuple[torch.Tensor, ByteRanges, torch.dtype]] = []
    spans: list[tuple[int, int, Any, _Piece, Optional[int]]] = []
    for record in records:
        for piece in _pieces(record, outputs.get(id(record)), last):
            first, end = np.searchsorted(positions, [piece.first, piece.end])
            if end <= first:
                continue
            task = None
            if codecs:
                content = record.content(piece.version)
                if content is not None:
                    key = (id(record), piece.version, *(r.tobytes() for r in piece.ranges))
                    task = tasks.get(key)
                    if task is None:
                        task = tasks[key] = len(items)
                        items.append((content, piece.ranges, record.dtype))
            spans.append((int(first), int(end), record, piece, task))
    sizes = compressed_sizes(items, codecs)
    for first, end, record, piece, task in spans:
        measured = sizes[task] if task is not None else {}
        sent = {"raw": piece.nbytes, "fp16": encoded_bytes(piece.nbytes, record.dtype, 2),
                "int8": encoded_bytes(piece.nbytes, record.dtype, 1), **measured,
                "missing": 0 if task is not None or not codecs else 1}
        for name, value in sent.items():
            steps[name][first] += value
            steps[name][end] -= value
        tensor = CutTensor(record.shape, record.dtype, piece.nbytes, record.producer,
                           dict(measured) if task is not None else dict.fromkeys(codecs),
                           (record.produced, record.slot), piece.ranges)
        for index in range(first, end):
            cuts[index].tensors.append(tensor)
    totals = {name: np.cumsum(values[:-1]) for name, values in steps.items()}
    for index, cut in enumerate(cuts):
        cut.sizes = {name: int(totals[name][index]) for name in SIZE_ENCODINGS}
        complete = totals["missing"][index] == 0
        cut.sizes.update({codec: int(totals[codec][index]) if complete else None
                          for codec in codecs})
    return cuts
