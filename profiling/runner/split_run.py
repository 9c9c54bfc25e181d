"""A forward run in two halves at a cut: the head up to it, the tail from it, for any model.

The split analysis (:func:`~profiling.runner.analyse_cuts`) numbers the operators of the
forward and says, for each cut, which storages are alive across it, each known by the operator
that made it and its slot among that operator's new storages
(:attr:`~profiling.split.CutTensor.made_by`). Both halves run the whole forward of the model's
own code under a dispatch mode that numbers the operators the same way:

* :func:`run_head` computes operators ``1..position`` for real, then takes the bytes of the
  storages alive across the cut (the ranges read after it) and stops the forward. On the way
  it writes the *tape*: for each operator, the layout of its results (shape, strides, dtype,
  or which argument a result aliases) and the Python values it returned (``.item()``, a
  comparison), which the model's control flow may have read.
* :func:`run_tail` runs the same forward, but operators ``1..position`` are not computed:
  each returns, from the tape, an uninitialised tensor of the head's layout (or the view of
  its argument, or the head's value), which costs an allocation and no arithmetic. After
  operator ``position`` the received bytes are written into the storages alive across the
  cut, and every later operator runs for real. Nothing before the cut is recomputed, and
  nothing the cut did not send is read after it (the liveness analysis's definition), so the
  tail's output is the unsplit forward's.

The model, its inputs' structure and the stages must be the same on both sides (the server
checks a hash); the tail's inputs are placeholders of the same shapes, whose values it never
reads unless they cross the cut.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..collectors.liveness import decompose_uncounted, made_tensors, operator_tensors
from ..errors import ProfilingError
from ..split.encodings import gather
from ..split.cuts import CutTensor
from ..split.transport import DTYPES
from ..stages.attach import attach_stages
from ..stages.guards import call_model
from ..stages.payload import iter_tensors
from ..stages.session import Session

__all__ = ["HeadRun", "TailRun", "run_head", "run_tail"]

#: The largest storage a tape may ask the tail to allocate (a hostile tape is refused).
MAX_TAPE_ALLOCATION = 1 << 36


class _Stop(BaseException):
    """Ends the head's forward at the cut (not an ``Exception``: model code never catches it)."""


@dataclass
class HeadRun:
    """What the head sends: ``pieces`` (each cut tensor's bytes read after the cut, a flat
    ``uint8`` tensor, in the order asked), the ``tape`` of operators ``1..position``, and the
    head's time in ms (the forward up to the cut and the gathering of the bytes)."""

    pieces: list[torch.Tensor]
    tape: list[Any]
    head_ms: float


@dataclass
class TailRun:
    """What the tail did: the forward's ``output``; ``skip_ms``, the time to pass operators
    ``1..position`` without computing them; ``tail_ms``, from the cut to the end."""

    output: Any
    skip_ms: float
    tail_ms: float


def _describe(value: Any, aliases: Mapping[int, int]) -> Any:
    """An operator's result as the tape holds it (JSON)."""
    if isinstance(value, torch.Tensor):
        layout = [list(value.shape), list(value.stride()), value.storage_offset()]
        index = aliases.get(id(value.untyped_storage()))
        if index is not None:
            return {"a": [index, *layout]}
        return {"t": [*layout, str(value.dtype).removeprefix("torch."),
                      value.untyped_storage().nbytes()]}
    if isinstance(value, list):
        return [_describe(v, aliases) for v in value]
    if isinstance(value, tuple):
        return {"T": [_describe(v, aliases) for v in value]}
    if isinstance(value, float):
        return {"f": value.hex()}  # exact through JSON, as the tail's operators need it
    if value is None or isinstance(value, (bool, int)):
        return value
    return {"x": type(value).__name__}


def _layout(values: Any) -> tuple[list[int], list[int], int]:
    shape, stride, offset = values
    if not (isinstance(shape, list) and isinstance(stride, list) and len(shape) == len(stride)
            and all(type(v) is int and v >= 0 for v in [*shape, *stride, offset])):
        raise ProfilingError(f"a tape entry has a bad layout {str(values)[:80]}")
    return shape, stride, offset


def _rebuild(entry: Any, inputs: Sequence[torch.Tensor], device: torch.device,
             poison: bool) -> Any:
    """An operator's result from its tape ``entry``, without computing it."""
    if isinstance(entry, list):
        return [_rebuild(e, inputs, device, poison) for e in entry]
    if not isinstance(entry, dict):
        return entry
    if "T" in entry:
        return tuple(_rebuild(e, inputs, device, poison) for e in entry["T"])
    if "f" in entry:
        return float.fromhex(entry["f"])
    if "a" in entry:
        index, *layout = entry["a"]
        if type(index) is not int or not 0 <= index < len(inputs):
            raise ProfilingError(f"a tape entry aliases argument {index} of {len(inputs)}")
        return inputs[index].as_strided(*_layout(layout))
    if "t" in entry:
        *layout, dtype, nbytes = entry["t"]
        if dtype not in DTYPES or type(nbytes) is not int \
                or not 0 <= nbytes <= MAX_TAPE_ALLOCATION:
            raise ProfilingError(f"a tape entry asks for {str(entry)[:80]}")
        dtype = DTYPES[dtype]
        flat = torch.empty(-(-nbytes // dtype.itemsize), dtype=dtype, device=device)
        if poison:  # tests: a value the head computed but did not send shows as NaN
            flat.fill_(float("nan") if dtype.is_floating_point else 77)
        return flat.as_strided(*_layout(layout))
    raise ProfilingError(f"the head's operator returned a {entry.get('x', entry)}, which "
                         f"the tail cannot stand in for")


class _Numbered(TorchDispatchMode):
    """Numbers the operators as the liveness analysis does and notes the storages asked for."""

    def __init__(self, position: int, wanted: Sequence[tuple[int, int]]) -> None:
        super().__init__()
        self.position = position
        self.clock = 0
        self.found: dict[tuple[int, int], Any] = dict.fromkeys(map(tuple, wanted))

    def note(self, inputs: list[torch.Tensor], out: Any) -> None:
        """Keep the storages asked for among those the operator made (the storage, not the
        tensor: a mode holding a result's Python object changes how the forward's own code
        runs, a ``detach`` appears)."""
        for slot, tensor in enumerate(made_tensors(inputs, out)):
            if (self.clock, slot) in self.found and self.found[(self.clock, slot)] is None:
                self.found[(self.clock, slot)] = tensor.untyped_storage()

    def keep_inputs(self, inputs: Any) -> None:
        """Keep the storages asked for among the inputs' (operator 0)."""
        for slot, tensor in enumerate(iter_tensors(inputs)):
            if (0, slot) in self.found:
                self.found[(0, slot)] = tensor.untyped_storage()

    def storage(self, made_by: tuple[int, int]) -> torch.Tensor:
        """The storage made by ``made_by``, as a flat ``uint8`` tensor."""
        found = self.found.get(tuple(made_by))
        if found is None:
            raise ProfilingError(f"no storage was made by operator {made_by[0]} in slot "
                                 f"{made_by[1]}; the two sides do not run the same forward")
        return torch.empty(0, dtype=torch.uint8, device=found.device).set_(found)


class _Head(_Numbered):
    def __init__(self, position: int, wanted: Sequence[tuple[int, int]]) -> None:
        super().__init__(position, wanted)
        self.tape: list[Any] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        decomposed = decompose_uncounted(self, func, args, kwargs)
        if decomposed is not NotImplemented:
            return decomposed
        out = func(*args, **kwargs)
        self.clock += 1
        inputs = operator_tensors(args) + operator_tensors(kwargs.values())
        self.note(inputs, out)
        aliases: dict[int, int] = {}
        for index, tensor in enumerate(inputs):
            aliases.setdefault(id(tensor.untyped_storage()), index)
        self.tape.append([str(func), _describe(out, aliases)])
        if self.clock == self.position:  # the head computes nothing past the cut
            raise _Stop
        return out


class _Tail(_Numbered):
    def __init__(self, position: int, wanted: Sequence[tuple[int, int]], tape: Sequence[Any],
                 device: torch.device, poison: bool, inject) -> None:
        super().__init__(position, wanted)
        self.tape, self.device, self.poison, self.inject = tape, device, poison, inject
        self.cut_at: Optional[float] = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.clock >= self.position:  # after the cut: computed whole, no longer numbered
            return func(*args, **kwargs)
        decomposed = decompose_uncounted(self, func, args, kwargs)
        if decomposed is not NotImplemented:
            return decomposed
        if self.clock >= len(self.tape):
            raise ProfilingError(f"the tape ends after {len(self.tape)} operators, before the "
                                 f"cut after operator {self.position}")
        name, entry = self.tape[self.clock]
        if name != str(func):
            raise ProfilingError(f"operator {self.clock + 1} is {func} here and {name} on the "
                                 f"head: the two sides do not run the same forward")
        inputs = operator_tensors(args) + operator_tensors(kwargs.values())
        out = _rebuild(entry, inputs, self.device, self.poison)
        self.clock += 1
        self.note(inputs, out)
        if self.clock == self.position:
            self.inject(self)
            self.cut_at = time.perf_counter()
        return out


def _forward(model: torch.nn.Module, inputs: Any, attach: Optional[Mapping[str, str]],
             mode: TorchDispatchMode) -> Any:
    """The model's forward as the split analysis runs it (inference mode, stages attached,
    a session open), under ``mode``."""
    with torch.inference_mode(), attach_stages(model, attach or {}), Session([]) as session:
        with session.forward(), mode:
            return call_model(model, inputs)


def run_head(model: torch.nn.Module, inputs: Any, position: int,
             tensors: Sequence[CutTensor], attach: Optional[Mapping[str, str]] = None
             ) -> HeadRun:
    """The head of the forward: operators ``1..position`` computed, then the bytes of
    ``tensors`` (the cut's, read after it) gathered. See the module's docstring."""
    start = time.perf_counter()
    mode = _Head(position, [t.made_by for t in tensors])
    mode.keep_inputs(inputs)
    if position > 0:
        try:
            _forward(model, inputs, attach, mode)
        except _Stop:
            pass
        else:
            raise ProfilingError(f"the forward ran {mode.clock} operators, fewer than the "
                                 f"cut's {position}")
    pieces = [gather(mode.storage(t.made_by).cpu(), t.ranges).contiguous()
              for t in tensors]
    return HeadRun(pieces, mode.tape, (time.perf_counter() - start) * 1e3)


def run_tail(model: torch.nn.Module, inputs: Any, position: int,
             tensors: Sequence[CutTensor], pieces: Sequence[torch.Tensor], tape: Sequence[Any],
             attach: Optional[Mapping[str, str]] = None, *, poison: bool = False) -> TailRun:
    """The tail of the forward: operators ``1..position`` passed without computing them
    (``tape``), the received ``pieces`` written into the storages of ``tensors`` at the cut,
    and the rest computed. ``inputs`` are placeholders of the head's inputs' shapes;
    ``poison`` fills every stand-in with NaN (77 for integers), so that a value used without
    having been sent shows in the output. See the module's docstring."""
    device = next((t.device for t in iter_tensors(inputs)), torch.device("cpu"))

    def inject(mode: _Numbered) -> None:
        for tensor, piece in zip(tensors, pieces):
            flat, offset = mode.storage(tensor.made_by), 0
            for begin, end in zip(*tensor.ranges):
                flat[int(begin):int(end)].copy_(piece[offset:offset + int(end - begin)])
                offset += int(end - begin)

    start = time.perf_counter()
    mode = _Tail(position, [t.made_by for t in tensors], tape, device, poison, inject)
    mode.keep_inputs(inputs)
    if position == 0:
        inject(mode)
        mode.cut_at = time.perf_counter()
    output = _forward(model, inputs, attach, mode)
    if mode.cut_at is None:
        raise ProfilingError(f"the forward ran {mode.clock} operators, fewer than the cut's "
                             f"{position}")
    end = time.perf_counter()
    return TailRun(output, (mode.cut_at - start) * 1e3, (end - mode.cut_at) * 1e3)
