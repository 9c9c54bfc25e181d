"""Stages attached to submodules by their path, without editing the module's code.

A container attached as a stage (``nn.Sequential``, ``nn.ModuleList``, ``nn.ModuleDict``)
may be iterated by its parent's ``forward`` rather than called (``for block in self.blocks``):
its own stage then never opens. Its children stand in for it: each child is a stage named
``container.child`` whenever it is called while the container's own stage is not open, at the
depth the container would have had. A called container (``nn.Sequential`` called as a whole,
torchvision's ``IntermediateLayerGetter``, any container with a ``forward`` of its own) stays
one stage, and its children stay inside it.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional

import torch
from torch import nn

from ..errors import ProfilingError
from .markers import active_session

__all__ = ["attach_stages", "resolve_module", "stand_in_stages", "is_container",
           "hookable_modules", "call_arguments"]

_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)


def resolve_module(model: torch.nn.Module, path: str) -> torch.nn.Module:
    """The submodule of ``model`` at the dotted ``path`` (``""`` is the model itself)."""
    if path == "":
        return model
    try:
        return model.get_submodule(path)
    except AttributeError:
        children = ", ".join(name for name, _ in model.named_children())
        raise ProfilingError(f"no submodule '{path}' in {type(model).__name__}; "
                             f"its top-level children are: {children}") from None


def _is_scripted(module: torch.nn.Module) -> bool:
    return isinstance(module, torch.jit.ScriptModule)


def hookable_modules(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """``named_modules()`` of ``model`` less the TorchScript modules and what is inside them,
    which take no Python hooks (their operators count in the module that calls them)."""
    scripted = [path for path, module in model.named_modules() if _is_scripted(module)]
    return [(path, module) for path, module in model.named_modules()
            if not any(root == "" or path == root or path.startswith(root + ".")
                       for root in scripted)]


def _check_hookable(name: str, path: str, module: torch.nn.Module) -> None:
    if _is_scripted(module):
        raise ProfilingError(
            f"stage '{name}' is attached to '{path}', a TorchScript module ("
            f"{type(module).__name__}), which takes no hooks; attach the module that calls it, "
            f"or mark the stage in the caller's code with profiling.stage")


def _check_distinct(stages: Mapping[str, str], modules: Mapping[str, torch.nn.Module]) -> None:
    """Refuse two stages on one module: reached by two paths (tied weights), its hooks cannot
    tell which path called it, so each call would open both stages, one inside the other."""
    first: dict[int, str] = {}
    for name, module in modules.items():
        other = first.setdefault(id(module), name)
        if other != name:
            raise ProfilingError(
                f"stages '{other}' ({stages[other] or 'the model'}) and '{name}' ("
                f"{stages[name] or 'the model'}) are one module reached by two paths (shared "
                f"weights), whose calls cannot be told apart; attach it once, or mark the stages "
                f"in the callers' code with profiling.stage")


def is_container(module: torch.nn.Module) -> bool:
    """Whether ``module`` is a plain container that its parent may iterate instead of calling:
    a ``Sequential``, ``ModuleList`` or ``ModuleDict`` whose ``forward`` is the library's own
    (a subclass with a ``forward`` of its own, such as ``IntermediateLayerGetter``, is called
    as one module)."""
    if not isinstance(module, _CONTAINERS):
        return False
    forward = type(module).forward
    return forward is nn.Module.forward or forward is nn.Sequential.forward


def stand_in_stages(stages: Mapping[str, torch.nn.Module]
                    ) -> dict[str, tuple[torch.nn.Module, torch.nn.Module]]:
    """``{child_stage_name: (child, container)}`` for every child of every container among
    ``stages`` (``{stage_name: module}``), recursively, except children staged already."""
    staged = {id(module) for module in stages.values()}
    found: dict[str, tuple[torch.nn.Module, torch.nn.Module]] = {}
    pending = [(name, module) for name, module in stages.items() if is_container(module)]
    while pending:
        name, container = pending.pop(0)
        for child_name, child in container.named_children():
            if id(child) in staged:
                continue
            staged.add(id(child))
            found[f"{name}.{child_name}"] = (child, container)
            if is_container(child):
                pending.append((f"{name}.{child_name}", child))
    return found


@contextmanager
def attach_stages(model: torch.nn.Module, stages: Mapping[str, str]) -> Iterator[None]:
    """Make each ``{stage_name: module_path}`` a stage for as long as the block runs.

    A module attached this way opens its stage when it is called and closes it when it returns
    or raises; its arguments and its return value are the stage's payload. A container's
    children stand in for it when it is iterated rather than called (see the module's
    docstring). The hooks exist only inside the block and are removed on the way out, also
    after an exception.
    """
    modules = {name: resolve_module(model, path) for name, path in stages.items()}
    for name, module in modules.items():
        _check_hookable(name, stages[name], module)
    _check_distinct(stages, modules)
    stand_ins = stand_in_stages(modules)
    open_counts: dict[int, list] = {}
    handles = []
    try:  # always_call: a stage closes when its module raises too
        for name, module in modules.items():
            open_calls = open_counts.setdefault(id(module), [])
            handles.append(module.register_forward_pre_hook(_pre_hook(name, open_calls),
                                                            with_kwargs=True))
            handles.append(module.register_forward_hook(_post_hook(open_calls), always_call=True))
        for name, (child, container) in stand_ins.items():
            open_calls = open_counts.setdefault(id(child), [])
            handles.append(child.register_forward_pre_hook(
                _pre_hook(name, open_calls, unless_open=open_counts.setdefault(id(container),
                                                                                [])),
                with_kwargs=True))
            handles.append(child.register_forward_hook(_post_hook(open_calls), always_call=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


def call_arguments(args: tuple, kwargs: Mapping[str, Any]) -> Any:
    """What a module call takes, as a stage's input payload: its one argument, the tuple of its
    positional arguments, or, when it is given keywords, those after them as a dict (the dict
    alone without positional arguments)."""
    if not kwargs:
        return args[0] if len(args) == 1 else args
    return (*args, dict(kwargs)) if args else dict(kwargs)


def _pre_hook(name: str, open_calls: list, unless_open: Optional[list] = None):
    def hook(module, args, kwargs):
        session = active_session()
        skip = session is None or bool(unless_open)
        # ``None`` as well: each post hook pops what its pre hook pushed, in nested calls too
        open_calls.append(None if skip else
                          session.enter_stage(name, call_arguments(args, kwargs)))
    return hook


def _post_hook(open_calls: list):
    def hook(module, args, output):
        call = open_calls.pop() if open_calls else None
        session = active_session()
        if session is not None and call is not None:
            failure = sys.exc_info()[1] if output is None else None
            if failure is not None:  # torch calls the hook while the forward's error unwinds
                session.note_failure(failure)
            session.record_output(call, output)
            session.exit_stage(call)
    return hook
