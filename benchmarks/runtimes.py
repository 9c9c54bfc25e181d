"""The forward as each runtime runs it, and what profiling it costs.

For resnet18, swiftnet and gmflow at one size, on the CPU, one table in one run: the forward
time of PyTorch eager float32, ONNX Runtime float32 and int8, OpenVINO float32 and int8 (each
the median of the timed forwards of one session alone, its profiler off, with the runtime's
default threading), the share of the runtime's node time that maps to stages, and the
profiling overhead: the forward with the profiler on over the same model in the same runtime
with it off, the median of the per-round ratios of sessions timed in interleaved rounds, with
its 95% interval (the statistics of ``zoo.compare --run``), beside a second unprofiled
session's ratio (the ``control`` column), the measurement's noise floor (target: at most
1.05x). The sessions of that rotation are opened as sessions that take turns, with what each
executor declares they change (``interleaved_settings``: ONNX Runtime's idle threads do not
spin, else those of the session that just ran take the cores from the next one, which is no
cost of profiling).

    python benchmarks/runtimes.py --repeats 20 --out results/runtimes_benchmark.md
    python benchmarks/runtimes.py --models resnet18 --size 64 64 --repeats 10  # small

The exports are cached (``$XDG_CACHE_HOME/stagezoo/exports``), so a second run skips them.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from profiling.reports import cpu_name
from profiling.statistics import interleaved_ms, ratio_entry
from profiling.runtimes import default_cache_folder, profile_runtime
from profiling.runtimes.backends import make_backend
from profiling.runtimes.paired_speed import forward_timer
from profiling.runtimes.parts import tensor_feeds
from zoo.deploy import export_identity
from zoo.tools.composition import compose_config
from zoo.tools.job_description import prepare_job

MODELS = {"resnet18": ["model=torchvision", "model.arch=resnet18", "input.size=[224,224]"],
          "swiftnet": ["model=swiftnet", "input.size=[256,512]"],
          "gmflow": ["model=gmflow", "input.size=[128,128]"]}
VARIANTS = [("onnxruntime", "float32"), ("onnxruntime", "int8"), ("openvino", "float32"),
            ("openvino", "bfloat16"), ("openvino", "int8")]


def _median_ms(run, repeats: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        run()
        times.append((time.perf_counter_ns() - start) / 1e6)
    return float(np.median(times))


def _on_off(profiled, runtime: str, feeds, workdir: Path, rounds: int
            ) -> tuple[float, dict, dict]:
    """Median forward (ms) with the runtime's profiler off, and the paired ratios (with their
    95% intervals, :func:`profiling.statistics.ratio_entry`) of the profiled session
    (``on``) and of a second unprofiled one (``control``, the noise floor of the measurement)
    to it: three sessions of the same model, timed in interleaved rounds (each round starts
    with another, :func:`profiling.statistics.interleaved_ms`), opened as sessions that
    take turns (the executor's ``interleaved_settings``)."""
    sessions = [make_backend(runtime, profiled.run_file, workdir, "cpu", name == "on",
                             profiled.quantised_model, interleaved=True)
                for name in ("off", "on", "control")]
    off, on, control = interleaved_ms([forward_timer(s, feeds) for s in sessions], rounds,
                                      warmup=2)
    return float(np.median(off)), ratio_entry(off, on), ratio_entry(off, control)


def _model_row(name: str, overrides: list[str], repeats: int, root: Path) -> list[dict]:
    job = prepare_job(compose_config([*overrides, "summary=false"]))
    model, inputs = job.model, job.inputs
    with torch.inference_mode():
        eager = _median_ms(lambda: model(*inputs), repeats)
    rows = [{"model": name, "engine": "torch eager", "dtype": "float32", "forward_ms": eager}]
    for runtime, dtype in VARIANTS:
        workdir = root / f"{name}-{runtime}-{dtype}"
        profiled = profile_runtime(model, inputs, runtime=runtime, dtype=dtype,
                                   repeats=repeats, attach=job.attach, workdir=workdir,
                                   cache_folder=default_cache_folder(),
                                   identity=export_identity(job.cfg))
        feeds = tensor_feeds(inputs)
        alone = make_backend(runtime, profiled.run_file, workdir, "cpu", False,
                             profiled.quantised_model)
        forward = _median_ms(lambda: alone.run(feeds), repeats)  # as deployed: one session
        del alone
        _, overhead, control = _on_off(profiled, runtime, feeds, workdir, 3 * repeats)
        rows.append({"model": name, "engine": runtime, "dtype": dtype, "forward_ms": forward,
                     "mapped_share": profiled.deployment.get("mapped_share"),
                     "overhead": overhead, "control": control})
        print(rows[-1], flush=True)
    return rows


def _ratio_text(entry: dict) -> str:
    """``1.045x (1.02-1.07)``: a paired ratio and its interval (none with too few rounds)."""
    if entry["low"] is None:
        return f"{entry['ratio']:.3f}x"
    return f"{entry['ratio']:.3f}x ({entry['low']:.3f}-{entry['high']:.3f})"


def _table(rows: list[dict], machine: str) -> str:
    lines = [f"Machine: {machine}", "",
             "| model | engine | dtype | forward ms | vs torch | time mapped to stages | "
             "profiler overhead (95% interval) | unprofiled control (95% interval) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    eager = {r["model"]: r["forward_ms"] for r in rows if r["engine"] == "torch eager"}
    for r in rows:
        share = "" if r.get("mapped_share") is None else f"{100 * r['mapped_share']:.1f}%"
        overhead, control = (_ratio_text(r[key]) if key in r else "" for key in ("overhead",
                                                                                 "control"))
        lines.append(f"| {r['model']} | {r['engine']} | {r['dtype']} | {r['forward_ms']:.3g} | "
                     f"{eager[r['model']] / r['forward_ms']:.2f}x | {share} | {overhead} | "
                     f"{control} |")
    return "\n".join(lines)



def _with_size(overrides: list[str], size: list[str]) -> list[str]:
    """``overrides`` with the input size of ``size`` (one override) in place of its own."""
    if not size:
        return overrides
    return [o for o in overrides if not o.startswith("input.size=")] + size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--out", type=Path, help="also write the table (markdown) here")
    parser.add_argument("--size", type=int, nargs=2, metavar=("H", "W"),
                        help="every model's input size (default: each model's own above)")
    args = parser.parse_args()
    size = [f"input.size=[{args.size[0]},{args.size[1]}]"] if args.size else []
    machine = (f"{cpu_name()}, {os.cpu_count()} CPUs, "
               f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average "
               f"{os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as root:
        rows = [row for name in args.models
                for row in _model_row(name, _with_size(MODELS[name], size), args.repeats,
                                     Path(root))]
    table = _table(rows, f"{machine}, {os.getloadavg()[0]:.1f} at the end")
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
