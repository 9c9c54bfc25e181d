"""One entry for every page: a run folder, two or more run folders, a sweep folder, or a split
analysis folder (``python -m zoo.split``'s), and where the page is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from ...errors import ProfilingError
from ..comparison import MIN_CHANGE
from ...files.writing import check_output_file, holds_marker, write_file
from ..record import RunRecord, read_run
from .compare_page import comparison_page
from .page import Page
from .run_page import run_page
from .split_page import is_split_folder, split_page
from .sweep_page import sweep_page

__all__ = ["REPORT_FILE", "report_page", "write_report", "report_kind", "default_output",
           "check_report_output"]

#: The report's file name in a run or sweep folder.
REPORT_FILE = "report.html"

PathLike = Union[str, Path]
#: The default config of a run's model (to list the options that differ from it), or None.
Defaults = Callable[[RunRecord], Optional[Mapping[str, Any]]]


def _is_run(path: Path) -> bool:
    try:
        read_run(path)
        return True
    except ProfilingError:
        return False


def report_kind(sources: Sequence[PathLike]) -> str:
    """``run``, ``comparison``, ``split`` or ``sweep`` for these folders (see
    :func:`report_page`)."""
    if not sources:
        raise ProfilingError("give a run folder, two or more run folders, or a sweep folder")
    for source in sources:
        if not Path(source).is_dir():
            raise ProfilingError(f"{source} is not a folder; give run folders or a sweep folder")
    if len(sources) > 1:
        return "comparison"
    if _is_run(Path(sources[0])):
        return "run"
    return "split" if is_split_folder(sources[0]) else "sweep"


def report_page(sources: Sequence[PathLike], *, defaults: Optional[Defaults] = None,
                min_change: float = MIN_CHANGE, loaded: bool = False) -> Page:
    """The page of one run folder, of a comparison of two or more (the first is the
    reference), of a split analysis folder (:func:`~.split_page.split_page`), or of a sweep
    folder.

    Args:
        defaults: for a run, a function giving the default config of its model, to list the
            options that differ from it (else the run's command-line overrides are listed).
        min_change: a comparison's smallest significant change (as ``zoo.compare``).
        loaded: call changes significant even between runs of a loaded machine.

    Raises:
        ProfilingError: a folder that is not a run or a sweep, a failed run, runs of
            different models, a sweep without a finished job.
    """
    kind = report_kind(sources)
    if kind == "run":
        record = read_run(sources[0])
        if record.status != "ok":
            raise ProfilingError(f"{sources[0]} is a failed run ({record.error}); there is "
                                 f"nothing to report")
        return run_page(record, defaults=defaults(record) if defaults else None)
    if kind == "comparison":
        records = []
        for source in sources:
            if not _is_run(Path(source)):
                raise ProfilingError(f"{source} is not a run folder (no meta.json with "
                                     f"stages.csv, nor error.json); a comparison takes runs")
            records.append(read_run(source))
        return comparison_page(records, min_change=min_change, loaded=loaded)
    if kind == "split":
        return split_page(sources[0])
    return sweep_page(sources[0])


def default_output(sources: Sequence[PathLike]) -> Path:
    """Where a report goes unless told: ``report.html`` in the run, sweep or split folder; for a
    comparison, ``compare_<A>_<B>[...].html`` beside the first run."""
    first = Path(sources[0])
    if len(sources) == 1:
        return first / REPORT_FILE
    names = "_".join(Path(s).resolve().name for s in sources)[:120]
    return first.resolve().parent / f"compare_{names}.html"


def check_report_output(sources: Sequence[PathLike], out: Optional[PathLike] = None, *,
                        overwrite: bool = False) -> Path:
    """Refuse, before any work, a page's file that may not be written, and return its real path
    (a symbolic link is followed, as a shell's ``>`` would): a name not ending in ``.html``, a
    folder, a device, a folder that cannot be written, or a file that exists, unless
    ``overwrite`` or it is the default ``report.html`` of a folder this tool wrote."""
    path = Path(out) if out is not None else default_output(sources)
    if path.is_dir():
        raise ProfilingError(f"{path} is a folder; give a file name ending in .html")
    if path.suffix.lower() not in (".html", ".htm"):
        raise ProfilingError(f"the report is HTML: give --out a file name ending in .html, "
                             f"got {path.name}")
    real = check_output_file(path, "--out")
    ours = out is None and holds_marker(real.parent)
    if real.exists() and not (overwrite or ours):
        raise ProfilingError(f"{path} exists; choose another --out, or replace it with "
                             f"--overwrite")
    return real


def write_report(sources: Sequence[PathLike], out: Optional[PathLike] = None, *,
                 overwrite: bool = False, **options: Any) -> Path:
    """Write the page of :func:`report_page` to ``out`` (default :func:`default_output`)
    and return its path. ``out`` is checked first (:func:`check_report_output`); the file
    appears whole or not at all, in the folder it goes to, and a file it replaces keeps its
    mode."""
    real = check_report_output(sources, out, overwrite=overwrite)
    page = report_page(sources, **options)
    write_file(real, page.render())
    return Path(out) if out is not None else default_output(sources)
