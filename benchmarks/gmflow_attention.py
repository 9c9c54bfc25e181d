"""GMFlow with torch's fused attention (``attention_impl="sdpa"``) against the same model with
explicit matmul-softmax-matmul attention (``"math"``, as the official code), side by side.

Both models share their weights and inputs; their forwards alternate, so both see the same
machine state. Prints the median time per forward of each and the ratio math / sdpa (above 1:
SDPA is faster), from the medians and from the best runs (the better estimate on a busy
machine). Targets: >= 1.2x on a GPU at 448x1024, >= 1.0x (no slower) on the CPU.

    python benchmarks/gmflow_attention.py                 # CPU at 128x192, then CUDA if present
    python benchmarks/gmflow_attention.py --device cuda --size 448 1024 --repeats 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import zoo  # noqa: E402

DEFAULT_SIZES = {"cpu": (128, 192), "cuda": (448, 1024)}
DEFAULT_REPEATS = {"cpu": 5, "cuda": 20}


def _timed_forward(model: torch.nn.Module, inputs: tuple, device: str) -> float:
    """One forward pass, in milliseconds."""
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        model(*inputs)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)
    start_s = time.perf_counter()
    model(*inputs)
    return (time.perf_counter() - start_s) * 1e3


def _peak_memory_mb(model: torch.nn.Module, inputs: tuple) -> float:
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    model(*inputs)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() / 2**20


def compare(model_name: str, device: str, size: tuple[int, int], batch: int, warmup: int,
            repeats: int) -> float:
    """Time both implementations, print one line per device, and return math / sdpa."""
    torch.manual_seed(0)
    models = {impl: zoo.create_model(model_name, attention_impl=impl).eval().to(device)
              for impl in ("sdpa", "math")}
    models["math"].load_state_dict(models["sdpa"].state_dict())
    inputs = models["sdpa"].example_inputs(batch, size, device=device)
    times: dict[str, list[float]] = {impl: [] for impl in models}
    with torch.inference_mode():
        for _ in range(warmup):
            for model in models.values():
                model(*inputs)
        for _ in range(repeats):
            for impl, model in models.items():
                times[impl].append(_timed_forward(model, inputs, device))
        memory = ({impl: _peak_memory_mb(model, inputs) for impl, model in models.items()}
                  if device == "cuda" else {})
    median = {impl: statistics.median(values) for impl, values in times.items()}
    best = {impl: min(values) for impl, values in times.items()}
    ratio = median["math"] / median["sdpa"]
    name = (torch.cuda.get_device_name() if device == "cuda"
            else f"{torch.get_num_threads()} threads")
    line = (f"{model_name} {device} ({name}) {batch}x3x{size[0]}x{size[1]}, {repeats} repeats: "
            f"sdpa {median['sdpa']:.1f} ms (best {best['sdpa']:.1f}), math {median['math']:.1f} "
            f"ms (best {best['math']:.1f}); math/sdpa = {ratio:.2f}x (best "
            f"{best['math'] / best['sdpa']:.2f}x)")
    if memory:
        line += f"; peak memory sdpa {memory['sdpa']:.0f} MiB, math {memory['math']:.0f} MiB"
    print(line, flush=True)
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gmflow", choices=["gmflow", "gmflow_refine"])
    parser.add_argument("--device", choices=["cpu", "cuda"], action="append",
                        help="repeatable; default: cpu, and cuda when available")
    parser.add_argument("--size", type=int, nargs=2, metavar=("H", "W"),
                        help="default: 128 192 on the CPU, 448 1024 on a GPU")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--repeats", type=int, help="default: 5 on the CPU, 20 on a GPU")
    parser.add_argument("--threads", type=int, help="CPU threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = args.device or ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        size = tuple(args.size) if args.size else DEFAULT_SIZES[device]
        compare(args.model, device, size, args.batch, args.warmup,
                args.repeats or DEFAULT_REPEATS[device])


if __name__ == "__main__":
    main()
