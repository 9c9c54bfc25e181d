"""Speed of the split analysis (``python -m zoo.split``'s work), against its targets.

Each case builds the model and its inputs as ``zoo.split`` does, then times
:func:`profiling.runner.analyse_cuts` (one forward under the liveness collector, the cut table,
every storage compressed once with the default codec, zlib) and, beside it,
one plain forward of the same model and input (after a warm-up), so that the analysis's own
overhead reads as a ratio whatever the machine. Targets, on a 2-core CPU:

- Faster R-CNN at its default input (800x1333 after its transform), CPU: <= 8 s;
- GMFlow at 384x768, CPU: <= 6 s;
- meta analyses at 1088x1920 (GMFlow, SwiftNet, Faster R-CNN; ``--depth 2``): seconds.

    python benchmarks/split_speed.py [--rounds 3] [--only gmflow_cpu ...]

Prints the median over rounds per case, its target, the plain forward's median and the ratio,
the process's peak resident memory so far (cases run in order), and the load average before
and after (a loaded machine inflates every figure).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import torch

from profiling.stages import call_model
from profiling.runner import analyse_cuts
from profiling.split import DEFAULT_CODECS, cut_table
from zoo.tools.job_inputs import prepare
from zoo.tools.composition import compose_config

#: name -> (overrides, device, analyse_cuts options, target seconds)
CASES = {
    "faster_rcnn_cpu": (["model=faster_rcnn"], "cpu", {}, 8.0),
    "gmflow_cpu": (["model=gmflow", "input.size=[384,768]"], "cpu", {}, 6.0),
    "gmflow_meta": (["model=gmflow", "input.size=[1088,1920]"], "meta", {"depth": 2}, 5.0),
    "swiftnet_meta": (["model=swiftnet", "input.size=[1088,1920]"], "meta", {"depth": 2}, 5.0),
    "faster_rcnn_meta": (["model=faster_rcnn", "input.size=[1088,1920]"], "meta",
                         {"depth": 2}, 5.0),
}


def _seconds(job) -> float:
    start = time.perf_counter()
    job()
    return time.perf_counter() - start


def measure(name: str, rounds: int) -> dict:
    """Median analysis and plain-forward seconds of one case over ``rounds``."""
    overrides, device, options, target = CASES[name]
    model, inputs, attach, _ = prepare(compose_config(overrides), torch.device(device))
    codecs = DEFAULT_CODECS if device != "meta" else ()

    def analysis() -> None:
        cut_table(analyse_cuts(model, inputs, attach=attach, codecs=codecs, **options))

    def forward() -> None:
        with torch.inference_mode():
            call_model(model, inputs)

    forward()  # warm-up
    analysed = [_seconds(analysis) for _ in range(rounds)]
    plain = [_seconds(forward) for _ in range(rounds)] if device != "meta" else [float("nan")]
    return {"case": name, "analysis_s": statistics.median(analysed), "target_s": target,
            "forward_s": statistics.median(plain)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", choices=sorted(CASES), default=list(CASES))
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"{os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}")
    print(f"{'case':<18}{'analysis s':>11}{'target s':>10}{'ratio':>8}{'forward s':>11}"
          f"{'analysis/forward':>18}{'peak RSS GB':>13}")
    for name in args.only:
        row = measure(name, args.rounds)
        print(f"{row['case']:<18}{row['analysis_s']:>11.2f}{row['target_s']:>10.1f}"
              f"{row['analysis_s'] / row['target_s']:>8.2f}{row['forward_s']:>11.2f}"
              f"{row['analysis_s'] / row['forward_s']:>18.2f}"
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:>13.2f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
