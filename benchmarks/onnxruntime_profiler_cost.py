"""Where ONNX Runtime's profiled forward spends its extra time (issue 33).

The profiling overhead that ``benchmarks/runtimes.py`` reports for ONNX Runtime (1.05x for
resnet18 in float32, 1.13x in int8) is taken apart here, every figure a paired ratio of
sessions of the same model timed in interleaved rounds (``interleaved_ms``, ``ratio_entry``),
every session opened as ONNX Runtime's executor opens sessions that take turns:

- ``stagezoo profiled``: the executor's own profiled session, its ``run`` timed as the paired
  speed figures time it: anything of ours inside the timed span shows here and not in
  ``profiler alone``;
- ``profiler alone``: a bare ``InferenceSession`` with ``enable_profiling`` and nothing else;
- ``optimised graph saved``: unprofiled, but saving its optimised graph as the profiled
  session does (``optimized_model_filepath``);
- ``control``: a second bare unprofiled session (the noise floor);
- ``1 thread``: the profiler alone against unprofiled, both with one intra-op thread (no
  thread pool, so none of the pool's per-node scheduling statistics).

Each ratio is over a bare unprofiled session (of the same thread count); ``extra ms`` is the
median per-round difference, ``per node`` that over the kernels one profiled run records.
A chain of ``Sin`` nodes on 256 numbers (a kernel of well under a microsecond) gives the
profiler's fixed cost per node; resnet18 at 224x224, exported and quantised (QDQ) as a
runtime run does, shows how much of its overhead that cost explains.

    python benchmarks/onnxruntime_profiler_cost.py --rounds 60 --clock cpu
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from profiling.reports.metadata import device_description
from profiling.runtimes.export import export_onnx
from profiling.runtimes.onnxruntime_backend import (OnnxRuntimeBackend, OnnxRuntimeExecutor,
                                                    quantize_onnxruntime)
from profiling.runtimes.quiet import quiet
from profiling.statistics import interleaved_ms, ratio_entry
from profiling.statistics.intervals import median_interval

#: The configuration entries every session here applies (those of sessions taking turns).
TAKING_TURNS = dict(OnnxRuntimeExecutor.interleaved_settings)


def _session(path: Path, folder: Path, name: str, *, profile: bool = False,
             save_optimised: bool = False, threads: int = 0):
    """A bare ONNX Runtime CPU session of ``path`` with only what is asked switched on."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    for key, value in TAKING_TURNS.items():
        options.add_session_config_entry(key, value)
    options.intra_op_num_threads = threads
    if profile:
        options.enable_profiling = True
        options.profile_file_prefix = str(folder / f"{name}.profile")
    if save_optimised:
        options.optimized_model_filepath = str(folder / f"{name}.optimised.onnx")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


#: ``--clock``: the wall clock, or the CPU time of the whole process (every thread), which a
#: loaded machine's other jobs disturb far less (they take cores, not this process's work).
CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.process_time_ns}


def _timer(run: Callable[[], object], clock: Callable[[], int]) -> Callable[[], float]:
    """A timer of one ``run()`` in ms by ``clock`` (integer nanoseconds)."""
    def timed() -> float:
        start = clock()
        run()
        return (clock() - start) / 1e6
    return timed


def _kernels_per_run(profile_file: str) -> tuple[int, float]:
    """How many ``_kernel_time`` events one profiled run records (the median over runs), and
    the median over runs of their durations added up (ms)."""
    events = json.loads(Path(profile_file).read_text())
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "model_run")
    counts, sums = [0] * len(runs), [0.0] * len(runs)
    for event in events:
        if event.get("cat") != "Node" or not event.get("name", "").endswith("_kernel_time"):
            continue
        for index, (start, stop) in enumerate(runs):
            if start <= event["ts"] <= stop:
                counts[index] += 1
                sums[index] += event["dur"] / 1e3
                break
    return int(np.median(counts)), float(np.median(sums))


def _difference_ms(plain: list[float], other: list[float]) -> tuple[float, float, float]:
    """The median per-round difference ``other - plain`` (ms) and its 95% interval."""
    differences = np.asarray(other) - np.asarray(plain)
    low, high = median_interval(differences, 0.95)
    return float(np.median(differences)), float(low), float(high)


def measure(path: Path, feeds: list[np.ndarray], rounds: int, folder: Path,
            clock: Callable[[], int]) -> list[dict]:
    """One row per variant of the model at ``path`` (see the module's docstring)."""
    ours = OnnxRuntimeBackend(path, folder, profile=True, settings=TAKING_TURNS)
    by_name = dict(zip(ours.input_names, feeds))
    sessions = {"plain": _session(path, folder, "plain"),
                "control": _session(path, folder, "control"),
                "profiler alone": _session(path, folder, "alone", profile=True),
                "optimised graph saved": _session(path, folder, "saved", save_optimised=True),
                "plain, 1 thread": _session(path, folder, "plain1", threads=1),
                "profiler alone, 1 thread": _session(path, folder, "alone1", profile=True,
                                                     threads=1)}
    timers = {name: _timer(lambda s=session: s.run(None, by_name), clock)
              for name, session in sessions.items()}
    timers["stagezoo profiled"] = _timer(lambda: ours.run(feeds), clock)  # as paired figures
    times = dict(zip(timers, interleaved_ms(list(timers.values()), rounds, warmup=3)))
    kernels = {"stagezoo profiled": _kernels_per_run(ours.session.end_profiling()),
               "profiler alone": _kernels_per_run(sessions["profiler alone"].end_profiling()),
               "profiler alone, 1 thread": _kernels_per_run(
                   sessions["profiler alone, 1 thread"].end_profiling())}
    rows = []
    for name in ("control", "stagezoo profiled", "profiler alone", "optimised graph saved",
                 "profiler alone, 1 thread"):
        base = times["plain, 1 thread" if "1 thread" in name else "plain"]
        extra, low, high = _difference_ms(base, times[name])
        count, kernel_ms = kernels.get(name, (0, float("nan")))
        rows.append({"variant": name, "plain_ms": float(np.median(base)),
                     "ratio": ratio_entry(base, times[name]), "extra_ms": (extra, low, high),
                     "kernels": count, "kernel_ms": kernel_ms})
    return rows


def _chain(nodes: int, folder: Path) -> Path:
    """An ONNX graph of ``nodes`` ``Sin`` nodes one after the other on a [1, 256] input."""
    import onnx
    from onnx import TensorProto, helper

    values = ["x", *[f"v{i}" for i in range(nodes)]]
    graph = helper.make_graph(
        [helper.make_node("Sin", [values[i]], [values[i + 1]], name=f"sin{i}")
         for i in range(nodes)], "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
        [helper.make_tensor_value_info(values[-1], TensorProto.FLOAT, [1, 256])])
    path = folder / f"chain{nodes}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


def _resnet18(folder: Path, int8: bool, size: int) -> tuple[Path, list[np.ndarray]]:
    """resnet18 (random weights) exported for a ``size`` x ``size`` input, quantised for
    ``int8``, and its input."""
    import torchvision

    torch.manual_seed(0)
    model, x = torchvision.models.resnet18().eval(), torch.randn(1, 3, size, size)
    exported = export_onnx(model, (x,), folder / f"resnet18_{size}.onnx").path
    if not int8:
        return exported, [x.numpy()]
    target = folder / f"resnet18_{size}.int8.onnx"
    calibration = [[torch.randn(1, 3, size, size).numpy()] for _ in range(4)]
    with quiet():
        quantize_onnxruntime(exported, target, ["x"], calibration)
    return target, [x.numpy()]


def _table(results: dict[str, list[dict]], machine: str) -> str:
    lines = [f"Machine: {machine}", "",
             "| model | variant | unprofiled ms | ratio (95% interval) | extra ms (95% interval)"
             " | kernels per run | extra per kernel | kernel events ms (wall) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for model, rows in results.items():
        for row in rows:
            ratio, (extra, low, high) = row["ratio"], row["extra_ms"]
            per_kernel = f"{1e3 * extra / row['kernels']:.1f} us" if row["kernels"] else ""
            kernel_ms = f"{row['kernel_ms']:.3g}" if row["kernels"] else ""
            lines.append(f"| {model} | {row['variant']} | {row['plain_ms']:.3g} | "
                         f"{ratio['ratio']:.3f}x ({ratio['low']:.3f}-{ratio['high']:.3f}) | "
                         f"{extra:+.3f} ({low:+.3f} to {high:+.3f}) | "
                         f"{row['kernels'] or ''} | {per_kernel} | {kernel_ms} |")
    return "\n".join(lines)


def main() -> None:
    import onnxruntime

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--chains", type=int, nargs="*", default=[100, 400],
                        help="the lengths of the Sin chains")
    parser.add_argument("--sizes", type=int, nargs="*", default=[224],
                        help="resnet18's input sizes (the same nodes, less work per node)")
    parser.add_argument("--clock", choices=list(CLOCKS), default="wall")
    args = parser.parse_args()
    torch.set_num_threads(1)
    machine = (f"{device_description('cpu')}, {os.cpu_count()} CPUs, "
               f"onnxruntime {onnxruntime.__version__}, {args.clock} clock, load average "
               f"{os.getloadavg()[0]:.1f} at the start")
    results = {}
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root)
        for nodes in args.chains:
            results[f"Sin chain x{nodes}"] = measure(
                _chain(nodes, folder), [np.ones((1, 256), np.float32)], args.rounds, folder,
                CLOCKS[args.clock])
        for size in args.sizes:
            for int8 in (False, True):
                path, feeds = _resnet18(folder, int8, size)
                results[f"resnet18 {size}x{size} {'int8' if int8 else 'float32'}"] = measure(
                    path, feeds, args.rounds, folder, CLOCKS[args.clock])
            print(_table(results, machine), flush=True)  # so far
    print(_table(results, f"{machine}, {os.getloadavg()[0]:.1f} at the end"))


if __name__ == "__main__":
    main()
