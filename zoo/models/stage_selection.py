"""Finer stages for any model: ``model.stage_depth=N`` and ``model.stage_paths=[a.b, c]``.

A model's own stages are its first level: the top-level children of a torchvision or timm
model, the stages a zoo model marks in its forward. ``stage_depth=N`` makes every module at
depths 2 to N of the module tree a stage too (``layer1.0`` is at depth 2), and
``stage_paths`` names more modules by their dotted path. Each added stage is named by its path
and nests under whichever stage is open when its module is called, so ``layer1.0`` sits under
``layer1``. Containers that cannot be called (a plain ``ModuleList`` or ``ModuleDict``) are
passed through, not staged; a container with a ``forward`` of its own (torchvision's
``IntermediateLayerGetter``) is a stage like any module. A container the model iterates
rather than calls has its children stand in for it (:mod:`profiling.stages.attach`).
"""

from __future__ import annotations

import difflib
from typing import Any, Optional, Sequence

from torch import nn

from ..options import ConfigError

__all__ = ["select_stage_paths", "check_stage_options"]



def _callable(module: nn.Module) -> bool:
    """Whether ``module`` has a ``forward`` (a plain ``ModuleList``/``ModuleDict`` has none)."""
    return type(module).forward is not nn.Module.forward


def check_stage_options(stage_depth: Any, stage_paths: Any) -> tuple[int, list[str]]:
    """``model.stage_depth`` (an integer >= 1) and ``model.stage_paths`` (a list of dotted
    paths, or null) checked; one-line :class:`~zoo.options.ConfigError` otherwise."""
    if isinstance(stage_depth, bool) or not isinstance(stage_depth, int) or stage_depth < 1:
        raise ConfigError(f"model.stage_depth={stage_depth!r} is not accepted; accepted: an "
                          f"integer >= 1 (1: the model's own stages only)")
    paths = [] if stage_paths is None else stage_paths
    if isinstance(paths, str) or not isinstance(paths, Sequence) or not all(
            isinstance(p, str) and p for p in paths):
        raise ConfigError(f"model.stage_paths={stage_paths!r} is not accepted; accepted: a list "
                          f"of dotted module paths, e.g. [layer1.0, layer2]")
    return stage_depth, list(paths)


def select_stage_paths(model: nn.Module, stage_depth: int = 1,
                       stage_paths: Optional[Sequence[str]] = None) -> dict[str, str]:
    """``{path: path}`` for every module at depths 2 to ``stage_depth`` and every named path.

    Raises:
        ConfigError: for a path that names no submodule, with the closest existing paths.
    """
    stage_depth, named = check_stage_options(stage_depth, stage_paths)
    modules = dict(model.named_modules())
    selected = {path: path for path, module in modules.items()
                if 2 <= path.count(".") + 1 <= stage_depth and _callable(module)}
    for path in named:
        if path not in modules or path == "":
            close = difflib.get_close_matches(path, [p for p in modules if p], n=3, cutoff=0.6)
            hint = f"closest: {', '.join(close)}" if close else \
                f"top-level modules: {', '.join(n for n, _ in model.named_children())}"
            raise ConfigError(f"model.stage_paths: no module '{path}' in "
                              f"{type(model).__name__}; {hint}")
        selected[path] = path
    return selected
