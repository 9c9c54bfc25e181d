"""``python -m zoo.compare RUN_A RUN_B [--out FILE.csv] [--depth N] [--min-change X] [--loaded]``
and ``python -m zoo.compare --run "OVERRIDES A" --run "OVERRIDES B" [--out DIR] [--rounds N]``.

Compare two runs stage by stage: two run folders, or two configurations that this command
profiles itself, in alternation (:mod:`zoo.tools.ab_compare`), and compares round by round.

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

from profiling import ProfilingError
from profiling.files import check_output_file
from profiling.statistics import AB_MIN_CHANGE, AB_ROUNDS, MIN_CHANGE

from .cli import ArgumentParser, run_tool
from .registry import register_tool
from ..options import ConfigError

__all__ = ["main"]


def _parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="python -m zoo.compare",
        description="Compare two runs stage by stage: two run folders (RUN_A RUN_B), or two "
                    "configurations profiled here in alternation (--run A --run B).")
    parser.add_argument("run_a", type=Path, nargs="?", help="the reference run directory")
    parser.add_argument("run_b", type=Path, nargs="?", help="the run compared with it")
    parser.add_argument("--run", action="append", default=[], metavar="OVERRIDES",
                        help='zoo.profile overrides of one side, quoted ("model=timm '
                             'model.arch=resnet18"); twice: A, then B')
    parser.add_argument("--rounds", type=int, default=AB_ROUNDS,
                        help=f"with --run: timed forwards of each side, alternating "
                             f"(default {AB_ROUNDS})")
    parser.add_argument("--out", type=Path, default=None,
                        help="with run folders: the CSV to write (default: compare.csv in a new "
                             "folder under results/compare/); with --run: the folder to write")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out if it exists (refused otherwise)")
    parser.add_argument("--depth", type=int, default=1,
                        help="deepest stage level shown in the terminal (default 1)")
    parser.add_argument("--min-change", type=float, default=None,
                        help=f"smallest relative time change called significant (default "
                             f"{MIN_CHANGE} for run folders, {AB_MIN_CHANGE} with --run; the "
                             f"interval must exclude 1 as well)")
    parser.add_argument("--loaded", action="store_true",
                        help="call changes significant even when a run's machine was loaded "
                             "above its cores (withheld by default; --run never withholds)")
    return parser


def _folders(args) -> tuple:
    if args.run_a is None or args.run_b is None:
        raise ConfigError("give two run folders (RUN_A RUN_B) or two configurations "
                          "(--run \"OVERRIDES A\" --run \"OVERRIDES B\")")
    if args.run_a.exists() and args.run_b.exists() and \
            args.run_a.resolve() == args.run_b.resolve():
        raise ConfigError(f"RUN_A and RUN_B are the same folder ({args.run_a.resolve()}); give "
                          f"two runs to compare")
    from profiling.reports import compare_runs, read_run, write_table

    from .ab_compare import COMPARE_FILE, default_compare_folder

    min_change = MIN_CHANGE if args.min_change is None else args.min_change
    out = check_output_file(args.out or default_compare_folder() / COMPARE_FILE, "--out")
    if out.exists() and not args.overwrite:  # both checked before the work
        raise ConfigError(f"{out} exists; choose another --out, or replace it with --overwrite")
    a, b = read_run(args.run_a), read_run(args.run_b)
    for record in (a, b):
        if record.status != "ok":
            raise ProfilingError(f"{record.directory} is a failed run ({record.error})")
    table = compare_runs(a, b, min_change=min_change, loaded=args.loaded)
    return table, a, b, write_table(table, out), min_change


def _main(argv: Optional[Sequence[str]]) -> None:
    args = _parser().parse_args(argv)
    if args.min_change is not None and not 0 <= args.min_change < 1:
        raise ProfilingError(f"--min-change must be a fraction from 0 to below 1, got "
                             f"{args.min_change}")
    from profiling.reports import format_comparison

    from .ab_compare import COMPARE_FILE, run_ab

    if args.run:
        if args.run_a is not None:
            raise ConfigError("give either two run folders or --run twice, not both")
        min_change = AB_MIN_CHANGE if args.min_change is None else args.min_change
        table, a, b, out = run_ab(args.run, args.out, rounds=args.rounds,
                                  overwrite=args.overwrite, min_change=min_change)
        path = out / COMPARE_FILE
        written = [out / "a", out / "b", path]
    else:
        table, a, b, path, min_change = _folders(args)
        written = [path]
    print(format_comparison(table, a, b, max_depth=args.depth, min_change=min_change,
                            color=sys.stdout.isatty()))
    print("files written:")
    for item in written:
        print(f"  {item.resolve()}{'/' if item.is_dir() else ''}")


@register_tool("compare", "compare two runs stage by stage, with significance")
def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.compare``."""
    run_tool("zoo.compare", lambda: _main(argv))

if __name__ == "__main__":
    main()
