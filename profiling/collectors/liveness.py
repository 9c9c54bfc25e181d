"""Tensor liveness across cut points of a forward: what a split there would transmit.

A cut of the forward must transmit every tensor that was produced before it and is read after
it, not only the last stage's output: a skip connection, the input image kept for
post-processing, anchors computed early. This collector sees every operator at the dispatcher
and keeps, per tensor storage, the operator that made it and every later read, with the exact
byte ranges of the views read (:mod:`profiling.split.byte_ranges`), and every in-place write. After
the forward, :mod:`profiling.split.cuts` gives the storages alive across each candidate cut and the
bytes of them read after it. The model's inputs (when given) count as produced before the
first operator; the forward's outputs count as read after the last one.

Candidate cuts: before the first operator (``input``), after each stage call (nested ones
too: ``model.stage_depth=2`` gives a cut after every block),
after the forward (``output``), plus whatever :meth:`Liveness.mark` is called for (module
boundaries, see :func:`profiling.runner.analyse_cuts`) and, with ``every_op``, after every
operator. Each operator is also priced with the counting formulas
(:mod:`profiling.counting`), so the FLOPs and bytes done before each cut are known.
"""

from __future__ import annotations

import gc
import sys
import weakref
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..split.byte_ranges import EMPTY, ByteRanges, merge_ranges, view_ranges
from ..counting import OpCounting
from ..counting.registry import formula_for
from ..split.cuts import Cut, CutTensor, Mark, alive_bytes, build_cuts
from ..split.encodings import check_codecs, encoded_bytes
from ..stages.payload import iter_tensors
from ..stages.markers import StageCall
from .base import Collector
from .metrics import Metric
from .registry import register_collector

__all__ = ["Liveness", "Cut", "CutTensor", "encoded_bytes", "decompose_uncounted", "made_tensors",
           "operator_tensors"]

#: Operators that overwrite their first argument without reading it.
_OVERWRITING = frozenset({"copy_", "fill_", "zero_", "uniform_", "normal_", "random_",
                          "bernoulli_", "exponential_"})


class _Storage:
    """What the collector knows of one storage."""

    __slots__ = ("shape", "dtype", "nbytes", "produced", "slot", "uses", "writes",
                 "version_start", "pins", "producer", "ref", "alive", "__weakref__")

    def __init__(self, tensor: torch.Tensor, produced: int, producer: str, slot: int) -> None:
        self.shape, self.dtype = tuple(tensor.shape), tensor.dtype
        self.nbytes = tensor.untyped_storage().nbytes()
        self.produced = self.version_start = produced
        self.slot = slot
        self.uses: list[tuple[int, ByteRanges, bool]] = []  # (operator, ranges, overwrites)
        self.writes: list[int] = []  # operators that changed it in place
        self.pins: dict[int, torch.Tensor] = {}  # content (flat uint8) per version
        self.producer = producer
        self.ref: Optional[weakref.ref] = None
        self.alive = True

    @property
    def version(self) -> int:
        """In-place writes so far."""
        return len(self.writes)

    def storage_bytes(self) -> Optional[torch.Tensor]:
        """The storage, while it lives, as a flat ``uint8`` tensor (no copy)."""
        storage = self.ref() if self.ref is not None else None
        if storage is None:
            return None
        return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)

    def content(self, version: int) -> Optional[torch.Tensor]:
        """The content at ``version``, if it was kept or is still the current one."""
        pinned = self.pins.get(version)
        if pinned is None and version == self.version:
            pinned = self.storage_bytes()
        return pinned


def operator_tensors(values) -> list[torch.Tensor]:
    """The tensors among an operator's arguments or results (ATen nests them one list deep)."""
    found = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, torch.Tensor))
    return found


def _unique_marks(marks: list[Mark]) -> list[Mark]:
    """The marks without a module's that repeats a stage's at the same point (a module
    attached as a stage), and a module named like a stage elsewhere renamed ``path
    (module)``, so that every cut has its own name."""
    stages = {(m.name, m.position) for m in marks if m.kind == "stage"}
    names = {name for name, _ in stages}
    unique = []
    for mark in marks:
        if mark.kind == "module" and (mark.name, mark.position) in stages:
            continue
        if mark.kind == "module" and mark.name in names:
            mark = Mark(f"{mark.name} (module)", mark.kind, mark.position, mark.call)
        unique.append(mark)
    return unique


def decompose_uncounted(mode: TorchDispatchMode, func: Any, args: tuple, kwargs: dict) -> Any:
    """``func`` run as its parts under ``mode`` when no counting formula prices it whole (a
    composite operator such as conv2d or linear under inference mode: each part is seen,
    priced and a boundary of its own), else ``NotImplemented``. Every pass that numbers the
    operators of a forward does this, so that they all number them alike."""
    if formula_for(func._overloadpacket) is not None:
        return NotImplemented
    with mode:
        return func.decompose(*args, **kwargs)


def made_tensors(inputs: Sequence[torch.Tensor], out: Any) -> list[torch.Tensor]:
    """The tensors among an operator's results whose storage is not one of its ``inputs``'
    (a view reads no data, and an operator that may alias, reshape, is a view when it did not
    copy); a storage's place in this list is its slot (:attr:`CutTensor.made_by`)."""
    used = {id(t.untyped_storage()) for t in inputs}
    return [t for t in operator_tensors((out,)) if id(t.untyped_storage()) not in used]


class _Tracker(TorchDispatchMode):
    """Numbers the operators and records what each one makes, reads and writes."""

    def __init__(self, owner: "Liveness") -> None:
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        owner = self.owner
        decomposed = decompose_uncounted(self, func, args, kwargs)
        if decomposed is not NotImplemented:
            return decomposed
        if owner.every_op:  # every operator boundary is a cut: keep content from here on
            owner.last_mark = owner.clock
        inputs = operator_tensors(args) + operator_tensors(kwargs.values())
        written = owner.written(func, args, kwargs)
        if owner.keep_content:
            owner.keep(inputs, written)
        out = func(*args, **kwargs)
        owner.clock += 1
        owner.price(func, args, kwargs, out)
        made = made_tensors(inputs, out)
        overwritten = {id(t) for t, overwrite in written if overwrite}
        if not (getattr(func, "is_view", False) and not made):  # a view reads no bytes
            for tensor in inputs:
                record = owner.live.get(id(tensor.untyped_storage()))
                if record is not None:
                    record.uses.append((owner.clock, view_ranges(tensor),
                                        id(tensor) in overwritten))
        for tensor, _ in written:
            record = owner.live.get(id(tensor.untyped_storage()))
            if record is not None:
                record.writes.append(owner.clock)
                record.version_start = owner.clock
        for slot, tensor in enumerate(made):
            if id(tensor.untyped_storage()) not in owner.live:
                owner.track(tensor, owner.clock, slot)
        return out


@register_collector
class Liveness(Collector):
    """Bytes alive across each cut point, raw and encoded.

    After each forward, :attr:`cuts` lists the cuts (see the module's docstring) in forward
    order; the top-level stage calls get the metrics of the cut that follows them. Storages
    are tracked, not tensors, so a tensor and its views count once, with the elements its
    views read after the cut. :attr:`timeline` holds the raw bytes alive after every operator.

    What it cannot see: values that are not tensors (Python numbers such as image sizes),
    parameters and buffers (both sides of a split hold the weights). The inputs are counted
    only when given. The outputs are the tensors passed to :meth:`set_outputs` before the
    forward ends (:func:`profiling.runner.analyse_cuts` does it); without that call they are
    the storages still alive after the forward, which also takes in any tensor the model keeps
    between forwards (such as cached anchors).

    Measuring codecs keeps the content of every storage read after a cut until the end of the
    forward (a copy only before an in-place write), then, after the forward, compresses once
    what crosses a cut (:func:`~profiling.split.compressed_sizes`, on every core).

    Args:
        inputs: the forward's arguments (any nesting); their tensors are the model's inputs.
        codecs: names of :data:`~profiling.split.CODECS` to measure (real data only: none
            on the meta device).
        every_op: make every operator boundary a candidate cut.
        codec: one codec (the former single-codec argument); added to ``codecs``.
    """

    name = "liveness"
    pass_name = "liveness"
    metrics = tuple(Metric(name, unit="bytes", kind="bytes", description=description)
                    for name, description in (
                        ("cut_bytes", "bytes alive across the cut after the stage"),
                        ("cut_fp16_bytes", "the same with float32 sent as float16"),
                        ("cut_int8_bytes", "the same with floats quantised to int8")))

    def __init__(self, inputs: Any = None, codecs: Sequence[str] = (), *,
                 every_op: bool = False, codec: Optional[str] = None) -> None:
        self.codecs = check_codecs(tuple(codecs) + ((codec,) if codec else ()))
        self.inputs = inputs
        self.every_op = every_op
        self.cuts: list[Cut] = []
        self.timeline = np.zeros(0, np.int64)
        self.op_names: list[str] = []
        self.op_flops = np.zeros(0, np.int64)
        self.op_bytes = np.zeros(0, np.int64)
        self.stage_spans: list[tuple[StageCall, int, int]] = []
        self._copies: Mapping[int, Any] = {}
        self._reset()

    def _reset(self) -> None:
        self.live: dict[int, _Storage] = {}
        self.clock = self.last_mark = 0
        self.keep_content = False
        self._records: list[_Storage] = []
        self._marks: list[Mark] = []
        self._current = ""
        self._starts: dict[int, int] = {}
        self._outputs: Optional[dict[int, ByteRanges]] = None
        self._mode: Optional[_Tracker] = None
        self._counting = OpCounting()
        self._flops: list[int] = [0]
        self._traffic: list[int] = [0]
        self._names: list[str] = [""]
        self._written: dict[Any, tuple[tuple[int, bool], ...]] = {}

    def written(self, func: Any, args: tuple, kwargs: dict) -> list[tuple[torch.Tensor, bool]]:
        """The tensors ``func`` writes into, each with whether it overwrites without reading."""
        positions = self._written.get(func)
        if positions is None:
            schema = getattr(func, "_schema", None)
            base = getattr(getattr(func, "_overloadpacket", None), "__name__", "")
            positions = tuple(
                (i, bool(getattr(a, "is_out", False)) or (i == 0 and base in _OVERWRITING))
                for i, a in enumerate(getattr(schema, "arguments", ()))
                if a.alias_info is not None and a.alias_info.is_write)
            self._written[func] = positions
        arguments = getattr(getattr(func, "_schema", None), "arguments", ())
        targets = []
        for index, overwrite in positions:
            target = args[index] if index < len(args) else kwargs.get(arguments[index].name)
            if isinstance(target, torch.Tensor):
                targets.append((target, overwrite))
        return targets

    def keep(self, inputs: list[torch.Tensor], written: list[tuple[torch.Tensor, bool]]
             ) -> None:
        """Before an operator: keep the content of each storage it touches that was alive
        across a cut since its last change, and copy it first if the operator changes it."""
        for tensor in inputs:
            record = self.live.get(id(tensor.untyped_storage()))
            if (record is not None and self.last_mark >= record.version_start
                    and record.version not in record.pins):
                record.pins[record.version] = record.storage_bytes()
        for tensor, _ in written:
            record = self.live.get(id(tensor.untyped_storage()))
            if record is not None and record.version in record.pins:
                record.pins[record.version] = record.pins[record.version].clone()

    def price(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """Add the operator's FLOPs and bytes (the counting formulas') to the per-op lists."""
        total = self._counting.total
        flops, traffic = total.flops, total.bytes_read + total.bytes_written
        packet = func._overloadpacket
        self._counting.record(packet, args, kwargs, out)
        self._flops.append(total.flops - flops)
        self._traffic.append(total.bytes_read + total.bytes_written - traffic)
        self._names.append(str(packet))

    def set_outputs(self, value: Any) -> None:
        """Name the forward's outputs (any nesting); call it inside the forward's block."""
        self._outputs = {}
        for tensor in iter_tensors(value):
            record = self.live.get(id(tensor.untyped_storage()))
            if record is not None and record.produced > 0:
                key = id(record)
                self._outputs[key] = merge_ranges([self._outputs.get(key, EMPTY),
                                                   view_ranges(tensor)])

    def mark(self, name: str, kind: str, call: Any = None) -> None:
        """Make the point between the last operator and the next one a candidate cut."""
        self._marks.append(Mark(name, kind, self.clock, call))
        self.last_mark = self.clock

    def track(self, tensor: torch.Tensor, produced: int, slot: int) -> None:
        """Start following the storage of ``tensor``, made by operator ``produced`` (its
        ``slot``-th new storage; for the inputs, the ``slot``-th input tensor)."""
        storage = tensor.untyped_storage()
        key = id(storage)
        record = _Storage(tensor, produced, "input" if produced == 0 else self._current, slot)
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

    def use_copies(self, copies: Mapping[int, Any]) -> None:
        """Follow the copies of the inputs' tensors that the next forward gets."""
        self._copies = copies

    def start_forward(self) -> None:
        self._reset()
        self.cuts, self.stage_spans = [], []
        inputs = [self._copies.get(id(t), t) for t in iter_tensors(self.inputs)]
        for slot, tensor in enumerate(inputs):
            if id(tensor.untyped_storage()) not in self.live:
                self.track(tensor, 0, slot)
        self.keep_content = bool(self.codecs) and any(t.device.type != "meta" for t in inputs)
        self.mark("input", "input")
        self._mode = _Tracker(self)
        self._mode.__enter__()

    def enter(self, call: StageCall) -> None:
        if call.depth == 0:
            self._current = call.name
            self._starts[id(call)] = self.clock

    def exit(self, call: StageCall) -> None:
        if call.depth == 0:
            self._current = ""
            self.stage_spans.append((call, self._starts.pop(id(call), self.clock), self.clock))
        self.mark(call.name + (f"[{call.call_index}]" if call.call_index else ""), "stage", call)

    def end_forward(self) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        if sys.exc_info()[0] is not None:  # the forward raised: nothing to cut, let it go on
            self.live, self._records = {}, []
            return
        if self._outputs is None:
            gc.collect()  # so that only what the forward returned is still alive
            self._outputs = {id(r): ((np.zeros(1, np.int64)), np.array([r.nbytes], np.int64))
                             for r in self._records if r.alive and r.produced > 0}
        last = self.clock
        self.mark("output", "output")
        if self.every_op:
            self._marks += [Mark(f"#{k} {self._names[k]}", "op", k) for k in range(1, last)]
        marks = sorted(_unique_marks(self._marks), key=lambda m: m.position)  # stable
        self.op_names = list(self._names)
        self.op_flops = np.array(self._flops, np.int64)
        self.op_bytes = np.array(self._traffic, np.int64)
        self.timeline = alive_bytes(self._records, self._outputs, last)
        self.cuts = build_cuts(self._records, self._outputs, marks, last,
                               self.codecs if self.keep_content else ())
        for cut in self.cuts:
            if cut.kind == "stage" and cut.call is not None:
                cut.call.metrics.update({"cut_bytes": cut.raw_bytes,
                                         "cut_fp16_bytes": cut.fp16_bytes,
                                         "cut_int8_bytes": cut.int8_bytes})
                for codec in self.codecs:
                    if cut.sizes.get(codec) is not None:
                        cut.call.metrics[f"cut_{codec.replace('+', '_')}_bytes"] = cut.sizes[codec]
        for record in self._records:  # the kept contents (copies among them) are compressed
            record.pins = {}

    def close(self) -> None:
        if self._mode is not None:  # a forward that never reached end_forward
            self._mode.__exit__(None, None, None)
            self._mode = None
        self.live, self._records, self._marks = {}, [], []
