"""Writing output folders so that they are complete or absent, never partial, stale or mixed.

:func:`write_folder` renders every file into a temporary sibling folder and then moves it into
place with one ``rename``: a kill at any moment leaves the complete folder or none, plus at most
a temporary ``.NAME.partial-PID-*`` folder, which the next write in the same parent removes
(:func:`remove_stale_temporaries`). A folder that already holds files is replaced whole only
when asked (``overwrite=True``), never mixed with the new files, and only when it carries the
:data:`MARKER` file that only this function writes (:func:`check_replaceable`): a folder of
someone else's files is never replaced, and the working directory, the home directory and their
ancestors are never written at all. :func:`write_files` adds files to a folder (plots of an
existing run), and :func:`write_file` writes one file (a table, a ceilings file), each one
complete or absent.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Optional, Union

from ..errors import ProfilingError
from .places import home_folder

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["write_files", "write_folder", "write_file", "replace_folder", "mark_folder",
           "holds_marker", "check_replaceable", "check_writable", "check_output_file",
           "staging_folder", "remove_stale_temporaries", "holds_files", "MARKER", "Content"]

Content = Union[str, bytes, "pd.DataFrame"]

_PARTIAL, _REPLACED = ".partial-", ".replaced-"
#: The file that marks a folder as written by this tool (a run, a sweep, a split analysis):
#: ``overwrite`` replaces no other folder.
MARKER = ".stagezoo"
_MARKER_TEXT = ("Written by stagezoo. run.overwrite=true may replace this whole folder; it "
                "replaces no folder without this file.\n")


def _write_content(target: Union[str, Path], content: Content) -> None:
    if hasattr(content, "to_csv"):  # a DataFrame (pandas loads only where one is written)
        content.to_csv(target, index=False)
    elif isinstance(content, bytes):
        Path(target).write_bytes(content)
    else:
        Path(target).write_text(content)


def _render(folder: Path, files: Mapping[str, Content]) -> None:
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_content(target, content)


def holds_files(directory: Union[str, Path]) -> bool:
    """Whether ``directory`` exists and is not empty."""
    directory = Path(directory)
    return directory.is_dir() and any(directory.iterdir())


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # another user's process: it may still be writing
        return True
    return True


def remove_stale_temporaries(parent: Union[str, Path]) -> list[Path]:
    """Remove the temporary folders and files that killed writers left in ``parent`` (those
    whose process is gone) and return them."""
    removed = []
    parent = Path(parent)
    if not parent.is_dir():
        return removed
    for path in parent.glob(".*"):
        for marker in (_PARTIAL, _REPLACED):
            if marker in path.name and (path.is_dir() or path.is_file()):
                pid = path.name.split(marker, 1)[1].split("-", 1)[0]
                if pid.isdigit() and not _pid_alive(int(pid)):
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)
                    removed.append(path)
    return removed


def _folder_mode() -> int:
    """The mode a new folder gets from the umask (``mkdir``'s), e.g. ``0o755``."""
    umask = os.umask(0)  # the umask is read only by setting it: put back at once
    os.umask(umask)
    return 0o777 & ~umask


def _check_parent(directory: Path) -> None:
    for ancestor in [directory, *directory.parents]:
        if ancestor.exists():
            if not ancestor.is_dir():
                raise ProfilingError(f"cannot write into {directory}: {ancestor} is a file, "
                                     f"not a folder; choose another output folder")
            return


def mark_folder(directory: Union[str, Path]) -> None:
    """Leave the :data:`MARKER` in ``directory`` (created if needed): this tool wrote it."""
    Path(directory).mkdir(parents=True, exist_ok=True)
    (Path(directory) / MARKER).write_text(_MARKER_TEXT)


def holds_marker(directory: Union[str, Path]) -> bool:
    """Whether ``directory`` carries the :data:`MARKER` (a regular file, not a link)."""
    marker = Path(directory) / MARKER
    return marker.is_file() and not marker.is_symlink()


def _real(path: Path, option: str) -> Path:
    """``path`` with its symbolic links followed; one line for a link that loops (Python
    raises ``RuntimeError`` for it, which read as a failure, exit 1)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as error:
        raise ProfilingError(f"{option} {path}: a symbolic link on the way loops ({error}); "
                             f"choose another path") from None


def _protected(directory: Path) -> str:
    """Why ``directory`` may never be written or replaced (``""`` if it may)."""
    for name, place in (("the working directory", Path.cwd()), ("the home directory",
                                                                 home_folder())):
        place = place.resolve()
        if directory == place:
            return f"is {name}"
        if directory in place.parents:
            return f"holds {name} ({place})"
    return ""


def check_writable(option: str, path: Union[str, Path]) -> None:
    """Refuse an output folder below a file or a device, or on a file system that cannot be
    written (``option`` names it in the one-line :class:`~profiling.errors.ProfilingError`)."""
    absolute = Path(path).expanduser().absolute()
    existing = next(p for p in [absolute, *absolute.parents] if p.exists())
    if not existing.is_dir():
        kind = "a file" if existing.is_file() else "a device or special file"
        raise ProfilingError(f"{option}={path}: {existing} is {kind}, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ProfilingError(f"{option}={path}: {existing} cannot be written (read-only?); "
                             f"choose another folder")


def check_replaceable(directory: Union[str, Path], overwrite: bool = False,
                      option: Optional[str] = "run.overwrite") -> Path:
    """Refuse an output folder that may not be written, and return its real path (symbolic
    links followed).

    Never written: the working directory, the home directory and any folder above them.
    A folder that holds files is refused unless ``overwrite``; even then it is replaced only
    if it carries the :data:`MARKER`, that is, if this tool wrote it. ``option`` is what the
    user sets to overwrite (``None``: the tool cannot overwrite; ``"overwrite"``: a library
    caller, told to pass ``overwrite=True``). Raises
    :class:`~profiling.errors.ProfilingError` (one line).
    """
    directory = Path(directory).expanduser().absolute()
    if not str(directory.name).strip() and directory != Path(directory.anchor):
        raise ProfilingError("the output folder is empty; give a folder name")
    real = _real(directory, "the output folder")
    _check_parent(real)
    reason = _protected(real)
    if reason:
        raise ProfilingError(f"{directory} {reason}: it is never written or replaced; give a "
                             f"folder of its own")
    if holds_files(real):
        if not overwrite:
            hint = "" if not option else (
                ", or replace it whole with write_run(..., overwrite=True)" if option == "overwrite"
                else f", or replace it whole with {option}=true")
            raise ProfilingError(f"{directory} already holds files (another run?); choose "
                                 f"another folder{hint}")
        if not holds_marker(real):
            raise ProfilingError(f"{directory} holds files that this tool did not write (no "
                                 f"{MARKER} marker): it is never replaced, even with "
                                 f"{option or 'overwrite'}=true; choose another folder")
    return real


def replace_folder(staging: Union[str, Path], directory: Union[str, Path]) -> Path:
    """Move the complete folder ``staging`` to ``directory``, which it replaces whole if it
    exists (the old folder stays whole until the new one is in place); return ``directory``."""
    staging, directory = Path(staging), Path(directory)
    replaced = None
    try:
        if holds_files(directory):
            replaced = Path(tempfile.mkdtemp(prefix=f".{directory.name}{_REPLACED}"
                                                    f"{os.getpid()}-", dir=directory.parent))
            # aside first: a rename cannot replace a folder that holds files
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
        if replaced is not None:
            shutil.rmtree(replaced, ignore_errors=True)
    return directory


def staging_folder(directory: Union[str, Path]) -> Path:
    """A new, empty temporary folder beside ``directory`` for its content (removed by
    :func:`remove_stale_temporaries` if its process dies)."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(directory.parent)
    return Path(tempfile.mkdtemp(prefix=f".{directory.name}{_PARTIAL}{os.getpid()}-",
                                 dir=directory.parent))


def write_folder(directory: Union[str, Path], files: Mapping[str, Content], *,
                 overwrite: bool = False) -> list[Path]:
    """Write ``{file_name: content}`` as the whole content of ``directory`` and return the paths.

    The folder appears complete, in one rename, or not at all, with the :data:`MARKER` beside
    the files. An existing empty folder is filled; one that holds files is refused with
    :class:`~profiling.errors.ProfilingError` unless ``overwrite=True``, which replaces it whole
    if this tool wrote it (:func:`check_replaceable`). A symbolic link is followed: the files go
    where it points. DataFrames are written as CSV without the index. Names may contain ``/``
    (``plots/time.png``).
    """
    given = Path(directory).absolute()
    directory = check_replaceable(directory, overwrite, option="overwrite")
    staging = staging_folder(directory)
    try:
        _render(staging, files)
        mark_folder(staging)
        replace_folder(staging, directory)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [given / name for name in files]


def check_output_file(path: Union[str, Path], option: str = "--out") -> Path:
    """Refuse an output file that cannot be written, before any work, and return its real
    path (a symbolic link is followed, as a shell's ``>`` would): a folder, a device or another
    special file, a path below a file, or a folder that cannot be written."""
    given = Path(path).expanduser()
    real = _real(given.absolute(), option)
    if real.exists() and not real.is_file():
        kind = "a folder" if real.is_dir() else "not a regular file (a device?)"
        raise ProfilingError(f"{option} {given}: {real} is {kind}; give a file name")
    _check_parent(real.parent)
    existing = next(p for p in real.parents if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK) or (real.exists() and
                                                      not os.access(real, os.W_OK)):
        raise ProfilingError(f"{option} {given}: {existing if not real.exists() else real} "
                             f"cannot be written (read-only?); choose another file")
    return real


def write_file(path: Union[str, Path], content: Content) -> Path:
    """Write one file whole or not at all (a temporary sibling, then one rename), so that a
    kill or a full disk never leaves it empty or cut short; return its real path. A symbolic
    link is followed (the file lands where it points), and a file replaced keeps its mode."""
    target = check_output_file(path, "output")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}{_PARTIAL}{os.getpid()}-",
                                         dir=target.parent)
    os.close(handle)
    try:
        _write_content(temporary, content)
        # mkstemp's 0600 would hide the file from others: the mode open() would give
        os.chmod(temporary, stat.S_IMODE(target.stat().st_mode) if target.exists()
                 else 0o666 & _folder_mode())
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


def write_files(directory: Union[str, Path], files: Mapping[str, Content]) -> list[Path]:
    """Add ``{file_name: content}`` to ``directory`` (created if needed) and return the paths.

    Everything is first written into a temporary folder inside ``directory``, on the same file
    system as the files it becomes (a rename never crosses file systems), and then moved into
    place file by file, so an error while rendering leaves none of the files behind, and no
    folder that this call created (``plots/``) is left empty.
    """
    directory = Path(directory)
    _check_parent(directory.absolute())
    missing = [p for p in [directory, *directory.parents] if not p.exists()]
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(directory)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}{_PARTIAL}{os.getpid()}-",
                                    dir=directory))
    paths: list[Path] = []
    try:
        _render(staging, files)
        for name in files:
            destination = directory / name
            missing += [p for p in destination.parents if not p.exists()]
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, destination)
            paths.append(destination)
        return paths
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if len(paths) < len(files):
            _remove_if_empty(sorted(set(missing), key=lambda p: len(p.parts), reverse=True))


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (the deepest first) that holds nothing."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            pass
