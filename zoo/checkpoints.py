"""Loading checkpoints from local files, safely by default."""

from __future__ import annotations

import os
import pickle
from typing import Callable, Optional

import torch

from .errors import ConfigError

__all__ = ["load_checkpoint", "read_state_dict"]

_WRAPPER_KEYS = ("state_dict", "model", "model_state_dict")


def read_state_dict(path: str, *, allow_pickle: bool = False) -> dict[str, torch.Tensor]:
    """Read a state dict from ``path``.

    The file is read with ``torch.load(..., weights_only=True)``; a checkpoint that holds
    arbitrary pickled objects is refused unless ``allow_pickle=True`` (only for files you
    trust: unpickling can run code). A dict that wraps the weights under ``state_dict``,
    ``model`` or ``model_state_dict`` (as GMFlow's and SwiftNet's releases do) is unwrapped.
    """
    if not os.path.isfile(path):
        raise ConfigError(f"checkpoint file not found: {path}; give the path of a local "
                          f".pth/.pt file")
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=not allow_pickle)
    except pickle.UnpicklingError:
        raise ConfigError(f"checkpoint {path} holds pickled objects that weights_only loading "
                          f"refuses; if you trust the file, set "
                          f"model.checkpoint_allow_pickle=true") from None
    except Exception as error:  # noqa: BLE001  (any unreadable file is a bad input)
        raise ConfigError(f"checkpoint {path} cannot be read ({type(error).__name__}); "
                          f"expected a file written by torch.save") from None
    for key in _WRAPPER_KEYS:
        if isinstance(loaded, dict) and isinstance(loaded.get(key), dict):
            loaded = loaded[key]
            break
    if not isinstance(loaded, dict) or not all(isinstance(v, torch.Tensor)
                                               for v in loaded.values()):
        raise ConfigError(f"checkpoint {path} holds no state dict (a dict of tensors)")
    return loaded


def load_checkpoint(model: torch.nn.Module, path: Optional[str], *, allow_pickle: bool = False,
                    key_map: Optional[Callable[[str], str]] = None) -> torch.nn.Module:
    """Load the checkpoint at ``path`` into ``model`` strictly and return the model.

    No ``path`` (``None`` or empty, a builder's default) leaves the random weights as they are.

    Args:
        key_map: renames each checkpoint key to the model's name (for checkpoints whose
            names differ from ours, as SwiftNet's do).

    Raises:
        ConfigError: for a missing, unreadable or mismatched file, with one line that names
            the first mismatches.
    """
    if not path:
        return model
    state_dict = read_state_dict(path, allow_pickle=allow_pickle)
    if key_map is not None:
        state_dict = {key_map(key): value for key, value in state_dict.items()}
    adapt = getattr(model, "adapt_state_dict", None)
    if adapt is not None:
        state_dict = adapt(state_dict)
    expected = model.state_dict()
    missing = [k for k in expected if k not in state_dict]
    unexpected = [k for k in state_dict if k not in expected]
    mismatched = [k for k in expected if k in state_dict
                  and tuple(state_dict[k].shape) != tuple(expected[k].shape)]
    if missing or unexpected or mismatched:
        problems = []
        if missing:
            problems.append(f"{len(missing)} missing (first: {missing[0]})")
        if unexpected:
            problems.append(f"{len(unexpected)} unexpected (first: {unexpected[0]})")
        if mismatched:
            key = mismatched[0]
            problems.append(f"{len(mismatched)} of another shape (first: {key} "
                            f"{list(state_dict[key].shape)} in the file, "
                            f"{list(expected[key].shape)} in the model)")
        raise ConfigError(f"checkpoint {path} does not match {type(model).__name__}: "
                          + "; ".join(problems))
    model.load_state_dict(state_dict, strict=True)
    return model
