"""One staged forward of a zoo model on CUDA with the stages as NVTX ranges, for Nsight tools.

After one unmarked warm-up forward, the forward runs inside a session with
:class:`~profiling.collectors.trace_ranges.TraceRanges`, which pushes an NVTX range per stage.
Nsight Compute then profiles exactly the kernels of one stage, by its name::

    ncu --nvtx --nvtx-include "decoder/" --metrics gpu__time_duration.sum \\
        python benchmarks/nvtx_ranges.py --model swiftnet
    nsys profile -t cuda,nvtx python benchmarks/nvtx_ranges.py --model gmflow

(a name that is no stage, ``--nvtx-include "no_such_stage/"``, profiles no kernel at all).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from profiling import Session  # noqa: E402
from profiling.stages.attach import attach_stages  # noqa: E402
from profiling.collectors.trace_ranges import TraceRanges  # noqa: E402
from profiling.stages import call_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="swiftnet")
    parser.add_argument("--override", nargs="*", default=["input.size=[256,512]"])
    args = parser.parse_args()
    from benchmarks.cuda_stage_checks import zoo_case

    model, inputs, attach = zoo_case(args.model, args.override)
    with torch.inference_mode(), attach_stages(model, attach):
        call_model(model, inputs)
        with Session([TraceRanges()]) as session:
            with session.forward():
                call_model(model, inputs)
        torch.cuda.synchronize()
    print("NVTX ranges:", ", ".join(dict.fromkeys(c.name for c in session.forwards[0]
                                                  if c.kind == "stage")))


if __name__ == "__main__":
    main()
