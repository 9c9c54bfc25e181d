"""The arguments of ``python -m zoo.split``: its parser, every check made before any work,
and the config of the analysis (the runs' own, or composed from overrides)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ..options import ConfigError
from .cli import ArgumentParser
from .composition import checked_config

__all__ = ["split_parser", "check_arguments", "split_config", "parse_server"]

_SAME = ("model.", "input.", "run.seed")


def parse_server(value: str) -> tuple[str, int]:
    """``HOST:PORT`` as ``(host, port)``, or a one-line ConfigError."""
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--server must be HOST:PORT (e.g. 192.168.1.5:5577), got {value!r}")
    return host.strip("[]"), int(port)


def split_parser() -> ArgumentParser:
    """The parser of ``python -m zoo.split`` (overrides may follow the flags)."""
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
                        help="round-trip time in ms (default 20); with --execute, added with "
                             "netem where the kernel has it, else the link's own is measured")
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
        parse_server(args.server)


def check_arguments(args) -> tuple[str, ...]:
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


