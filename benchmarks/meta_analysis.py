"""Time and peak memory of a whole analysis on the meta device (no real compute).

The analysis is what ``device=meta`` runs: build the model on the meta device, one forward with
payload, tensor memory and operation counts, the aggregated stage table, and the layer and
module tables. Targets: GMFlow at 1088x1920 in under 10 s and under 2 GB peak memory
on a 2-core machine, where a real forward needs several GB for the correlation volume.

    python benchmarks/meta_analysis.py [--model gmflow] [--size 1088 1920] [--rounds 3]

Prints the median time over rounds and the process's peak resident memory (imports included),
each as a ratio to its target. A model that is not registered is skipped with a message.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import time

import torch

import zoo
from profiling.collectors.op_counts import OpCounts
from profiling.reports.layers_table import layers_table, render_layers_text
from profiling.reports.modules_table import modules_table, render_modules_text
from profiling.runner.passes import profile_model

TARGET_SECONDS = 10.0
TARGET_PEAK_BYTES = 2 * 1024 ** 3


def analyse(name: str, size: tuple[int, int]) -> dict:
    """One meta analysis of model ``name`` at ``size``; returns what it found."""
    with torch.device("meta"):
        model = zoo.create_model(name).eval()
    inputs = model.example_inputs(1, size, device="meta")
    counter = OpCounts(model)
    attach = model.stage_paths() if hasattr(model, "stage_paths") else {}
    result = profile_model(model, inputs, collectors=["payload", "tensor_memory", counter],
                           warmup=0, repeats=1, attach=attach)
    layers = layers_table(model, counter.modules)
    modules = modules_table(model, counter.modules)
    texts = render_layers_text(layers) + render_modules_text(model, modules)
    return {"stages": len(result.stages), "macs": counter.total.macs,
            "flops": counter.total.flops, "uncounted": counter.uncounted, "text": len(texts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="gmflow")
    parser.add_argument("--size", type=int, nargs=2, default=(1088, 1920), metavar=("H", "W"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.model not in zoo.list_models():
        print(f"skipped: model '{args.model}' is not registered "
              f"(available: {', '.join(zoo.list_models())})")
        return
    size = tuple(args.size)
    seconds = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        found = analyse(args.model, size)
        seconds.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin"
                                                                 else 1024)
    median = statistics.median(seconds)
    print(f"{args.model} at {size[0]}x{size[1]} on meta: {found['stages']} stage calls, "
          f"{found['macs'] / 1e9:,.1f} GMACs, {found['flops'] / 1e9:,.1f} GFLOPs, "
          f"uncounted ops: {found['uncounted'] or 'none'}")
    print(f"time: median {median:.2f} s over {args.rounds} rounds "
          f"(min {min(seconds):.2f} s); ratio to the {TARGET_SECONDS:.0f} s target: "
          f"{median / TARGET_SECONDS:.2f}")
    print(f"peak resident memory: {peak / 1024 ** 3:.2f} GiB (imports included); "
          f"ratio to the 2 GiB target: {peak / TARGET_PEAK_BYTES:.2f}")


if __name__ == "__main__":
    main()
