"""``python -m zoo.compare RUN_A RUN_B [--out FILE.csv] [--depth N]``: compare two runs by stage.

Stages are matched by name and call index. The terminal table shows time, output payload,
memory peak and FLOPs (when both runs counted them) of A and B and the relative change; the CSV
holds every compared metric with A, B, the difference and the ratio
(:func:`profiling.reports.compare.compare_stages`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional, Sequence

from profiling.errors import ProfilingError
from profiling.reports.compare import compare_stages, format_comparison
from profiling.reports.runs import read_run, write_table

from .cli import fail

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m zoo.compare",
                                     description="Compare two runs stage by stage.")
    parser.add_argument("run_a", type=Path, help="the reference run directory")
    parser.add_argument("run_b", type=Path, help="the run compared with it")
    parser.add_argument("--out", type=Path, default=None,
                        help="the CSV to write (default: compare.csv in the current folder)")
    parser.add_argument("--depth", type=int, default=1,
                        help="deepest stage level shown in the terminal (default 1)")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.compare``."""
    args = _parser().parse_args(argv)
    try:
        a, b = read_run(args.run_a), read_run(args.run_b)
        for record in (a, b):
            if record.status != "ok":
                raise ProfilingError(f"{record.directory} is a failed run ({record.error})")
        table = compare_stages(a.stages, b.stages)
        path = write_table(table, args.out or Path("compare.csv"))
    except ProfilingError as error:
        fail(str(error))
    print(format_comparison(table, a, b, max_depth=args.depth))
    print(f"comparison: {path.resolve()}")


if __name__ == "__main__":
    main()
