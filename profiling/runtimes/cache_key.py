"""The key of an export in the cache: a digest of everything that decides the exported graph.

:func:`export_key` hashes the model (its class, structure, weights and buffers, every plain
setting its modules keep, such as GMFlow's ``attn_splits_list`` or torchvision's
``transform_input``, and the source files of its module classes), the attached stages, the
inputs' shapes, dtypes and devices and their non-tensor values, the exporter (torch, onnx,
onnxscript and onnx-ir versions, the opset, the source of this package's export code) and
whatever the caller adds as ``identity`` (the zoo adds the composed model options). An entry
holds the float32 export only: int8 is quantised from it at every run, so neither the run's
dtype nor the quantiser's settings change what an entry holds, and neither is in the key.
The inputs of the parts of a model that exports only in parts can depend on the input's
values (Faster R-CNN's proposals): an entry keeps each part's :func:`input_signature`, and a
run whose parts get other inputs exports them again (:func:`~.cache.stale_parts`).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Optional

import torch
from torch.utils._pytree import tree_flatten

__all__ = ["export_key", "module_settings", "exporter_versions", "input_signature"]

#: Bump when an entry's files or their stage tags change meaning.
FORMAT = 2
#: The packages whose version changes what the exporter writes.
_EXPORTER_PACKAGES = ("torch", "onnx", "onnxscript", "onnx-ir")
#: This package's modules that write an entry's content.
_EXPORT_CODE = ("export.py", "parts.py", "cache_key.py", "cache.py")
_PLAIN = (bool, int, float, str, type(None))


def exporter_versions() -> dict[str, Optional[str]]:
    """The installed version of each package that takes part in an export (``None``: absent)."""
    versions: dict[str, Optional[str]] = {}
    for name in _EXPORTER_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _plain(value: Any) -> bool:
    if isinstance(value, _PLAIN):
        return True
    return isinstance(value, (tuple, list)) and all(_plain(item) for item in value)


def module_settings(model: torch.nn.Module) -> dict[str, Any]:
    """Every plain value (a number, text, boolean, ``None`` or a tuple or list of them) that a
    module of ``model`` keeps as an attribute, by ``module.attribute`` path: the settings that
    steer a forward without showing in ``repr`` or the weights (GMFlow's
    ``attn_splits_list``, an attention implementation, ``training``)."""
    settings: dict[str, Any] = {}
    for path, module in model.named_modules():
        for name, value in vars(module).items():
            if _plain(value):
                settings[f"{path}.{name}" if path else name] = value
    return settings


@lru_cache(maxsize=None)
def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _source_digests(model: torch.nn.Module) -> dict[str, str]:
    """The SHA-256 of each source file that defines a module class of ``model`` (classes
    without a file, made in a notebook or by ``type()``, are left out)."""
    files = set()
    for kind in {type(module) for module in model.modules()}:
        try:
            files.add(inspect.getsourcefile(kind))
        except (TypeError, OSError):
            continue
    return {path: _file_digest(path) for path in sorted(f for f in files if f)}


def _export_code() -> dict[str, str]:
    here = Path(__file__).parent
    return {name: _file_digest(str(here / name)) for name in _EXPORT_CODE}


def _describe(leaf: Any) -> str:
    if isinstance(leaf, torch.Tensor):
        return f"tensor{tuple(leaf.shape)}:{leaf.dtype}:{leaf.device.type}"
    return repr(leaf)


def input_signature(inputs: Any) -> list[str]:
    """Each leaf of ``inputs`` (any nesting) as the export sees it: a tensor's shape, dtype
    and device, another value's ``repr``."""
    return [_describe(leaf) for leaf in tree_flatten(inputs)[0]]


def export_key(model: torch.nn.Module, inputs: Any, *,
               attach: Optional[Mapping[str, str]] = None, opset: int = 18,
               identity: Optional[Mapping[str, Any]] = None) -> str:
    """The hex digest naming ``model``'s export for ``inputs``.

    ``identity``: what else decides the graph and the caller knows (JSON-able values; the
    zoo gives its composed model options)."""
    digest = hashlib.sha256()
    kind = type(model)
    header = {"format": FORMAT, "opset": opset, "exporter": exporter_versions(),
              "export_code": _export_code(),
              "class": f"{kind.__module__}.{kind.__qualname__}", "structure": repr(model),
              "settings": module_settings(model), "sources": _source_digests(model),
              "attach": sorted((attach or {}).items()),
              "inputs": input_signature(inputs),
              "identity": dict(identity or {})}
    digest.update(json.dumps(header, sort_keys=True, default=repr).encode())
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    return digest.hexdigest()[:32]
