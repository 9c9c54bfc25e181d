"""The profiler's overhead, as ratios to the plain forward, measured side by side.

Three cases run in turn in every round, in one process, so that they see the same machine:

* ``plain``: torchvision's own Faster R-CNN (no stage markers at all), same weights;
* ``inactive``: the zoo's staged model with no profiling session open;
* ``timed``: the staged model inside a session that times every stage (CPU perf counters;
  also CUDA events on ``--device cuda``).

The ratios are medians over rounds of the per-round ratios (paired runs). Targets:
``timed / plain <= 1.03`` and ``inactive / plain <= 1.005``.

    python benchmarks/overhead.py --rounds 15 --size 224 [--device cuda] [--batch 8]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch

import zoo
from profiling import Session, stage
from profiling.collectors import make_collectors
from profiling.reports.metadata import device_description
from zoo.models.networks.faster_rcnn.staged_parts import unstage_parts
from torchvision.models.detection.faster_rcnn import FasterRCNN


def _forward_ms(model, inputs, device, session=None) -> float:
    """One forward's host time until the device is done, as the runner measures it: with a
    session, the clock stops before the session reads its CUDA events (after the forward)."""
    def finish() -> int:
        if device.type == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter_ns()

    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter_ns()
    if session is None:
        model(*inputs)
        stop = finish()
    else:
        with session.forward():
            model(*inputs)
            stop = finish()
    return (stop - start) / 1e6


def _timed_forward_ms(model, inputs, device, collectors) -> float:
    with Session(collectors) as session:
        return _forward_ms(model, inputs, device, session)


def _marker_cost_ns(collectors, calls: int = 1_000, forwards: int = 100) -> float:
    """Nanoseconds per ``with stage(...)`` block, with the given collectors (None: inactive):
    the best of ``forwards`` forwards of ``calls`` blocks each (a forward of a real model has
    tens to hundreds; a single forward of 100,000 would mostly time list growth and garbage
    collection)."""
    def loop():
        start = time.perf_counter_ns()
        for _ in range(calls):
            with stage("s"):
                pass
        return (time.perf_counter_ns() - start) / calls
    if collectors is None:
        return min(loop() for _ in range(forwards))
    with Session(collectors) as session:
        best = float("inf")
        for _ in range(forwards):
            with session.forward():
                best = min(best, loop())
            session.forwards.clear()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=1,
                        help="images per forward (on a GPU, a larger batch keeps it busy)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    device = torch.device(args.device)

    torch.manual_seed(0)
    staged = zoo.create_model("faster_rcnn").to(device)
    plain = unstage_parts(copy.deepcopy(staged))
    plain.__class__ = FasterRCNN
    inputs = staged.example_inputs(args.batch, (args.size, args.size),
                                   generator=torch.Generator().manual_seed(0), device=device)
    timers = ["cpu_time"] + (["cuda_time"] if device.type == "cuda" else [])
    collectors = make_collectors(timers)
    cases = {
        "plain": lambda: _forward_ms(plain, inputs, device),
        "inactive": lambda: _forward_ms(staged, inputs, device),
        "timed": lambda: _timed_forward_ms(staged, inputs, device, collectors),
    }
    times = {case: [] for case in cases}
    order = list(cases)
    with torch.inference_mode():
        for round_index in range(args.warmup + args.rounds):
            order = order[1:] + order[:1]  # rotate, so no case always runs first
            samples = {case: cases[case]() for case in order}
            if round_index >= args.warmup:
                for case, value in samples.items():
                    times[case].append(value)
    ratio = {case: statistics.median(t / p for t, p in zip(times[case], times["plain"]))
             for case in ("inactive", "timed")}
    print(f"device: {device_description(str(device))}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, input {args.batch}x{args.size}x{args.size}, "
          f"{args.rounds} paired rounds")
    for case in ("plain", "inactive", "timed"):
        print(f"{case:>9}: median {statistics.median(times[case]):9.2f} ms")
    print(f"inactive / plain = {ratio['inactive']:.4f}  (target <= 1.005)")
    print(f"   timed / plain = {ratio['timed']:.4f}  (target <= 1.03)")
    with torch.inference_mode(), Session([]) as counter:  # the markers of one forward
        with counter.forward():
            staged(*inputs)
    markers = len(counter.forwards[0])
    inactive_ns, timed_ns = _marker_cost_ns(None), _marker_cost_ns(make_collectors(timers))
    forward_ns = statistics.median(times["plain"]) * 1e6
    print(f"marker cost: inactive {inactive_ns:.0f} ns, timed {timed_ns:.0f} ns per stage; "
          f"{markers} markers per forward bound the overhead at "
          f"{1 + markers * inactive_ns / forward_ns:.6f} (inactive) and "
          f"{1 + markers * timed_ns / forward_ns:.6f} (timed)")
    sets = [[], ["cpu_time"]] + ([["cuda_time"]] if device.type == "cuda" else [])
    print("marker cost by collectors: " + ", ".join(
        f"{'+'.join(names) or 'session alone'} {_marker_cost_ns(make_collectors(names)):.0f} ns"
        for names in sets))


if __name__ == "__main__":
    main()
