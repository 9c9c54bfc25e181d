"""``python -m zoo.collect DIR... [--out FILE.csv|FILE.parquet]``: gather runs into one table.

Each DIR is a run directory or any folder above run directories (a sweep, ``results/runs``).
The table is the one a sweep writes as ``summary.csv``
(:func:`profiling.reports.collect_runs`): one row per stage call of every run, failed runs
as one row with their error, the runs' options as columns. A run whose files are broken is
skipped with a warning line naming it, and the tool then exits 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from profiling.reports import TABLE_FORMATS, check_output_file, collect_runs, find_runs, \
    write_table

from .cli import EXIT_FAILURE, ArgumentParser, fail, run_tool
from ..errors import ConfigError

__all__ = ["main", "collect"]


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m zoo.collect", description="Gather runs into one table.")
    parser.add_argument("directories", nargs="+", type=Path,
                        help="run directories, or folders above them")
    parser.add_argument("--out", type=Path, default=Path("summary.csv"),
                        help="the table to write, .csv or .parquet (default: summary.csv)")
    return parser


def collect(directories: Sequence[Path], out: Path) -> tuple[Path, pd.DataFrame, list[str]]:
    """Gather the runs at or below ``directories`` into the table at ``out``; return its path,
    the table and one line per broken run that was skipped."""
    if Path(out).suffix.lower() not in TABLE_FORMATS:
        raise ConfigError(f"--out {out}: accepted extensions are {', '.join(TABLE_FORMATS)}")
    check_output_file(out, "--out")  # before the work
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
    return write_table(table, out), table, broken


def _main(argv: Optional[Sequence[str]]) -> None:
    args = _parser().parse_args(argv)
    path, table, broken = collect(args.directories, args.out)
    for problem in broken:
        print(f"warning: skipped {problem}", file=sys.stderr)
    runs = table.drop_duplicates("run") if len(table) else table
    failed = int(runs["status"].eq("failed").sum()) if len(runs) else 0
    print(f"{len(runs)} runs ({failed} failed), {len(table)} rows: {path}")
    if broken:
        fail(f"{len(broken)} broken run(s) skipped (listed above); the others are in {path}",
             code=EXIT_FAILURE)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.collect``."""
    run_tool("zoo.collect", lambda: _main(argv))

if __name__ == "__main__":
    main()
