"""Issue 33's acceptance figures of runtime runs, as the table docs/runtimes.md shows.

Runs the cases of ``tests/test_runtime_figures.py`` (regnet_x_400mf 224x224, swiftnet 64x96,
gmflow 128x128; 2 warm-up forwards, 9 timed) in PyTorch and in each runtime in float32, and
prints one Markdown row per case and runtime with the figures that test checks, computed by
the test's own functions (``stage_figures``, ``falling_stages``), so the table and the test
can never disagree on what a figure means:

    python benchmarks/runtime_figures.py                       # every case, both runtimes
    python benchmarks/runtime_figures.py --cases swiftnet --runtimes openvino
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import test_runtime_figures as figures_test  # noqa: E402

HEADER = ("| model | runtime | torch forward ms | runtime forward ms | largest stage | named stages "
          "| other (least / median) | falling | lost | output vs torch | precision "
          "| noise |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def row(case: str, runtime: str, folder: Path) -> str:
    """One case in PyTorch and in ``runtime``: its table row."""
    from profiling.runtimes.runtime_profile import judged_difference

    overrides = figures_test.CASES[case]
    torch_run = figures_test._run([*overrides, "collectors=[payload,op_counts,cpu_time]"],
                                  folder / "torch")
    runtime_run = figures_test._run([*overrides, f"run.runtime={runtime}"], folder / runtime)
    found = figures_test.stage_figures(torch_run.result, runtime_run.result)
    deployment = runtime_run.record.meta["deployment"]
    torch_ms = float(np.median(torch_run.result.forward_ms))
    noise = runtime_run.result.noise
    return (f"| {case} | {runtime} | {torch_ms:.1f} | {found['forward_ms']:.1f} "
            f"| {found['largest_stage_share']:.0%} | {found['named_share']:.1%} "
            f"| {found['other_share']:.1%} / {found['other_median_share']:.0%} "
            f"| {', '.join(found['falling']) or 'none'} "
            f"| {', '.join(found['lost']) or 'none'} "
            f"| {judged_difference(deployment['output_difference']):.1e} "
            f"| {deployment['inference_precision']} "
            f"| {'unreliable' if noise.get('unreliable') else 'reliable'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=list(figures_test.CASES),
                        choices=list(figures_test.CASES))
    parser.add_argument("--runtimes", nargs="*", default=["onnxruntime", "openvino"],
                        choices=["onnxruntime", "openvino"])
    args = parser.parse_args()
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory() as root:
        for case in args.cases:
            for runtime in args.runtimes:
                print(row(case, runtime, Path(root) / f"{case}-{runtime}"), flush=True)


if __name__ == "__main__":
    main()
