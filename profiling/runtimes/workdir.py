"""The folders an export is staged in, what a killed run left of them, and a full disk.

A runtime run exports into a temporary folder (``stagezoo-export-<pid>-*`` in ``TMPDIR``) and
copies an export into the cache through a staging folder (``.incoming-<pid>-*`` beside the
entries). A run killed on the way leaves them behind; the next run reclaims every such folder
whose owner is gone: no process has its pid, or the process with that pid started after the
folder last changed (the pid was reused). A staging folder older than an hour is reclaimed
whoever owns it (staging copies files; it never takes that long).

A full disk is a failure of the run, never a reason to leave a module in PyTorch:
:func:`raise_if_disk_full` turns an error that comes from one into :class:`DiskFull`.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Optional

__all__ = ["WORKDIR_PREFIX", "STAGING_PREFIX", "make_workdir", "make_staging",
           "reclaim_leftovers", "DiskFull", "raise_if_disk_full"]

WORKDIR_PREFIX = "stagezoo-export-"
STAGING_PREFIX = ".incoming-"
#: A staging folder older than this (seconds) is reclaimed even if its pid runs.
STAGING_MAX_AGE_S = 3600.0
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_DISK_FULL_TEXT = re.compile(r"no space left on device|disk quota exceeded", re.IGNORECASE)


def _owned(prefix: str) -> str:
    return f"{prefix}{os.getpid()}-"


def make_workdir(parent: Optional[Path] = None) -> Path:
    """A new ``stagezoo-export-<pid>-*`` folder in ``parent`` (``TMPDIR`` by default), after
    reclaiming those that killed runs left there."""
    folder = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    reclaim_leftovers(folder, WORKDIR_PREFIX)
    return Path(tempfile.mkdtemp(prefix=_owned(WORKDIR_PREFIX), dir=folder))


def make_staging(cache: Path) -> Path:
    """A new ``.incoming-<pid>-*`` staging folder in the cache folder ``cache``."""
    return Path(tempfile.mkdtemp(prefix=_owned(STAGING_PREFIX), dir=cache))


def _boot_time() -> Optional[float]:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        pass
    return None


def _process_start(pid: int) -> Optional[float]:
    """When process ``pid`` started (seconds since the epoch), where ``/proc`` says."""
    boot = _boot_time()
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name in () may hold spaces
    if boot is None or len(fields) < 20:
        return None
    return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # starttime, ticks since boot


def _owner_gone(pid: int, changed: float) -> bool:
    """Whether no running process can own a folder that pid ``pid`` made and that last
    changed at ``changed``."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        pass  # another user's process runs with that pid
    started = _process_start(pid)
    # the boot time is in whole seconds: a start within a second of the change may be the owner
    return started is not None and started > changed + 1.0


def reclaim_leftovers(folder: Path, prefix: str, max_age_s: Optional[float] = None
                      ) -> list[Path]:
    """Remove the ``<prefix><pid>-*`` folders in ``folder`` whose owner is gone (or older
    than ``max_age_s``) and return them; links and files of that name are left alone."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)-")
    reclaimed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return reclaimed
    for name in names:
        match = pattern.match(name)
        if match is None:
            continue
        path = Path(folder) / name
        try:
            status = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(status.st_mode):
            continue
        old = max_age_s is not None and time.time() - status.st_mtime > max_age_s
        if old or _owner_gone(int(match.group(1)), status.st_mtime):
            shutil.rmtree(path, ignore_errors=True)
            reclaimed.append(path)
    return reclaimed


class DiskFull(OSError):
    """The disk an export is written to is full: a failure of the run (exit 1)."""


def _disk_full_cause(error: BaseException) -> Optional[BaseException]:
    seen = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _DISK_FULL:
            return current
        if _DISK_FULL_TEXT.search(str(current)):
            return current
        current = current.__cause__ or current.__context__
    return None


def _mount_point(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def raise_if_disk_full(error: BaseException) -> None:
    """Raise :class:`DiskFull`, naming the disk, when ``error`` or an error behind it says
    that the disk is full (ENOSPC, EDQUOT); do nothing otherwise."""
    cause = _disk_full_cause(error)
    if cause is None:
        return
    written = getattr(cause, "filename", None)
    place = Path(written) if written else Path(tempfile.gettempdir())
    raise DiskFull(errno.ENOSPC, f"no space left on the disk mounted at {_mount_point(place)} "
                                 f"(ENOSPC) while writing the export; free space there or set "
                                 f"TMPDIR to a folder on another disk", str(place)) from error
