"""Attribution of counts to the modules that run them, with hooks that live only while counting."""

from __future__ import annotations

from typing import Any, Callable, Optional

from torch import nn

from .counts import Counts
from ..stages.attach import call_arguments, hookable_modules
from ..stages.payload import iter_tensors

__all__ = ["ModuleRecord", "ModuleTracker", "parameter_count", "is_leaf"]

Shape = tuple[int, ...]


class ModuleRecord:
    """What the counter saw of one module (by its path in the model).

    Attributes:
        path: dotted path in the model, ``""`` for the model itself.
        type_name: the module's class name.
        calls: how many times it was called.
        first_call: position of its first call among the first calls of all modules (forward
            order), ``None`` if it was never called.
        total: counts of all its calls, inclusive of the modules it called (a call made
            inside a call of the same module, in recursion, is in its outer call's).
        last_call: counts of its last call alone.
        input_shapes, output_shapes: shapes of the tensors in the arguments and in
            the output of the last call, in order (keyword arguments after the positional
            ones).
        input_itemsize, output_itemsize: bytes per element of the first input and output
            tensor of the last call (0 when there is none).
    """

    __slots__ = ("path", "type_name", "calls", "first_call", "total", "last_call", "input_shapes",
                 "output_shapes", "input_itemsize", "output_itemsize")

    def __init__(self, path: str, type_name: str) -> None:
        self.path = path
        self.type_name = type_name
        self.calls = 0
        self.first_call: Optional[int] = None
        self.total = Counts()
        self.last_call = Counts()
        self.input_shapes: list[Shape] = []
        self.output_shapes: list[Shape] = []
        self.input_itemsize = 0
        self.output_itemsize = 0

    def __repr__(self) -> str:
        return f"ModuleRecord({self.path!r}, {self.type_name}, calls={self.calls}, {self.total})"


def _shapes(value: Any) -> tuple[list[Shape], int]:
    tensors = list(iter_tensors(value))  # a module's output may hold itself: walk with care
    itemsize = tensors[0].element_size() if tensors else 0
    return [tuple(t.shape) for t in tensors], itemsize


class ModuleTracker:
    """Forward hooks on every submodule of ``model`` that open a :class:`Counts` per call.

    ``open_counts(counts)`` and ``close_counts(counts)`` are the counter's accumulator
    callbacks; the hooks are registered by :meth:`attach` and removed by :meth:`detach`.
    """

    def __init__(self, model: nn.Module, open_counts: Callable[[Counts], None],
                 close_counts: Callable[[Counts], None]) -> None:
        self.model = model
        self.records: dict[str, ModuleRecord] = {}
        self._open_counts = open_counts
        self._close_counts = close_counts
        self._handles: list = []
        self._stack: list[tuple[ModuleRecord, Counts, bool]] = []
        self._called = 0

    def attach(self) -> None:
        """Register the hooks (the module paths are those of ``named_modules``). A TorchScript
        module takes no hooks: its operators count in the module that calls it, and it and
        the modules inside it have no record."""
        for path, module in hookable_modules(self.model):
            record = ModuleRecord(path, type(module).__name__)
            self.records[path] = record
            self._handles.append(module.register_forward_pre_hook(self._pre_hook(record),
                                                                  with_kwargs=True))
            self._handles.append(module.register_forward_hook(self._post_hook(record),
                                                              always_call=True))

    def detach(self) -> None:
        """Remove every hook and close the calls left open by an exception."""
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        while self._stack:
            self._close_counts(self._stack.pop()[1])  # (record, counts, reentered)

    def _pre_hook(self, record: ModuleRecord):
        def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
            if record.first_call is None:
                record.first_call = self._called
                self._called += 1
            counts = Counts()
            # a call inside a call of the same module (recursion): its operators are in the
            # outer call's counts already, so they join the total through that call only
            reentered = any(open_record is record for open_record, _, _ in self._stack)
            self._stack.append((record, counts, reentered))
            self._open_counts(counts)
            record.input_shapes, record.input_itemsize = _shapes(call_arguments(args, kwargs))
        return hook

    def _post_hook(self, record: ModuleRecord):
        def hook(module: nn.Module, args: tuple, output: Any) -> None:
            popped = self._pop(record)
            if popped is None:
                return
            counts, reentered = popped
            self._close_counts(counts)
            record.calls += 1
            if not reentered:
                record.total.merge(counts)
            record.last_call = counts
            record.output_shapes, record.output_itemsize = _shapes(output)
        return hook

    def _pop(self, record: ModuleRecord) -> Optional[tuple[Counts, bool]]:
        for index in range(len(self._stack) - 1, -1, -1):
            if self._stack[index][0] is record:
                _, counts, reentered = self._stack.pop(index)
                return counts, reentered
        return None


def parameter_count(module: nn.Module, *, recurse: bool = True) -> int:
    """Elements of the parameters of ``module`` (its own only when ``recurse`` is false)."""
    return sum(p.numel() for p in module.parameters(recurse=recurse))


def is_leaf(module: nn.Module) -> bool:
    """Whether ``module`` has no child modules."""
    return next(iter(module.children()), None) is None
