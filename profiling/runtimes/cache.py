"""Exports kept across runs, keyed by everything that decides them, checked when read.

Exporting is the slow step of a runtime run (a minute for a ResNet-50 detector on a small
CPU). An entry is a folder named by :func:`~.cache_key.export_key` holding either
``model.onnx`` (the whole model exported) or ``parts.json`` and one ``partN.onnx`` per part
(the whole model did not export), each beside its ``.stages.json``, and ``manifest.json``,
written last: the key, and each file's size and SHA-256. An entry appears complete or not at
all (staged in ``.incoming-<pid>-*``, then renamed).

Reading an entry trusts nothing in it: the entry must be a folder, each file a regular file
(opened without following links, a FIFO never waited on), as large as the manifest says and
the entry no larger than :func:`entry_limit`; each file is copied into the run's own folder
while its checksum is taken, so the run uses only what was checked. An entry that fails
(:class:`BadEntry`) is removed and exported again; a cache folder that cannot hold entries
(a file, a looping link, read-only, full) is left out of the run with a note
(:func:`usable_cache`), as is an entry that cannot be written: the cache never fails a run.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any, Optional

import torch

from .export import ExportedModel
from .cache_key import FORMAT, export_key
from .workdir import STAGING_MAX_AGE_S, STAGING_PREFIX, make_staging, reclaim_leftovers

__all__ = ["export_key", "default_cache_folder", "CachedExport", "BadEntry", "read_entry",
           "write_entry", "discard_entry", "stale_parts", "usable_cache", "entry_limit",
           "expected_entry_bytes", "MANIFEST"]

MANIFEST = "manifest.json"
_PARTS = "parts.json"
_MANIFEST_LIMIT = 1 << 20
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}$")
_PART_FILE = re.compile(r"^part\d+\.onnx$")
_CHUNK = 1 << 20


def default_cache_folder() -> Path:
    """``$XDG_CACHE_HOME/stagezoo/exports`` (``~/.cache/stagezoo/exports`` by default; an
    empty or relative ``$XDG_CACHE_HOME`` is ignored, as the XDG rule says)."""
    from ..files.places import user_folder

    return user_folder("XDG_CACHE_HOME") / "stagezoo" / "exports"


def _weight_bytes(model: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


def entry_limit(model: torch.nn.Module) -> int:
    """The most bytes an entry of ``model`` may hold: four times its weights and buffers
    (constants the exporter folds, parts) plus 1 GiB (the graphs)."""
    return 4 * _weight_bytes(model) + (1 << 30)


def expected_entry_bytes(model: torch.nn.Module) -> int:
    """About the bytes an entry of ``model`` takes: its weights and buffers plus 64 MiB."""
    return _weight_bytes(model) + (1 << 26)


class CachedExport:
    """What an entry holds: the whole model's export, or the parts' (path -> export), the
    :func:`~.cache_key.input_signature` each part was exported with, and why the other
    modules stayed in PyTorch."""

    def __init__(self, whole: Optional[ExportedModel] = None,
                 parts: Optional[dict[str, ExportedModel]] = None,
                 in_torch: Optional[dict[str, str]] = None, folder: Optional[Path] = None,
                 part_inputs: Optional[dict[str, list[str]]] = None) -> None:
        self.whole = whole
        self.parts = parts or {}
        self.in_torch = in_torch or {}
        self.folder = folder
        self.part_inputs = part_inputs or {}


class BadEntry(Exception):
    """An entry that cannot be used: the message says which file and why."""


def _read(fd: int, name: str, count: int) -> bytes:
    try:
        return os.read(fd, count)
    except OSError as error:  # reading the entry failed: the entry is unusable
        raise BadEntry(f"{name}: {error.strerror.lower()}") from None


def _open_regular(entry_fd: int, name: str) -> int:
    """A descriptor of the regular file ``name`` in the entry: a link is not followed, a FIFO
    not waited on, anything but a regular file refused."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=entry_fd)
    except OSError as error:
        raise BadEntry(f"{name}: {error.strerror.lower()}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise BadEntry(f"{name} is not a regular file")
    return fd


def _copy_checked(entry_fd: int, name: str, size: int, digest: str, target: Path) -> None:
    """Copy the regular file ``name`` of the entry into ``target``, checking that it has
    ``size`` bytes and the SHA-256 ``digest``; never follows a link or waits on a FIFO."""
    fd = _open_regular(entry_fd, name)
    try:
        hashed, copied = hashlib.sha256(), 0
        with open(target, "wb") as out:  # an error writing the copy is the run's failure
            while copied <= size:  # one byte past ``size``: a longer file shows, unread
                chunk = _read(fd, name, min(_CHUNK, size + 1 - copied))
                if not chunk:
                    break
                hashed.update(chunk)
                out.write(chunk)
                copied += len(chunk)
    finally:
        os.close(fd)
    if copied != size:
        raise BadEntry(f"{name} has {'more' if copied > size else 'fewer'} bytes than its "
                       f"manifest says ({size})")
    if hashed.hexdigest() != digest:
        raise BadEntry(f"{name}'s checksum differs from its manifest")


def _manifest(entry_fd: int, key: str, limit: int) -> dict[str, tuple[int, str]]:
    """The files the entry's manifest lists (name -> size, SHA-256), checked."""
    fd = _open_regular(entry_fd, MANIFEST)
    try:
        text = _read(fd, MANIFEST, _MANIFEST_LIMIT + 1)
    finally:
        os.close(fd)
    try:
        saved = json.loads(text) if len(text) <= _MANIFEST_LIMIT else None
        files = {str(name): (int(size), str(digest))
                 for name, (size, digest) in saved["files"].items()
                 if isinstance(size, int) and _NAME.match(name) and name != MANIFEST}
        valid = saved["format"] == FORMAT and saved["key"] == key and \
            len(files) == len(saved["files"])
    except (ValueError, TypeError, KeyError, AttributeError):
        valid = False
    if not valid:
        raise BadEntry(f"{MANIFEST} is not this entry's manifest")
    if sum(size for size, _ in files.values()) > limit:
        raise BadEntry(f"its files add up to more than {limit} bytes")
    return files


def _load(folder: Path, name: str, files: dict[str, Any]) -> ExportedModel:
    stages = Path(name).with_suffix(".stages.json").name
    if name not in files or stages not in files:
        raise BadEntry(f"{name} or {stages} is not in its manifest")
    try:
        exported = ExportedModel.load(folder / name)
        valid = all(isinstance(k, str) and isinstance(v, str)
                    for k, v in exported.node_stages.items()) and \
            all(isinstance(n, str) for n in exported.input_names + exported.output_names)
    except (ValueError, TypeError, KeyError, AttributeError):
        valid = False
    if not valid:
        raise BadEntry(f"{stages} is broken")
    if not _graph_matches(exported):
        raise BadEntry(f"{name} is not the graph that {stages} describes")
    return exported


def _graph_matches(exported: ExportedModel) -> bool:
    """Whether the ONNX file has the nodes, inputs and outputs its stage map names (a file of
    another model, or no ONNX file at all, has not)."""
    import onnx

    try:
        graph = onnx.load(str(exported.path), load_external_data=False).graph
    except Exception:  # noqa: BLE001  (whatever the parser says: not this graph)
        return False
    return ({node.name for node in graph.node} == set(exported.node_stages)
            and [v.name for v in graph.input] == exported.input_names
            and [v.name for v in graph.output] == exported.output_names)


def read_entry(folder: Path, into: Path, limit: int) -> Optional[CachedExport]:
    """The entry in ``folder``, copied into the new folder ``into`` and checked against its
    manifest; ``None`` when there is none. Raises :class:`BadEntry` saying what is wrong."""
    try:
        entry_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError:
        raise BadEntry("the entry is not a folder") from None
    try:
        files = _manifest(entry_fd, folder.name, limit)
        into.mkdir(parents=True)
        for name, (size, digest) in files.items():
            _copy_checked(entry_fd, name, size, digest, into / name)
    finally:
        os.close(entry_fd)
    if "model.onnx" in files:
        return CachedExport(whole=_load(into, "model.onnx", files), folder=folder)
    try:
        saved = json.loads((into / _PARTS).read_text()) if _PARTS in files else None
        names, in_torch = dict(saved["parts"]), dict(saved["in_torch"])
        part_inputs = {path: list(saved["inputs"][path]) for path in names}
        valid = all(isinstance(p, str) and isinstance(n, str) and _PART_FILE.match(n)
                    for p, n in names.items()) and \
            all(isinstance(d, str) for signature in part_inputs.values() for d in signature)
    except (ValueError, TypeError, KeyError, AttributeError):
        valid = False
    if not valid:
        raise BadEntry(f"{_PARTS} is missing or broken")
    parts = {path: _load(into, name, files) for path, name in names.items()}
    return CachedExport(parts=parts, in_torch={str(k): str(v) for k, v in in_torch.items()},
                        folder=folder, part_inputs=part_inputs)


def stale_parts(entry: CachedExport, signatures: dict[str, list[str]]) -> Optional[str]:
    """Why the parts of ``entry`` do not fit a run whose parts get inputs of ``signatures``
    (path -> :func:`~.cache_key.input_signature`), or ``None`` when they do."""
    for path, kept in entry.part_inputs.items():
        now = signatures.get(path)
        if now != kept:
            return (f"part {path} was exported for inputs {', '.join(kept)} and gets "
                    f"{', '.join(now) if now is not None else 'no call'} in this run")
    return None


def _size_and_digest(path: Path) -> tuple[int, str]:
    hashed = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(_CHUNK), b""):
            hashed.update(chunk)
    return path.stat().st_size, hashed.hexdigest()


def write_entry(folder: Path, entry: CachedExport) -> Optional[str]:
    """Keep ``entry``'s files as the entry ``folder`` (all at once, the manifest written
    last); ``None`` when kept or when another run kept it first, else a note saying why
    not (a full disk)."""
    staging = None
    try:
        staging = make_staging(folder.parent)
        files: dict[str, tuple[int, str]] = {}
        exports = [entry.whole] if entry.whole else list(entry.parts.values())
        for exported in exports:
            # a model past protobuf's 2 GiB limit keeps its weights in NAME.onnx.data
            sources = [exported.path, exported.path.with_suffix(".stages.json"),
                       *exported.path.parent.glob(exported.path.name + ".data")]
            for source in sources:
                shutil.copyfile(source, staging / source.name)
                files[source.name] = _size_and_digest(staging / source.name)
        if entry.whole is None:
            names = {path: exported.path.name for path, exported in entry.parts.items()}
            (staging / _PARTS).write_text(json.dumps(
                {"parts": names, "in_torch": entry.in_torch, "inputs": entry.part_inputs},
                indent=1))
            files[_PARTS] = _size_and_digest(staging / _PARTS)
        (staging / MANIFEST).write_text(json.dumps(
            {"format": FORMAT, "key": folder.name, "files": files}, indent=1))
        try:
            os.replace(staging, folder)
        except OSError as error:
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        return None  # kept, or another run wrote it first: theirs is as good
    except OSError as error:
        return f"export cache {folder.parent}: the export was not kept ({error.strerror})"
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def discard_entry(folder: Path, why: str) -> str:
    """Remove the unusable entry ``folder`` (a link or file as such, never what it points
    to) and say so in one line naming the cache."""
    try:
        if os.path.isdir(folder) and not os.path.islink(folder):
            shutil.rmtree(folder)
        else:
            os.unlink(folder)
        return f"export cache entry {folder} was unusable ({why}): exported again"
    except OSError as error:
        return (f"export cache entry {folder} was unusable ({why}) and could not be removed "
                f"({error.strerror}): exported again, not kept")


def usable_cache(folder: Path, need_bytes: int) -> tuple[Optional[Path], Optional[str]]:
    """``folder``, made if absent, when it can hold an entry of ``need_bytes``, and no note;
    else ``None`` and the note saying why the run goes without the cache. Reclaims the
    staging folders that killed runs left in it."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        reclaim_leftovers(folder, STAGING_PREFIX, STAGING_MAX_AGE_S)
        make_staging(folder).rmdir()  # a folder made and removed: it takes entries
        free = shutil.disk_usage(folder).free
    except OSError as error:
        why = "it is not a folder" if isinstance(error, FileExistsError) else \
            (error.strerror or str(error))
        return None, f"export cache {folder} is not usable ({why}): exported without it"
    if free < need_bytes:
        return None, (f"export cache {folder} is not usable (its disk has {free} bytes free, "
                      f"an entry needs about {need_bytes}): exported without it")
    return folder, None
