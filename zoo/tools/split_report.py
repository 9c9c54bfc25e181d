"""The work of ``python -m zoo.split`` once its arguments are checked: analyse, tabulate, plot."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, Optional, Sequence

import pandas as pd
import torch

from profiling import MissingExtra, require_extra
from profiling.counting import Ceilings
from profiling.reports import shorten
from profiling.runner import analyse_cuts
from profiling.split import best_cuts, cut_table, encodings_of, split_latency
from profiling.stages import call_model, int8_view, iter_tensors

from .job_inputs import prepare

__all__ = ["analyse", "cut_lines", "best_lines", "cut_names"]

#: The widest cut name the terminal shows before shortening it in its middle.
_NAME_WIDTH = 36
#: With more candidates than this, the terminal lists only the stage cuts and marked ones.
_MAX_PRINTED = 120


def _megabytes(value: Any, width: int) -> str:
    return f"{value / 1e6:>{width}.3f}" if pd.notna(value) else f"{'-':>{width}}"


def cut_names(names: Sequence[str], widest: int = _NAME_WIDTH) -> dict[str, str]:
    """Each cut's name as the terminal shows it: whole where it fits ``widest`` characters,
    else shortened in its middle (its call index stays), and whole again wherever shortening
    would make two cuts look alike."""
    shown = {name: shorten(name, widest) for name in names}
    if len(set(shown.values())) < len(shown):
        return {name: name for name in names}
    return shown


def cut_lines(cuts: pd.DataFrame, latency: Optional[pd.DataFrame]) -> list[str]:
    """The terminal table of the cuts: bytes (MB) per encoding, device GFLOPs, the marks
    (``*`` fewest bytes, ``P`` Pareto front) and, with a latency table, the sides' times."""
    encodings = encodings_of(cuts)
    shown = cuts
    if len(cuts) > _MAX_PRINTED:
        shown = cuts[~cuts["kind"].isin(["op", "module"]) | cuts["pareto"] | cuts["min_cut"]]
    times = latency.drop_duplicates("cut").set_index("cut") if latency is not None else None
    widths = {e: max(11, len(e) + 5) for e in encodings}
    names = cut_names(list(shown["cut"]))
    width = max(map(len, names.values()), default=3) + 1
    header = (f"{'cut':<{width}}{'kind':<8}{'tensors':>8}" + "".join(f"{e + ' MB':>{widths[e]}}"
                                                    for e in encodings)
              + f"{'dev GFLOP':>11}  " + (f"{'device ms':>10}{'server ms':>10}"
                                          if times is not None else ""))
    lines = [header]
    for _, row in shown.iterrows():
        marks = ("*" if row["min_cut"] else " ") + ("P" if row["pareto"] else " ")
        line = (f"{names[row['cut']]:<{width}}{row['kind']:<8}{row['tensors']:>8}"
                + "".join(_megabytes(row[f"{e}_bytes"], widths[e]) for e in encodings)
                + f"{row['device_flops'] / 1e9:>11.3f}{marks}")
        if times is not None and row["cut"] in times.index:
            line += (f"{times.loc[row['cut'], 'device_ms']:>10.2f}"
                     f"{times.loc[row['cut'], 'server_ms']:>10.2f}")
        lines.append(line)
    if len(shown) < len(cuts):
        lines.append(f"({len(cuts) - len(shown)} more candidates in cuts.csv)")
    lines += ["* fewest bytes inside the forward (work done on both sides)",
              "P: Pareto front of raw bytes against the FLOPs done on the device"]
    output = _output_note(cuts)
    return lines + ([output] if output else [])


def _output_note(cuts: pd.DataFrame) -> Optional[str]:
    """Why the fewest bytes are the network's output, where they are: no cut inside sends
    fewer, so the whole forward on the device sends the least."""
    output = cuts[cuts["kind"] == "output"]["raw_bytes"]
    inside = cuts[cuts["min_cut"]]["raw_bytes"]
    if output.empty or (not inside.empty and inside.iloc[0] < output.iloc[0]):
        return None
    return (f"the network's output ({output.iloc[0]:,} bytes) is no larger than any cut inside "
            f"it: the whole forward on the device sends the fewest bytes")


def best_lines(best: pd.DataFrame) -> list[str]:
    """The terminal table of the best cut per encoding and bandwidth."""
    side = best["device_side"].iloc[0]
    names = cut_names(list(best["cut"].unique()))
    width = max(map(len, names.values()), default=3) + 1
    lines = ["", f"best cut per bandwidth (RTT {best['rtt_ms'].iloc[0]:g} ms; device side "
                 f"{side}):",
             f"{'encoding':<12}{'Mbit/s':>10}  {'cut':<{width}}{'latency ms':>12}{'sent MB':>10}"]
    for _, row in best.iterrows():
        lines.append(f"{row['encoding']:<12}{row['bandwidth_mbit']:>10g}  "
                     f"{names[row['cut']]:<{width}}"
                     f"{row['latency_ms']:>12.2f}{row['bytes'] / 1e6:>10.3f}")
    if side != "measured":
        lines.append("the device side is a roofline bound of the ceilings (max(FLOPs / peak, "
                     "bytes / bandwidth) per operator), not a measurement")
    return lines


def _plots(analysis, cuts: pd.DataFrame, latency: Optional[pd.DataFrame], title: str,
           executed: Optional[pd.DataFrame] = None) -> tuple[dict[str, bytes], list[str]]:
    try:
        require_extra("matplotlib", "plots", "the split plots")
    except MissingExtra as missing:
        return {}, [f"note: no plots: {missing}"]
    from profiling.reports import drawn_latency_cuts, plot_split_latency, plot_split_timeline

    files = {"split_timeline.png": plot_split_timeline(analysis.timeline, cuts,
                                                       analysis.stage_spans, title)}
    if latency is not None:
        files["split_latency.png"] = plot_split_latency(
            latency[latency["cut"].isin(drawn_latency_cuts(cuts))])
    if executed is not None and executed["shaped"].any():
        from profiling.reports import plot_executed_latency

        files["split_latency.png"] = plot_executed_latency(executed[executed["shaped"]])
    return files, []


def read_sides(args) -> tuple[Optional[Ceilings], Any, Any]:
    """The device's ceilings and the device and server runs that ``args`` name, each read and
    checked before any work (``None`` where not given)."""
    from profiling.counting import load_ceilings
    from profiling.reports import read_run

    ceilings = load_ceilings(args.device_ceilings) if args.device_ceilings else None
    device_run = read_run(args.device_run) if args.device_run else None
    server_run = read_run(args.server_run) if args.server_run else None
    return ceilings, device_run, server_run


def analyse(cfg, args, codecs: tuple[str, ...], ceilings: Optional[Ceilings],
            device_run: Any, server_run: Any) -> tuple[dict[str, Any], list[str]]:
    """Run the analysis of ``cfg`` as the parsed ``args`` ask; the files and terminal lines."""
    device = torch.device("meta" if args.meta else "cpu")
    model, inputs, attach, notes = prepare(cfg, device)
    # run.dtype=int8: the analytical int8 view (one byte per element, biases int32)
    view = int8_view(model) if cfg.run.get("dtype") == "int8" else nullcontext()
    reference = None
    if getattr(args, "execute", False):  # the steady forward: caches filled, as served
        with torch.inference_mode():
            reference = [t.clone() for t in iter_tensors(call_model(model, inputs))]
    with view:
        analysis = analyse_cuts(model, inputs, attach=attach,
                                codecs=() if args.meta else codecs, depth=args.depth,
                                every_op=args.every_op)
    dtype = str(cfg.get("roofline", {}).get("dtype") or cfg.run.get("dtype") or "float32")
    cuts = cut_table(analysis, ceilings, dtype)
    files: dict[str, Any] = {"cuts.csv": cuts}
    lines = [f"note: {note}" for note in notes]
    latency = None
    if server_run is not None:
        latency = split_latency(cuts, device_run.stages if device_run is not None else None,
                                server_run.stages, args.bandwidth, args.rtt)
        best = best_cuts(latency)
        files.update({"latency.csv": latency, "best.csv": best})
        lines += cut_lines(cuts, latency) + best_lines(best)
    else:
        lines += cut_lines(cuts, None)
    executed = None
    if reference is not None:
        from .split_execute import execute

        executed, executed_lines = execute(cfg, args, analysis, model, inputs, attach, codecs,
                                           reference)
        files["executed.csv"] = executed
        lines += executed_lines
    shapes = ", ".join(str(list(t.shape)) for t in iter_tensors(inputs))
    title = f"{cfg.model.name}: bytes alive along the forward, input {shapes} on {device.type}"
    plots, plot_notes = _plots(analysis, cuts, latency, title, executed)
    files.update(plots)
    return files, lines + plot_notes
