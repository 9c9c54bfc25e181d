"""The parts of a model that export, when the whole model does not.

A model whose forward has data-dependent code (the torchvision detectors' RoI pooling by box
size, their NMS) cannot be exported whole. :func:`exportable_parts` then looks for the largest
submodules that export on their own, top-down: the root's children that the forward calls
once are exported alone with the inputs they got in an eager forward; a child that fails is
replaced by its own children, and so on; a module without children that fails stays in
PyTorch. :func:`runtime_parts` makes each exported part's ``forward`` run in the runtime (the
code around the parts stays PyTorch) and puts every module back on the way out.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence

import numpy as np
import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from ..stages.attach import attach_stages, hookable_modules
from ..stages.markers import active_session
from ..stages.session import Session
from .export import ExportedModel, stage_path
from .workdir import raise_if_disk_full

__all__ = ["Captured", "Part", "capture_module_calls", "exportable_parts", "runtime_parts",
           "tensor_feeds", "export_failure"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def export_failure(error: BaseException) -> str:
    """One line saying why an export failed: the exporter's exception summary where it
    gives one, else the first line of the error. A full disk is no reason to leave a module
    in PyTorch: it raises :class:`~.workdir.DiskFull` (a failure of the run)."""
    raise_if_disk_full(error)
    lines = [line.strip() for line in _ANSI.sub("", str(error)).splitlines()]
    if "## Exception summary" in lines:
        after = lines[lines.index("## Exception summary") + 1:]
        lines = [line for line in after if line] or lines
    line = next((line for line in lines if line), type(error).__name__)
    if isinstance(error, LookupError) and not line.startswith(type(error).__name__):
        line = f"{type(error).__name__}: {line}"  # a KeyError's message is the bare key
    line = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", line)
    return line if len(line) <= 200 else line[:197] + "..."


def tensor_feeds(value: Any) -> list[np.ndarray]:
    """The tensors in ``value`` (any nesting), in flattened order, as numpy arrays."""
    return [leaf.detach().cpu().numpy() for leaf in tree_flatten(value)[0]
            if isinstance(leaf, torch.Tensor)]


@dataclass
class Captured:
    """A module's call in an eager forward: its inputs, its output and how often it ran.

    Attributes:
        calls_before: stage and probe calls per name made before its first call began.
        calls_inside: those made during its first call (its own attached stage excluded).
    """

    args: tuple
    kwargs: dict
    output: Any
    count: int = 1
    calls_before: dict[str, int] = field(default_factory=dict)
    calls_inside: dict[str, int] = field(default_factory=dict)


@dataclass
class Part:
    """A submodule run by the runtime.

    Attributes:
        path: its path in the model (``""``: the whole model).
        exported: its ONNX file and node-to-stage map (paths inside the part).
        captured: its call in the eager forward (the inputs it was exported with).
        prefixes: per run, the stage path open around the part's call (filled while running).
    """

    path: str
    exported: ExportedModel
    captured: Captured
    prefixes: list[str] = field(default_factory=list)


def capture_module_calls(model: torch.nn.Module, inputs: Sequence[Any],
                         attach: Optional[Mapping[str, str]] = None) -> dict[str, Captured]:
    """Every submodule's first call in one eager forward of ``model(*inputs)``, with how many
    times it was called and the stage calls (markers and ``attach``) around and inside it
    (hooks removed on the way out)."""
    captured: dict[str, Captured] = {}
    finished: set[str] = set()
    handles = []
    session = Session()

    def hooks(path: str):
        def before(module, args, kwargs):
            if path in captured:
                captured[path].count += 1
            else:
                captured[path] = Captured(tuple(args), dict(kwargs), None,
                                          calls_before=session.call_counts)

        def after(module, args, kwargs, output):
            if path not in finished:
                finished.add(path)
                call = captured[path]
                call.output = output
                call.calls_inside = {name: count - call.calls_before.get(name, 0) for name, count
                                     in session.call_counts.items()
                                     if count > call.calls_before.get(name, 0)}

        return before, after

    # the stages' own hooks go first: a part's attached stage opens before the part starts
    with session, attach_stages(model, attach or {}):
        try:
            for path, module in hookable_modules(model):
                if path:
                    before, after = hooks(path)
                    handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
                    handles.append(module.register_forward_hook(after, with_kwargs=True))
            with torch.no_grad():
                model(*inputs)
        finally:
            for handle in handles:
                handle.remove()
    return captured


def _children(model: torch.nn.Module, path: str) -> list[str]:
    module = model.get_submodule(path) if path else model
    return [f"{path}.{name}" if path else name for name, _ in module.named_children()]


def exportable_parts(model: torch.nn.Module, captured: dict[str, Captured],
                     export: Callable[[str, Captured], ExportedModel]
                     ) -> tuple[list[Part], dict[str, str]]:
    """The largest submodules that ``export(path, captured)`` exports, top-down from the
    root's children, and why each module that stays in PyTorch did (path -> first line of
    the error; a module the forward calls more than once, or never, is not tried)."""
    parts: list[Part] = []
    in_torch: dict[str, str] = {}
    pending = _children(model, "")
    while pending:
        path = pending.pop(0)
        call = captured.get(path)
        if call is None:
            continue  # never called: nothing to run
        if call.count > 1:  # an export takes one call's inputs; the others may differ
            in_torch[path] = f"called {call.count} times in a forward"
            pending[:0] = _children(model, path)
            continue
        try:
            parts.append(Part(path, export(path, call), call))
        except Exception as error:  # noqa: BLE001  (any export failure leaves it to PyTorch)
            children = _children(model, path)
            if not children:
                in_torch[path] = export_failure(error)
            pending[:0] = children
    return parts, in_torch


def _runtime_forward(part: Part, run: Callable[[list[np.ndarray]], list[np.ndarray]]):
    leaves, spec = tree_flatten(part.captured.output)

    def forward(*args: Any, **kwargs: Any) -> Any:
        session = active_session()
        part.prefixes.append(stage_path(session.open_calls) if session is not None else "")
        if session is not None:  # the stages after the part keep their torch call indices
            session.skip_calls(part.captured.calls_inside)
        outputs = iter(run(tensor_feeds((args, kwargs))))
        values = [torch.from_numpy(np.ascontiguousarray(next(outputs)))
                  if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        return tree_unflatten(values, spec)

    return forward


@contextmanager
def runtime_parts(model: torch.nn.Module, parts: Sequence[Part],
                  runs: Sequence[Callable[[list[np.ndarray]], list[np.ndarray]]]
                  ) -> Iterator[torch.nn.Module]:
    """While the block runs, each part's ``forward`` calls ``runs[i]`` (the runtime) on its
    input tensors; the modules' own forwards are back on the way out, even after an error."""
    replaced: list[tuple[torch.nn.Module, Any]] = []
    try:
        for part, run in zip(parts, runs):
            module = model.get_submodule(part.path)
            # the instance's own forward, if any: without one, ours is deleted on the way out
            replaced.append((module, module.__dict__.get("forward")))
            module.forward = _runtime_forward(part, run)
        yield model
    finally:
        for module, own in reversed(replaced):
            if own is None:
                del module.forward
            else:
                module.forward = own


def part_attach(attach: Optional[dict[str, str]], path: str) -> dict[str, str]:
    """The attached stages inside the part at ``path``, with paths relative to it."""
    prefix = path + "."
    return {name: target[len(prefix):] for name, target in (attach or {}).items()
            if target.startswith(prefix)}
