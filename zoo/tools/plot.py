"""``python -m zoo.plot DIR [--ceilings NAME|FILE]``: PNG plots of a run or a split analysis.

For a run directory: ``plots/time.png``, ``plots/payload.png``, ``plots/memory.png`` and, when
the run counted operations, ``plots/roofline.png`` (the roof drawn for ``--ceilings``: a
preset of :data:`profiling.counting.PRESETS` or a file from ``python -m zoo.calibrate``;
by default the ceilings the run recorded in ``meta.json``). For a
``python -m zoo.split`` folder (it has ``latency.csv``): ``split_latency.png``. The same plots
come with ``plots=true`` in a run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Sequence


from profiling import ProfilingError, require_extra
from profiling.files import read_table, write_files

from .cli import ArgumentParser, run_tool
from .registry import register_tool

__all__ = ["main", "plot_directory"]

def _ceilings(name: Optional[str]):
    """The ceilings named on the command line (``None``: those the run recorded)."""
    if not name:
        return None
    from profiling.counting import load_ceilings

    return load_ceilings(name)


def plot_directory(directory: Path, ceilings: Optional[str] = None) -> tuple[list[Path],
                                                                                list[str]]:
    """Write the plots of a run or split directory into it; return the paths and notes."""
    require_extra("matplotlib", "plots", "zoo.plot")
    if directory.is_dir() and not os.access(directory, os.W_OK | os.X_OK):  # before the work
        raise ProfilingError(f"{directory} cannot be written (read-only?); the plots go into "
                             f"the folder they plot")
    from profiling.reports import plot_split_latency, read_run, render_plots

    if (directory / "latency.csv").is_file():
        latency = read_table(directory / "latency.csv",
                             required=("encoding", "bandwidth_mbit", "latency_ms"),
                             numeric=lambda column: column in ("bandwidth_mbit", "latency_ms"))
        return write_files(directory, {"split_latency.png": plot_split_latency(latency)}), []
    record = read_run(directory)
    if record.status != "ok":
        raise ProfilingError(f"{directory} is a failed run ({record.error}); nothing to plot")
    plots, notes = render_plots(record, _ceilings(ceilings))
    return write_files(directory, plots), notes


def _main(argv: Optional[Sequence[str]]) -> None:
    parser = ArgumentParser(prog="python -m zoo.plot",
                            description="PNG plots of a run or a split analysis.")
    parser.add_argument("directory", type=Path, help="a run directory or a zoo.split folder")
    parser.add_argument("--ceilings", default=None,
                        help="device ceilings for the roofline: a preset (h100, a100, ...) "
                             "or a YAML file from python -m zoo.calibrate")
    args = parser.parse_args(argv)
    if args.ceilings:
        _ceilings(args.ceilings)  # a bad file or name fails before any work
    paths, notes = plot_directory(args.directory, args.ceilings)
    for note in notes:
        print(f"note: {note}")
    for path in paths:
        print(path)


@register_tool("plot", "PNG plots of a run or a split analysis")
def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.plot``."""
    run_tool("zoo.plot", lambda: _main(argv))

if __name__ == "__main__":
    main()
