"""Small real run folders for the report tests: a four-stage convolutional network profiled on
the CPU (a nested stage, a stage called twice, a stage whose output has no bytes), written by
``write_run`` as the command line would."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from profiling import profile_model, stage, write_run
from profiling.reports import write_failure

__all__ = ["Tiny", "tiny_run", "tiny_sweep", "STAGE_NAMES", "INPUT_SIZE"]

INPUT_SIZE = (16, 16)
#: Every stage call of :class:`Tiny`, as its page names them.
STAGE_NAMES = ("stem", "sizes", "body", "conv", "head", "head[1]")


class Tiny(nn.Module):
    """stem (3->width conv), sizes (no tensor out), body (conv + ReLU, the conv a nested
    stage), head (a 1x1 conv to 2 maps) called twice."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.conv = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.head = nn.Conv2d(width, 2, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with stage("stem", x) as s:
            x = s.output(self.stem(x))
        with stage("sizes", x) as s:
            s.output(tuple(x.shape[-2:]))
        with stage("body", x) as s:
            with stage("conv", x) as inner:
                y = inner.output(self.conv(x))
            x = s.output(torch.relu(y))
        for _ in range(2):
            with stage("head", x) as s:
                out = s.output(self.head(x))
        return out


def tiny_run(folder: Path, *, width: int = 8, name: str = "tiny", seed: int = 0,
             report: bool = False) -> Path:
    """Profile :class:`Tiny` (3 repeats on the CPU, operations counted) into ``folder``."""
    torch.manual_seed(seed)
    model = Tiny(width).eval()
    inputs = (torch.randn(1, 3, *INPUT_SIZE),)
    result = profile_model(model, inputs, warmup=1, repeats=3,
                           collectors=["payload", "tensor_memory", "op_counts", "cpu_time"])
    config = {"model": {"name": name, "width": width}, "device": {"name": "cpu"},
              "input": {"size": list(INPUT_SIZE), "batch": 1},
              "run": {"repeats": 3, "dtype": "float32"}}
    write_run(result, folder, model, config=config, report=report,
              metadata={"overrides": [f"model.width={width}"]})
    return folder


def tiny_sweep(folder: Path) -> Path:
    """A sweep of :class:`Tiny` over ``model.width`` 4 and 8, and a third job that failed."""
    for number, width in enumerate((4, 8)):
        tiny_run(folder / f"{number}_tiny", width=width)
    write_failure(folder / "2_tiny", RuntimeError("input.size=[1,1] is below the stem's kernel"),
                  overrides=["model.width=16"], config={"model": {"name": "tiny", "width": 16}})
    return folder
