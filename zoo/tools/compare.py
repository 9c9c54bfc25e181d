"""``python -m zoo.compare RUN_A RUN_B [--out FILE.csv] [--depth N] [--min-change X] [--loaded]``.

Compare two runs stage by stage.

Stages are matched by name and call index. The terminal table shows time, output payload,
memory peak and FLOPs (when both runs counted them) of A and B and the relative change, each
time change with the 95% interval of the ratio B/A and marked ``*`` when significant; the
header gives both runs' noise. The CSV holds every compared metric with A, B, the difference
and the ratio, and per stage call and for the whole forward (first row, ``(forward)``) the time
ratio's interval and ``significant`` (:func:`profiling.reports.compare_runs`,
docs/statistics.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

from profiling.errors import ProfilingError
from profiling.reports.comparison import MIN_CHANGE, compare_runs, format_comparison
from profiling.reports.runs import read_run, write_table

from .cli import ArgumentParser, run_tool

__all__ = ["main"]


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m zoo.compare",
                            description="Compare two runs stage by stage.")
    parser.add_argument("run_a", type=Path, help="the reference run directory")
    parser.add_argument("run_b", type=Path, help="the run compared with it")
    parser.add_argument("--out", type=Path, default=None,
                        help="the CSV to write (default: compare.csv in the current folder)")
    parser.add_argument("--depth", type=int, default=1,
                        help="deepest stage level shown in the terminal (default 1)")
    parser.add_argument("--min-change", type=float, default=MIN_CHANGE,
                        help=f"smallest relative time change called significant (default "
                             f"{MIN_CHANGE}; the 95%% interval must exclude 1 as well)")
    parser.add_argument("--loaded", action="store_true",
                        help="call changes significant even when a run's machine was loaded "
                             "above its cores (withheld by default)")
    return parser


def _main(argv: Optional[Sequence[str]]) -> None:
    args = _parser().parse_args(argv)
    if not 0 <= args.min_change < 1:
        raise ProfilingError(f"--min-change must be a fraction from 0 to below 1, got "
                             f"{args.min_change}")
    a, b = read_run(args.run_a), read_run(args.run_b)
    for record in (a, b):
        if record.status != "ok":
            raise ProfilingError(f"{record.directory} is a failed run ({record.error})")
    table = compare_runs(a, b, min_change=args.min_change, loaded=args.loaded)
    path = write_table(table, args.out or Path("compare.csv"))
    print(format_comparison(table, a, b, max_depth=args.depth, min_change=args.min_change,
                            color=sys.stdout.isatty()))
    print(f"comparison: {path.resolve()}")


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.compare``."""
    run_tool("zoo.compare", lambda: _main(argv))

if __name__ == "__main__":
    main()
