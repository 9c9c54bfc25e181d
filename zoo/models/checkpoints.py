"""Loading checkpoints from local files, safely by default."""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import warnings
import zipfile
from typing import Callable, Optional

import torch

from profiling.files import file_problem

from ..options import Boolean, ConfigError, check_value

__all__ = ["load_checkpoint", "read_state_dict", "file_sha256", "check_named_hash"]

_WRAPPER_KEYS = ("state_dict", "model", "model_state_dict")
#: ``name-<hex>.pth``: torchvision's and GMFlow's releases name a prefix of the SHA-256.
_NAMED_HASH = re.compile(r"-([0-9a-f]{8,64})\.[A-Za-z]+$")


def file_sha256(path: str) -> str:
    """The SHA-256 of the file at ``path``, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_named_hash(path: str, sha256: str) -> None:
    """Raise :class:`ConfigError` when the file name carries a hash (``name-e9887eda.pth``, as
    torchvision's and GMFlow's releases do) that the file's SHA-256 does not begin with."""
    named = _NAMED_HASH.search(os.path.basename(path))
    if named and not sha256.startswith(named.group(1)):
        raise ConfigError(f"checkpoint {path} is corrupt or not the file its name says: its "
                          f"SHA-256 begins {sha256[:len(named.group(1))]}, the name says "
                          f"{named.group(1)}")


def read_state_dict(path: str, *, allow_pickle: bool = False) -> dict[str, torch.Tensor]:
    """Read a state dict from ``path``.

    The file is read with ``torch.load(..., weights_only=True)``; a checkpoint that holds
    arbitrary pickled objects is refused unless ``allow_pickle=True`` (only for files you
    trust: unpickling can run code; nothing but ``True`` enables it). A file whose name
    carries a hash is verified first (:func:`check_named_hash`). A dict that wraps the
    weights under ``state_dict``, ``model`` or ``model_state_dict`` (as GMFlow's and
    SwiftNet's releases do) is unwrapped. A safetensors file is read as well (``torch.load``
    knows it). Keys that are not texts, and meta, sparse, nested, quantized, complex and
    non-finite tensors are refused.
    """
    return _read_verified(path, allow_pickle)[0]


def _read_verified(path: str, allow_pickle: bool) -> tuple[dict[str, torch.Tensor], str]:
    """The state dict at ``path`` and the file's SHA-256 (see :func:`read_state_dict`)."""
    check_value("checkpoint_allow_pickle", allow_pickle, Boolean())
    problem = file_problem(path) if isinstance(path, (str, os.PathLike)) else "is not a path"
    if problem:
        where = f"file not found: {path}" if problem == "does not exist" else \
            f"{path} {problem}"
        raise ConfigError(f"checkpoint {where}; give the path of a local .pth/.pt/.safetensors "
                          f"file")
    path = os.fspath(path)
    try:
        sha256 = file_sha256(path)
        check_named_hash(path, sha256)
        with warnings.catch_warnings():  # torch's notes on the pickle protocol: noise here
            warnings.simplefilter("ignore")
            loaded = torch.load(path, map_location="cpu", weights_only=allow_pickle is not True)
    except ConfigError:
        raise
    except Exception as error:  # noqa: BLE001  (any unreadable file is a bad input)
        raise ConfigError(_unreadable(path, error, allow_pickle)) from None
    for key in _WRAPPER_KEYS:
        if isinstance(loaded, dict) and isinstance(loaded.get(key), dict):
            loaded = loaded[key]
            break
    if not isinstance(loaded, dict) or not all(isinstance(v, torch.Tensor)
                                               for v in loaded.values()):
        raise ConfigError(f"checkpoint {path} holds no state dict (a dict of tensors)")
    key = next((k for k in loaded if not isinstance(k, str)), None)
    if key is not None:
        raise ConfigError(f"checkpoint {path} holds a tensor under the key {key!r} "
                          f"({type(key).__name__}); a state dict's keys are parameter names")
    for key, tensor in loaded.items():
        _check_tensor(path, key, tensor)
    return loaded, sha256


def _unreadable(path: str, error: Exception, allow_pickle: bool) -> str:
    """Why the checkpoint at ``path`` could not be loaded, in one line: the pickle option is
    advised only where it would help (weights_only loading refused a file that torch.save
    wrote, and the option is not set; it refuses a text file just the same)."""
    if isinstance(error, OSError):
        return f"checkpoint {path} cannot be read ({error.strerror or error})"
    expected = "expected a .pth, .pt or .safetensors file written by torch.save or safetensors"
    kind = _file_format(path)
    if not kind:
        return (f"checkpoint {path} is not a checkpoint: neither a zip archive nor a pickle "
                f"(torch.save's formats) nor a safetensors file; {expected}")
    if isinstance(error, pickle.UnpicklingError) and allow_pickle is not True and \
            kind != "safetensors" and str(error).startswith("Weights only load failed"):
        return (f"checkpoint {path} holds pickled objects that weights_only loading refuses; "
                f"if you trust the file, set model.checkpoint_allow_pickle=true")
    detail = str(error).strip().splitlines()
    return (f"checkpoint {path} cannot be loaded ({type(error).__name__}"
            f"{': ' + detail[0][:80] if detail else ''}); {expected}")


def _file_format(path: str) -> str:
    """``"zip"`` (torch.save's format), ``"pickle"`` (its legacy one, which begins with the
    PROTO opcode), ``"safetensors"`` (an 8-byte header length, then its JSON header) or
    ``""`` for none of them."""
    try:
        with open(path, "rb") as handle:
            if zipfile.is_zipfile(handle):
                return "zip"
            handle.seek(0)
            start = handle.read(9)
    except OSError:
        return ""
    if start[:1] == b"\x80":
        return "pickle"
    return "safetensors" if len(start) == 9 and start[8:9] == b"{" else ""


def _check_tensor(path: str, key: str, tensor: torch.Tensor) -> None:
    problem = ("a meta tensor (no data)" if tensor.is_meta else
               "a nested tensor" if tensor.is_nested else
               f"a tensor of layout {tensor.layout}" if tensor.layout != torch.strided else
               "a quantized tensor" if tensor.is_quantized else
               "a complex tensor" if tensor.is_complex() else
               "non-finite values" if tensor.is_floating_point()
               and not bool(torch.isfinite(tensor.float()).all()) else None)
    if problem:
        raise ConfigError(f"checkpoint {path} holds {problem} at {key}; expected dense, real, "
                          f"finite weights")


#: What ``nn.DataParallel`` and ``DistributedDataParallel`` put before every key they save.
_DATA_PARALLEL_PREFIX = "module."


def _without_data_parallel_prefix(state_dict: dict[str, torch.Tensor],
                                  model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """``state_dict`` without the ``module.`` that a model wrapped in ``DataParallel`` saved
    before every key (as timm's loader drops it), unless the model's own names begin so."""
    prefix = _DATA_PARALLEL_PREFIX
    if not state_dict or not all(key.startswith(prefix) for key in state_dict) or any(
            name.startswith(prefix) for name in model.state_dict()):
        return state_dict
    return {key[len(prefix):]: value for key, value in state_dict.items()}


def load_checkpoint(model: torch.nn.Module, path: Optional[str], *, allow_pickle: bool = False,
                    key_map: Optional[Callable[[str], str]] = None) -> torch.nn.Module:
    """Load the checkpoint at ``path`` into ``model`` strictly and return the model.

    No ``path`` (``None`` or empty, a builder's default) leaves the random weights as they are.
    The ``module.`` prefix of a checkpoint saved from ``nn.DataParallel`` is dropped.
    The loaded file's path and SHA-256 are kept as ``model.checkpoint_file`` (for
    ``meta.json``).

    Args:
        key_map: renames each checkpoint key to the model's name (for checkpoints whose
            names differ from ours, as SwiftNet's do).

    Raises:
        ConfigError: for a missing, unreadable or mismatched file, with one line that names
            the first mismatches.
    """
    if not path:
        return model
    state_dict, sha256 = _read_verified(path, allow_pickle)
    state_dict = _without_data_parallel_prefix(state_dict, model)
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
    not_floating = next((k for k in expected if k in state_dict
                         and expected[k].is_floating_point()
                         and not state_dict[k].is_floating_point()), None)
    if not_floating is not None:
        raise ConfigError(f"checkpoint {path} holds {state_dict[not_floating].dtype} at "
                          f"{not_floating}, where the model has floating-point weights")
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
    model.checkpoint_file = {"path": os.path.abspath(path), "sha256": sha256}
    return model
