"""``python -m zoo.split``: where to split a model between an edge device and a server.

Usage::

    python -m zoo.split --device-run RUN_ON_EDGE --server-run RUN_ON_SERVER \\
        --bandwidth 1 10 100 --rtt 20 [--codec zlib|lzma|none] [--meta] [--out DIR]
    python -m zoo.split model=swiftnet input.size=[512,1024]      # bytes per cut only

The model and input come from the device run's ``meta.json`` (the server run must match), or
from Hydra overrides as for ``python -m zoo.profile``. The cuts are analysed in one forward on
the CPU, with real data so that the codec measures real compression (``--meta``: on the meta
device, in seconds at any size, without compression). The output folder gets ``cuts.csv``
(bytes per cut), and with both runs ``latency.csv`` (every cut, encoding and bandwidth),
``best.csv`` (the best cut per encoding and bandwidth) and ``split_latency.png``. The latency
model is that of :mod:`profiling.split`.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path
from typing import Any, Optional, Sequence

import pandas as pd
import torch
from omegaconf import OmegaConf

from profiling.errors import ProfilingError
from profiling.reports.compare import config_differences
from profiling.reports.files import write_files
from profiling.reports.runs import RunRecord, read_run
from profiling.split import analyse_cuts, best_cuts, cut_table, split_latency

from .app import prepare
from .cli import check_overrides, compose_config, fail

__all__ = ["main", "split_config"]

_SAME = ("model.", "input.", "run.seed")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m zoo.split",
                                     description="Split-point analysis: bytes alive across "
                                                 "each cut, and end-to-end latency.")
    parser.add_argument("overrides", nargs="*",
                        help="Hydra overrides (model=..., input.size=[H,W]) when no run is given")
    parser.add_argument("--device-run", type=Path, help="run directory on the edge device")
    parser.add_argument("--server-run", type=Path, help="run directory on the server")
    parser.add_argument("--bandwidth", type=float, nargs="+", default=[1.0, 10.0, 100.0],
                        help="link bandwidths in Mbit/s (default: 1 10 100)")
    parser.add_argument("--rtt", type=float, default=20.0, help="round-trip time in ms "
                                                                "(default 20)")
    parser.add_argument("--codec", default="zlib", choices=["zlib", "lzma", "none"],
                        help="codec of the compressed sizes (default zlib)")
    parser.add_argument("--meta", action="store_true",
                        help="analyse on the meta device (any size, no compression)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default results/splits/<time>_<model>)")
    return parser


def split_config(device: Optional[RunRecord], server: Optional[RunRecord],
                 overrides: Sequence[str]):
    """The config of the analysis: the runs' (which must agree), or composed from overrides."""
    runs = [r for r in (device, server) if r is not None]
    for record in runs:
        if record.status != "ok":
            raise ProfilingError(f"{record.directory} is a failed run ({record.error})")
    if runs and overrides:
        raise ProfilingError("give either run directories or overrides, not both: the model "
                             "and input come from the runs")
    if len(runs) == 2:
        differences = {k: v for k, v in config_differences(device.config, server.config).items()
                       if k.startswith(_SAME)}
        if differences:
            key, (first, second) = next(iter(differences.items()))
            raise ProfilingError(f"the device and server runs differ in {key} ({first} vs "
                                 f"{second}); profile the same model and input on both")
    if runs:
        return OmegaConf.create(runs[0].config)
    problem = check_overrides(list(overrides))
    if problem:
        raise ProfilingError(problem)
    return compose_config(list(overrides))


def _cut_lines(cuts: pd.DataFrame, latency: Optional[pd.DataFrame]) -> list[str]:
    lines = [f"{'cut':<36}{'tensors':>8}{'raw MB':>10}{'fp16 MB':>10}{'int8 MB':>10}"
             f"{'comp. MB':>10}" + (f"{'device ms':>11}{'server ms':>11}"
                                    if latency is not None else "")]
    times = (latency.drop_duplicates("cut").set_index("cut") if latency is not None else None)
    for _, row in cuts.iterrows():
        compressed = row["compressed_bytes"]
        line = (f"{row['cut'][:35]:<36}{row['tensors']:>8}{row['raw_bytes'] / 1e6:>10.3f}"
                f"{row['fp16_bytes'] / 1e6:>10.3f}{row['int8_bytes'] / 1e6:>10.3f}"
                + (f"{compressed / 1e6:>10.3f}" if pd.notna(compressed) else f"{'-':>10}"))
        if times is not None:
            line += (f"{times.loc[row['cut'], 'device_ms']:>11.2f}"
                     f"{times.loc[row['cut'], 'server_ms']:>11.2f}")
        lines.append(line)
    return lines


def _best_lines(best: pd.DataFrame) -> list[str]:
    lines = ["", f"best cut per bandwidth (RTT {best['rtt_ms'].iloc[0]:g} ms):",
             f"{'encoding':<12}{'Mbit/s':>10}  {'cut':<36}{'latency ms':>12}{'sent MB':>10}"]
    for _, row in best.iterrows():
        lines.append(f"{row['encoding']:<12}{row['bandwidth_mbit']:>10g}  {row['cut'][:35]:<36}"
                     f"{row['latency_ms']:>12.2f}{row['bytes'] / 1e6:>10.3f}")
    return lines


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.split``."""
    args = _parser().parse_args(argv)
    try:
        device_run = read_run(args.device_run) if args.device_run else None
        server_run = read_run(args.server_run) if args.server_run else None
        if (device_run is None) != (server_run is None):
            raise ProfilingError("give both --device-run and --server-run (the same directory "
                                 "twice when one machine stands for both)")
        cfg = split_config(device_run, server_run, args.overrides)
        files, lines = _analyse(cfg, args, device_run, server_run)
        out = args.out or Path("results/splits") / (
            f"{datetime.datetime.now():%Y-%m-%d_%H-%M-%S}_{cfg.model.name}")
        write_files(out, files)
    except ProfilingError as error:
        fail(str(error))
    print("\n".join(lines))
    print(f"split analysis: {Path(out).resolve()}")


def _analyse(cfg, args, device_run: Optional[RunRecord], server_run: Optional[RunRecord]
             ) -> tuple[dict[str, Any], list[str]]:
    device = torch.device("meta" if args.meta else "cpu")
    model, inputs, attach, notes = prepare(cfg, device)
    codec = None if args.meta or args.codec == "none" else args.codec
    cuts = cut_table(analyse_cuts(model, inputs, attach=attach, codec=codec), codec)
    files: dict[str, Any] = {"cuts.csv": cuts}
    latency = None
    lines = [f"note: {note}" for note in notes]
    if device_run is not None:
        latency = split_latency(cuts, device_run.stages, server_run.stages, args.bandwidth,
                                args.rtt)
        best = best_cuts(latency)
        files.update({"latency.csv": latency, "best.csv": best})
        lines += _cut_lines(cuts, latency) + _best_lines(best)
        try:
            from profiling.reports.plots import plot_split_latency
            files["split_latency.png"] = plot_split_latency(latency)
        except ImportError:
            lines.append("note: no plot (matplotlib is not installed)")
    else:
        lines += _cut_lines(cuts, None)
    return files, lines


if __name__ == "__main__":
    main()
