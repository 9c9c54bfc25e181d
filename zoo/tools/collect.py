"""``python -m zoo.collect DIR... [--out FILE.csv|FILE.parquet [--overwrite]]``: gather runs into
one table.

Each DIR is a run directory or any folder above run directories (a sweep, ``results/runs``).
The table is the one a sweep writes as ``summary.csv``
(:func:`profiling.reports.collect_runs`): one row per stage call of every run, failed runs
as one row with their error, the runs' options as columns. A run folder whose files are broken
(partial, from another version, hand-edited) is bad input: one line names the file, exit 2, and
nothing is written. Without ``--out`` the table goes to a new folder,
``results/collect/STAMP/summary.csv``, never over a file in the current folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

from profiling.files import check_output_file

from .cli import ArgumentParser, run_tool
from .registry import register_tool
from .resolvers import run_stamp
from ..options import ConfigError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["main", "collect"]


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m zoo.collect", description="Gather runs into one table.")
    parser.add_argument("directories", nargs="+", type=Path,
                        help="run directories, or folders above them")
    parser.add_argument("--out", type=Path, default=None,
                        help="the table to write, .csv or .parquet (default: "
                             "results/collect/STAMP/summary.csv, a new folder)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out if it exists (refused otherwise)")
    return parser


def default_collect_file() -> Path:
    """``results/collect/STAMP/summary.csv``: a file in a folder no other collection uses."""
    return Path("results") / "collect" / run_stamp() / "summary.csv"


def collect(directories: Sequence[Path], out: Optional[Path] = None, *,
            overwrite: bool = False) -> tuple[Path, pd.DataFrame]:
    """Gather the runs at or below ``directories`` into the table at ``out`` (default
    :func:`default_collect_file`); return its path and the table. A broken run folder raises
    :class:`~zoo.options.ConfigError` naming its file, before anything is written; so does an
    ``out`` that exists, unless ``overwrite`` (a sweep's own ``summary.csv`` was replaced)."""
    from profiling.reports import TABLE_FORMATS, collect_runs, find_runs, write_table

    out = default_collect_file() if out is None else Path(out)
    if Path(out).suffix.lower() not in TABLE_FORMATS:
        raise ConfigError(f"--out {out}: accepted extensions are {', '.join(TABLE_FORMATS)}")
    if check_output_file(out, "--out").exists() and not overwrite:  # before the work
        raise ConfigError(f"{out} exists; choose another --out, or replace it with --overwrite")
    runs: list[Path] = []
    for directory in directories:
        if not directory.is_dir():
            raise ConfigError(f"{directory} is not a directory; give run directories or folders "
                              f"above them")
        found = find_runs(directory)
        if not found:
            raise ConfigError(f"{directory} holds no run (no meta.json with stages.csv, no "
                              f"error.json)")
        runs += [run for run in found if run not in runs]
    broken: list[str] = []
    table = collect_runs(runs, broken=broken)
    if broken:
        more = f" (and {len(broken) - 1} more broken run(s))" if len(broken) > 1 else ""
        raise ConfigError(f"{broken[0]}{more}; nothing written: give the other runs, or rerun "
                          f"the broken one")
    return write_table(table, out), table


def _main(argv: Optional[Sequence[str]]) -> None:
    args = _parser().parse_args(argv)
    path, table = collect(args.directories, args.out, overwrite=args.overwrite)
    runs = table.drop_duplicates("run") if len(table) else table
    failed = int(runs["status"].eq("failed").sum()) if len(runs) else 0
    print(f"{len(runs)} runs ({failed} failed), {len(table)} rows: {path}")


@register_tool("collect", "gather runs into one table")
def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.collect``."""
    run_tool("zoo.collect", lambda: _main(argv))

if __name__ == "__main__":
    main()
