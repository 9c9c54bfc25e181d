"""Exports kept across runs, keyed by the model, its options and the input shapes.

Exporting is the slow step of a runtime run (a minute for a ResNet-50 detector on a small
CPU). :func:`export_key` hashes what decides the exported graph: the model's class, its
weights and buffers, its structure (``repr``), the attached stages, the input shapes, dtypes
and non-tensor values, torch's version and the opset. An entry is a folder named by the key
holding either ``model.onnx`` (the whole model exported) or ``parts.json`` and one
``partN.onnx`` per part (the whole model did not export), each beside its ``.stages.json``.
An entry appears complete or not at all (written in a temporary folder, then renamed).
Changing a model's Python code without changing its structure or weights keeps the key:
delete the folder then.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional

import torch
from torch.utils._pytree import tree_flatten

from .export import ExportedModel

__all__ = ["export_key", "default_cache_folder", "CachedExport", "read_entry", "write_entry"]

#: Bump when the export or its stage tags change meaning.
_FORMAT = 1


def default_cache_folder() -> Path:
    """``$XDG_CACHE_HOME/stagezoo/exports`` (``~/.cache/stagezoo/exports`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "stagezoo" / "exports"


def _describe(leaf: Any) -> str:
    if isinstance(leaf, torch.Tensor):
        return f"tensor{tuple(leaf.shape)}:{leaf.dtype}"
    return repr(leaf)


def export_key(model: torch.nn.Module, inputs: Any, *,
               attach: Optional[Mapping[str, str]] = None, opset: int = 18) -> str:
    """The hex digest naming ``model``'s export for ``inputs``."""
    digest = hashlib.sha256()
    kind = type(model)
    header = {"format": _FORMAT, "torch": torch.__version__, "opset": opset,
              "class": f"{kind.__module__}.{kind.__qualname__}", "structure": repr(model),
              "attach": sorted((attach or {}).items()),
              "inputs": [_describe(leaf) for leaf in tree_flatten(inputs)[0]]}
    digest.update(json.dumps(header, sort_keys=True).encode())
    for name, tensor in model.state_dict().items():
        digest.update(name.encode())
        flat = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    return digest.hexdigest()[:32]


class CachedExport:
    """What an entry holds: the whole model's export, or the parts' (path -> export) and why
    the other modules stayed in PyTorch."""

    def __init__(self, whole: Optional[ExportedModel] = None,
                 parts: Optional[dict[str, ExportedModel]] = None,
                 in_torch: Optional[dict[str, str]] = None, folder: Optional[Path] = None
                 ) -> None:
        self.whole = whole
        self.parts = parts or {}
        self.in_torch = in_torch or {}
        self.folder = folder


def read_entry(folder: Path) -> Optional[CachedExport]:
    """The entry in ``folder``, or ``None`` when there is none."""
    if (folder / "model.stages.json").is_file():
        return CachedExport(whole=ExportedModel.load(folder / "model.onnx"), folder=folder)
    plan = folder / "parts.json"
    if not plan.is_file():
        return None
    saved = json.loads(plan.read_text())
    parts = {path: ExportedModel.load(folder / name) for path, name in saved["parts"].items()}
    return CachedExport(parts=parts, in_torch=saved["in_torch"], folder=folder)


def write_entry(folder: Path, entry: CachedExport) -> CachedExport:
    """Copy ``entry``'s files into ``folder`` (all at once) and return the entry read there."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=folder.parent))
    try:
        exports = [entry.whole] if entry.whole else list(entry.parts.values())
        for exported in exports:
            for source in (exported.path, exported.path.with_suffix(".stages.json")):
                shutil.copyfile(source, staging / source.name)
            for extra in exported.path.parent.glob(exported.path.name + ".data"):
                shutil.copyfile(extra, staging / extra.name)
        if entry.whole is None:
            names = {path: exported.path.name for path, exported in entry.parts.items()}
            (staging / "parts.json").write_text(json.dumps(
                {"parts": names, "in_torch": entry.in_torch}, indent=1))
        try:
            os.replace(staging, folder)
        except OSError:  # another run wrote it first: theirs is as good
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return read_entry(folder) or entry
