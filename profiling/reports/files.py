"""Writing output folders so that they are complete or absent, never partial, stale or mixed.

:func:`write_folder` renders every file into a temporary sibling folder and then moves it into
place with one ``rename``: a kill at any moment leaves the complete folder or none, plus at most
a temporary ``.NAME.partial-PID-*`` folder, which the next write in the same parent removes
(:func:`remove_stale_temporaries`). A folder that already holds files is replaced whole only
when asked (``overwrite=True``), never mixed with the new files. :func:`write_files` adds files
to a folder (plots of an existing run), each one complete or absent.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping, Union

import pandas as pd

from ..errors import ProfilingError

__all__ = ["write_files", "write_folder", "remove_stale_temporaries", "holds_files", "Content"]

Content = Union[str, bytes, pd.DataFrame]

_PARTIAL, _REPLACED = ".partial-", ".replaced-"


def _render(folder: Path, files: Mapping[str, Content]) -> None:
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, pd.DataFrame):
            content.to_csv(target, index=False)
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)


def holds_files(directory: Union[str, Path]) -> bool:
    """Whether ``directory`` exists and is not empty."""
    directory = Path(directory)
    return directory.is_dir() and any(directory.iterdir())


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_temporaries(parent: Union[str, Path]) -> list[Path]:
    """Remove the temporary folders that killed writers left in ``parent`` (those whose
    process is gone) and return them."""
    removed = []
    parent = Path(parent)
    if not parent.is_dir():
        return removed
    for path in parent.glob(".*"):
        for marker in (_PARTIAL, _REPLACED):
            if marker in path.name and path.is_dir():
                pid = path.name.split(marker, 1)[1].split("-", 1)[0]
                if pid.isdigit() and not _pid_alive(int(pid)):
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
    return removed


def _folder_mode() -> int:
    """The mode a new folder gets from the umask (``mkdir``'s), e.g. ``0o755``."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o777 & ~umask


def _check_parent(directory: Path) -> None:
    for ancestor in [directory, *directory.parents]:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ProfilingError(f"cannot write into {directory}: {ancestor} is a file, "
                                     f"not a folder; choose another output folder")
            return


def write_folder(directory: Union[str, Path], files: Mapping[str, Content], *,
                 overwrite: bool = False) -> list[Path]:
    """Write ``{file_name: content}`` as the whole content of ``directory`` and return the paths.

    The folder appears complete, in one rename, or not at all. An existing empty folder is
    filled; one that holds files is refused with :class:`~profiling.errors.ProfilingError`
    unless ``overwrite=True``, which replaces it whole. DataFrames are written as CSV without
    the index. Names may contain ``/`` (``plots/time.png``).
    """
    directory = Path(directory).absolute()
    if not str(directory.name).strip():
        raise ProfilingError("the output folder is empty; give a folder name")
    _check_parent(directory)
    if holds_files(directory) and not overwrite:
        raise ProfilingError(f"{directory} already holds files (another run?); choose another "
                             f"folder, or replace it whole with run.overwrite=true")
    directory.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(directory.parent)
    prefix = f".{directory.name}"
    staging = Path(tempfile.mkdtemp(prefix=f"{prefix}{_PARTIAL}{os.getpid()}-",
                                    dir=directory.parent))
    replaced = None
    try:
        _render(staging, files)
        if holds_files(directory):
            replaced = Path(tempfile.mkdtemp(prefix=f"{prefix}{_REPLACED}{os.getpid()}-",
                                             dir=directory.parent))
            os.replace(directory, replaced / "old")
        elif directory.is_dir():
            directory.rmdir()
        os.chmod(staging, _folder_mode())  # mkdtemp's 0700 would hide the run from others
        try:
            os.rename(staging, directory)
        except OSError:
            if replaced is not None and not directory.exists():
                os.replace(replaced / "old", directory)
            raise
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise ProfilingError(f"{directory} was filled by another run meanwhile; nothing "
                                 f"was written") from None
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if replaced is not None:
            shutil.rmtree(replaced, ignore_errors=True)
    return [directory / name for name in files]


def write_files(directory: Union[str, Path], files: Mapping[str, Content]) -> list[Path]:
    """Add ``{file_name: content}`` to ``directory`` (created if needed) and return the paths.

    Everything is first written into a temporary folder beside ``directory`` and then moved
    into place file by file, so an error while rendering leaves none of the files behind.
    """
    directory = Path(directory)
    _check_parent(directory.absolute())
    directory.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}{_PARTIAL}{os.getpid()}-",
                                    dir=directory.parent))
    try:
        _render(staging, files)
        paths = []
        for name in files:
            destination = directory / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, destination)
            paths.append(destination)
        return paths
    finally:
        shutil.rmtree(staging, ignore_errors=True)
