"""``python -m zoo.report RUN [RUN ...] [--out FILE.html [--overwrite]]``: one self-contained
HTML page.

One run folder gives the page of that run, two or more a comparison (each against the first,
with the significance test of ``zoo.compare``), a folder ``zoo.split`` wrote the page of that
split analysis (executed cuts included), and a sweep folder (``hydra.sweep.dir``) the page of
the sweep. The page opens from disk, without a network or a server
(:mod:`profiling.reports.html`). It is written to ``--out``, by default ``report.html`` in the
run or sweep folder, or ``compare_<A>_<B>.html`` beside the first run of a comparison. The
file is checked before any work, and an existing one is replaced only with ``--overwrite``
(except the default ``report.html`` of a folder this tool wrote); a symbolic link is followed.
``report=true`` on ``zoo.profile`` writes a run's page with the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from profiling import ProfilingError
from profiling.statistics import MIN_CHANGE

from .cli import ArgumentParser, run_tool
from .registry import register_tool
from .composition import compose_config
from .extras import check_report_support

if TYPE_CHECKING:
    from profiling.reports import RunRecord

__all__ = ["main", "model_defaults"]


def model_defaults(record: RunRecord) -> Optional[Mapping[str, Any]]:
    """The default config of the run's model (``python -m zoo.profile model=NAME`` with
    nothing else), or ``None`` when it cannot be composed (a model of another version)."""
    from omegaconf import OmegaConf

    name = (record.config.get("model") or {}).get("name")
    if not name:
        return None
    try:
        config = OmegaConf.to_container(compose_config([f"model={name}"]), resolve=True)
    except Exception:  # noqa: BLE001  (without defaults, the overrides are listed instead)
        return None
    config.pop("hydra", None)
    return config


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m zoo.report",
                            description="One self-contained HTML page of a run, a comparison "
                                        "of runs, a split analysis, or a sweep.")
    parser.add_argument("sources", nargs="+", type=Path,
                        help="a run folder, two or more run folders (compared with the "
                             "first), a zoo.split folder, or a sweep folder")
    parser.add_argument("--out", type=Path, default=None,
                        help="the HTML file to write (default: report.html in the run or "
                             "sweep folder; compare_<A>_<B>.html beside the first run)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out if it exists (refused otherwise; the default "
                             "report.html of a run or sweep folder is always replaced)")
    parser.add_argument("--min-change", type=float, default=MIN_CHANGE,
                        help=f"a comparison's smallest significant relative time change "
                             f"(default {MIN_CHANGE}, as zoo.compare)")
    parser.add_argument("--loaded", action="store_true",
                        help="mark significant changes even between runs of a loaded machine")
    return parser


def _main(argv: Optional[Sequence[str]]) -> None:
    args = _parser().parse_args(argv)
    if not 0 <= args.min_change < 1:
        raise ProfilingError(f"--min-change must be a fraction from 0 to below 1, got "
                             f"{args.min_change}")
    folders = [source.resolve() for source in args.sources if source.exists()]
    if len(set(folders)) < len(folders):
        twice = next(folder for folder in folders if folders.count(folder) > 1)
        raise ProfilingError(f"{twice} is given twice; a comparison takes different runs")
    check_report_support()
    from profiling.reports import write_report

    path = write_report(args.sources, args.out, overwrite=args.overwrite,
                        defaults=model_defaults, min_change=args.min_change,
                        loaded=args.loaded)
    print(f"report: {path.resolve()}")


@register_tool("report", "one self-contained HTML page of a run, a comparison or a sweep")
def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.report``."""
    run_tool("zoo.report", lambda: _main(argv))

if __name__ == "__main__":
    main()
