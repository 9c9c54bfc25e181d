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
from typing import Any, Optional, Sequence

from .cli import ArgumentParser, run_tool
from .registry import register_tool
from .composition import checked_config
from ..options import ConfigError
from .resolvers import model_label, run_stamp

__all__ = ["main", "split_config"]

_SAME = ("model.", "input.", "run.seed")
#: Where an analysis goes without ``--out``: a folder of its own per run.
_DEFAULT_PARENT = Path("results/splits")


def _parser() -> ArgumentParser:
    parser = ArgumentParser(prog="python -m zoo.split",
                            description="Split-point analysis: bytes alive across each cut, "
                                        "and end-to-end latency.")
    parser.add_argument("overrides", nargs="*",
                        help="Hydra overrides (model=..., input.size=[H,W]) when no run is given")
    parser.add_argument("--device-run", type=Path, help="run directory on the edge device")
    parser.add_argument("--server-run", type=Path, help="run directory on the server")
    parser.add_argument("--device-ceilings", metavar="PRESET",
                        help="estimate the device side as a roofline bound of this preset "
                             "(jetson_orin_nano, jetson_orin_nx, jetson_agx_orin, "
                             "raspberry_pi5, hi3519av100 with run.dtype=int8, ...) or "
                             "ceilings YAML, instead of a device run")
    parser.add_argument("--bandwidth", type=float, nargs="+", default=[1.0, 10.0, 100.0],
                        help="link bandwidths in Mbit/s (default: 1 10 100)")
    parser.add_argument("--rtt", type=float, default=20.0,
                        help="round-trip time in ms (default 20)")
    parser.add_argument("--codec", nargs="+", default=["zlib"],
                        help="codecs to measure: zlib, lzma, int8+zlib, zstd (with the "
                             "zstandard package), or none (default: zlib)")
    parser.add_argument("--depth", type=int, default=0,
                        help="also cut after every module call down to this depth of the "
                             "module tree (layer1 is 1, layer1.0 is 2; default 0: none)")
    parser.add_argument("--every-op", action="store_true",
                        help="also cut after every operator")
    parser.add_argument("--meta", action="store_true",
                        help="analyse on the meta device (any size, no compression)")
    parser.add_argument("--execute", action="store_true",
                        help="also run every stage cut (and --depth cut): the head here, the "
                             "tail in a server, over a link shaped to each --bandwidth "
                             "(root: namespaces and tc; else unshaped loopback), measured "
                             "beside the estimate: executed.csv")
    parser.add_argument("--server", metavar="HOST:PORT", default=None,
                        help="with --execute: the tail on this running stagezoo serve")
    parser.add_argument("--token", default=None,
                        help="with --server: its shared token (default $STAGEZOO_TOKEN)")
    parser.add_argument("--repeats", type=int, default=7,
                        help="with --execute: timed runs per cut, encoding and link (default 7)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default results/splits/<time>_<model>)")
    return parser


def split_config(device: Any, server: Any, overrides: Sequence[str]):
    """The config of the analysis: the runs' (which must agree), or composed from overrides."""
    from omegaconf import OmegaConf

    from profiling.reports import config_differences

    runs = [r for r in (device, server) if r is not None]
    for record in runs:
        if record.status != "ok":
            raise ConfigError(f"{record.directory} is a failed run ({record.error})")
    if runs and overrides:
        raise ConfigError("give either run directories or overrides, not both: the model "
                          "and input come from the runs")
    if len(runs) == 2:
        differences = {k: v for k, v in config_differences(device.config, server.config).items()
                       if k.startswith(_SAME)}
        if differences:
            key, (first, second) = next(iter(differences.items()))
            raise ConfigError(f"the device and server runs differ in {key} ({first} vs "
                              f"{second}); profile the same model and input on both")
    if runs:
        from .composition import check_composed

        config = OmegaConf.create(runs[0].config)
        check_composed(config)  # a hand-edited meta.json holds plain values too
        return config
    return checked_config(list(overrides))  # composed and checked once


def _check_execute(args) -> None:
    """The options of ``--execute`` checked (one line each)."""
    if not args.execute:
        if args.server or args.token:
            raise ConfigError("--server and --token go with --execute")
        return
    if args.meta:
        raise ConfigError("--execute runs the forward for real: drop --meta")
    if args.device_run or args.server_run or args.device_ceilings:
        raise ConfigError("--execute measures both sides itself: give the model as overrides "
                          "(model=... input.size=...), not runs or ceilings")
    if args.every_op:
        raise ConfigError("--execute runs the stage cuts and the --depth cuts, not "
                          "--every-op's")
    if args.repeats < 1:
        raise ConfigError(f"--repeats must be an integer >= 1, got {args.repeats}")
    if args.server:
        from .split_execute import parse_server

        parse_server(args.server)


def _check_arguments(args) -> tuple[str, ...]:
    """Every argument checked before any work; returns the codecs."""
    from profiling.split import check_codecs, check_link

    check_link(args.bandwidth, args.rtt)
    if args.depth < 0:
        raise ConfigError(f"--depth must be an integer >= 0, got {args.depth}")
    if args.device_run is not None and args.device_ceilings is not None:
        raise ConfigError("give --device-run or --device-ceilings, not both: the ceilings "
                          "estimate the device side when no device run exists")
    if args.device_run is not None and args.server_run is None:
        raise ConfigError("give --server-run with --device-run (the same directory twice "
                          "when one machine stands for both)")
    if args.device_ceilings is not None and args.server_run is None:
        raise ConfigError("--device-ceilings needs --server-run for the server side")
    if args.server_run is not None and args.device_run is None and args.device_ceilings is None:
        raise ConfigError("give --device-run or --device-ceilings with --server-run for the "
                          "device side")
    _check_execute(args)
    if args.codec == ["none"]:
        return ()
    return check_codecs(args.codec)


def _run(argv: Optional[Sequence[str]]) -> None:
    args = _parser().parse_intermixed_args(argv)  # overrides after the flags too
    codecs = _check_arguments(args)
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
