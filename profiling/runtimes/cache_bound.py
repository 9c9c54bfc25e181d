"""The export cache's size bound: once its entries pass it, the least recently used go.

Exports of detectors weigh 50-200 MB each, and every model variant, input size and dtype is an
entry of its own, so a cache that only grows fills a disk in a few weeks of sweeps. An entry's
folder time is its last use: set when it is written and again when a run reads it
(:func:`mark_used`). After a run keeps an entry, :func:`prune` removes the entries used least
recently until the cache is back under its bound, never the entry that run has just kept.
Only entries are counted and removed: folders named by an export key (32 hexadecimal digits);
anything else in the folder is someone else's and left alone.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

__all__ = ["DEFAULT_LIMIT_BYTES", "mark_used", "entry_bytes", "prune"]

#: The bound when the caller gives none: about twenty detector exports.
DEFAULT_LIMIT_BYTES = 4_000_000_000
_ENTRY = re.compile(r"^[0-9a-f]{32}$")


def mark_used(entry: Path) -> None:
    """Record that ``entry`` was used now (its folder's time), so it is pruned last."""
    try:
        os.utime(entry, follow_symlinks=False)
    except OSError:
        pass  # a cache that cannot record its use still serves the run


def entry_bytes(entry: Path) -> int:
    """The bytes of the regular files in the entry folder ``entry`` (links not followed)."""
    total = 0
    try:
        with os.scandir(entry) as files:
            for file in files:
                info = file.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
    except OSError:
        pass
    return total


def _entries(folder: Path) -> list[tuple[float, int, Path]]:
    """(last use, bytes, path) of each entry folder in ``folder``, least recently used first."""
    found = []
    try:
        with os.scandir(folder) as children:
            for child in children:
                if _ENTRY.match(child.name) and child.is_dir(follow_symlinks=False):
                    found.append((child.stat(follow_symlinks=False).st_mtime,
                                  entry_bytes(Path(child.path)), Path(child.path)))
    except OSError:
        return []
    return sorted(found)


def prune(folder: Path, limit_bytes: int, keep: Path) -> list[Path]:
    """Remove the least recently used entries of the cache ``folder`` until its entries add up
    to at most ``limit_bytes``, never ``keep``; the entries removed, oldest first."""
    entries = _entries(Path(folder))
    total = sum(size for _, size, _ in entries)
    removed = []
    for _, size, entry in entries:
        if total <= limit_bytes:
            break
        if entry.name == Path(keep).name:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            total -= size
            removed.append(entry)
    return removed
