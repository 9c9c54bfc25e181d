"""Stages attached to submodules by their path, without editing the module's code."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Mapping

import torch

from .errors import ProfilingError
from .stages import active_session

__all__ = ["attach_stages", "resolve_module"]


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


@contextmanager
def attach_stages(model: torch.nn.Module, stages: Mapping[str, str]) -> Iterator[None]:
    """Make each ``{stage_name: module_path}`` a stage for as long as the block runs.

    A module attached this way opens its stage when it is called and closes it when it returns
    or raises; its arguments and its return value are the stage's payload. The hooks exist only
    inside the block and are removed on the way out, also after an exception.
    """
    modules = {name: resolve_module(model, path) for name, path in stages.items()}
    handles = []
    try:
        for name, module in modules.items():
            open_calls: list = []
            handles.append(module.register_forward_pre_hook(_pre_hook(name, open_calls)))
            handles.append(module.register_forward_hook(_post_hook(open_calls), always_call=True))
        yield
    finally:
        for handle in handles:
            handle.remove()


def _pre_hook(name: str, open_calls: list):
    def hook(module, args):
        session = active_session()
        open_calls.append(None if session is None else
                          session.enter_stage(name, args[0] if len(args) == 1 else args))
    return hook


def _post_hook(open_calls: list):
    def hook(module, args, output):
        call = open_calls.pop() if open_calls else None
        session = active_session()
        if session is not None and call is not None:
            session.record_output(call, output)
            session.exit_stage(call)
    return hook
