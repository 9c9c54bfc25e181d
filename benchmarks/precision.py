"""Forward time and output payload as deployed, as ratios to float32, side by side in one process.

For each zoo model at its default input size, four variants of the same weights and inputs are
built as ``python -m zoo.profile`` builds them (:func:`zoo.tools.job_inputs.prepare`, which applies
:class:`zoo.deploy.Deployment`): ``float32``, ``bfloat16``, ``float16`` and ``channels_last``
(float32 in ``torch.channels_last``). Every round runs one forward of each variant in turn
(interleaved, so a change in the machine's load touches them all), after ``--warmup`` untimed
rounds. Printed per model: the float32 median forward time, and for each variant the median
over rounds of the per-round time ratio to float32, and its output payload (bytes of every
output tensor) as a ratio to float32's.

    python benchmarks/precision.py [--rounds 5] [--warmup 1] [--models swiftnet gmflow]
        [--device cpu|cuda] [--size H W]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from profiling.stages.payload import payload_bytes, walk_payload
from profiling.reports.metadata import device_description
from profiling.stages import call_model
from zoo.tools.job_inputs import prepare
from zoo.tools.composition import compose_config

MODELS = ("faster_rcnn", "gmflow", "gmflow_refine", "gmflow_unet", "swiftnet", "swin_unet")
VARIANTS = {"float32": [], "bfloat16": ["run.dtype=bfloat16"],
            "float16": ["run.dtype=float16"], "channels_last": ["run.channels_last=true"]}


def _forward_ms(model: torch.nn.Module, inputs: Any, device: torch.device) -> tuple[float, Any]:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter_ns()
    output = call_model(model, inputs)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter_ns() - start) / 1e6, output


def measure(name: str, device: torch.device, rounds: int, warmup: int,
            size: list[int] | None = None) -> dict[str, dict[str, float]]:
    """``{variant: {"ms": median forward ms, "time_ratio": ..., "payload_ratio": ...}}``."""
    extra = [f"input.size=[{size[0]},{size[1]}]"] if size else []
    built = {}
    for variant, overrides in VARIANTS.items():
        cfg = compose_config([f"model={name}", f"device={device.type}", *extra, *overrides])
        model, inputs, _, _ = prepare(cfg, device)
        built[variant] = (model, inputs)
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    payload: dict[str, int] = {}
    with torch.inference_mode():
        for index in range(warmup + rounds):
            for variant, (model, inputs) in built.items():
                ms, output = _forward_ms(model, inputs, device)
                payload[variant] = payload_bytes(walk_payload(output))
                if index >= warmup:
                    times[variant].append(ms)
    reference = times["float32"]
    return {variant: {"ms": statistics.median(values),
                      "time_ratio": statistics.median(v / r for v, r in zip(values, reference)),
                      "payload_ratio": payload[variant] / payload["float32"]}
            for variant, values in times.items()}


def format_table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """A Markdown table: one row per model, time and payload ratios per variant."""
    variants = [v for v in VARIANTS if v != "float32"]
    header = ["model", "float32 ms"] + [f"{v} time" for v in variants] + \
        [f"{v} payload" for v in variants]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, result in results.items():
        cells = [name, f"{result['float32']['ms']:.0f}"]
        cells += [f"{result[v]['time_ratio']:.2f}" for v in variants]
        cells += [f"{result[v]['payload_ratio']:.2f}" for v in variants]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size", type=int, nargs=2, default=None,
                        help="H W for every model (default: each model's default size)")
    args = parser.parse_args()
    device = torch.device(args.device)
    print(f"device: {device_description(str(device))}, threads: {torch.get_num_threads()}, "
          f"{args.rounds} rounds after {args.warmup} warm-up, torch {torch.__version__}")
    results = {}
    for name in args.models:
        results[name] = measure(name, device, args.rounds, args.warmup, args.size)
        print(f"{name}: " + ", ".join(f"{v} {r['time_ratio']:.2f}x"
                                       for v, r in results[name].items()), flush=True)
    print(format_table(results))


if __name__ == "__main__":
    main()
