"""``python -m zoo.collect DIR... [--out FILE.csv|FILE.parquet]``: gather runs into one table.

Each DIR is a run directory or any folder above run directories (a sweep, ``results/runs``).
The table is the one a sweep writes as ``summary.csv``
(:func:`profiling.reports.runs.collect_runs`): one row per stage call of every run, failed runs
as one row with their error, the runs' options as columns.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional, Sequence

from profiling.errors import ProfilingError
from profiling.reports.runs import collect_runs, find_runs, write_table

from .cli import fail

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m zoo.collect",
                                     description="Gather runs into one table.")
    parser.add_argument("directories", nargs="+", type=Path,
                        help="run directories, or folders above them")
    parser.add_argument("--out", type=Path, default=Path("summary.csv"),
                        help="the table to write, .csv or .parquet (default: summary.csv)")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.collect``."""
    args = _parser().parse_args(argv)
    runs = []
    for directory in args.directories:
        if not directory.is_dir():
            fail(f"{directory} is not a directory; give run directories or folders above them")
        found = find_runs(directory)
        if not found:
            fail(f"{directory} holds no run (no meta.json with stages.csv, no error.json)")
        runs += [run for run in found if run not in runs]
    try:
        table = collect_runs(runs)
        path = write_table(table, args.out)
    except ProfilingError as error:
        fail(str(error))
    failed = table.drop_duplicates("run")["status"].eq("failed").sum()
    print(f"{len(runs)} runs ({failed} failed), {len(table)} rows: {path}")


if __name__ == "__main__":
    main()
