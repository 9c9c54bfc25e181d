"""``python -m zoo.split``: where to split a model between an edge device and a server.

Usage::

    python -m zoo.split model=swiftnet input.size=[512,1024]      # bytes per cut only
    python -m zoo.split model=torchvision model.arch=resnet18 --meta --depth 2
    python -m zoo.split --device-run RUN_ON_EDGE --server-run RUN_ON_SERVER \\
        --bandwidth 1 10 100 --rtt 20 [--codec zlib int8+zlib lzma zstd|none] [--out DIR]
    python -m zoo.split --server-run RUN_ON_SERVER --device-ceilings jetson_orin_nano

The model and input come from the runs' ``meta.json`` (the runs must match), or from Hydra
overrides as for ``python -m zoo.profile``. The cuts are analysed in one forward on the CPU,
with real data so that the codecs measure real compression (``--meta``: on the meta device,
in seconds at any size, without compression). Candidates: the input, the end of every
top-level stage call and the output; ``--depth N`` adds the end of every module call down to
depth N of the module tree, ``--every-op`` every operator boundary. Without a device run,
``--device-ceilings`` estimates the device side as a roofline bound of a preset (see
:mod:`profiling.split.latency`). The output folder gets ``cuts.csv`` (every candidate),
``split_timeline.png`` (bytes alive along the forward), and with a server run ``latency.csv``,
``best.csv`` (the best cut per encoding and bandwidth) and ``split_latency.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from .cli import run_tool
from .registry import register_tool
from .resolvers import model_label, run_stamp
from .split_arguments import check_arguments, split_config, split_parser

__all__ = ["main"]

#: Where an analysis goes without ``--out``: a folder of its own per run.
_DEFAULT_PARENT = Path("results/splits")


def _run(argv: Optional[Sequence[str]]) -> None:
    args = split_parser().parse_intermixed_args(argv)  # overrides after the flags too
    codecs = check_arguments(args)
    from profiling.files import check_replaceable, check_writable, write_folder

    if args.out is not None:  # checked before the work: never an analysis lost at the end
        check_replaceable(args.out, option=None)
    check_writable("--out", args.out or _DEFAULT_PARENT)
    from .split_report import analyse, read_sides

    ceilings, device_run, server_run = read_sides(args)
    cfg = split_config(device_run, server_run, args.overrides)
    files, lines = analyse(cfg, args, codecs, ceilings, device_run, server_run)
    label = model_label(cfg.model.name, cfg.model.get("arch"))
    out = args.out or _DEFAULT_PARENT / f"{run_stamp()}_{label}"
    write_folder(out, files)
    print("\n".join(lines))
    print(f"split analysis: {Path(out).resolve()}")


@register_tool("split", "where to cut a forward between an edge device and a server")
def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.split``."""
    run_tool("zoo.split", lambda: _run(argv))


if __name__ == "__main__":
    main()
