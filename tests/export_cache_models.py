"""Tiny staged models and helpers that the export cache's tests share (an export of one takes
a second)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from profiling import stage

ATTACH = {"encoder": "encoder", "head": "head"}


class Scaled(nn.Module):
    """An encoder, a code stage scaling by ``factor`` (a plain attribute, not in ``repr``
    nor in the weights) and a head."""

    def __init__(self, factor: float = 2.0) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(4, 2, 1)
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        with stage("scale", x) as s:
            x = s.output(x * self.factor)
        return self.head(x)


class Branching(Scaled):
    """``Scaled`` whose code stage branches on a value: it exports in two parts."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        with stage("scale", x) as s:
            x = s.output(x * self.factor if float(x.detach().mean()) > -1e9 else x)
        return self.head(x)


def tiny_model(kind: type = Scaled, **options) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return kind(**options).eval(), torch.randn(1, 3, 8, 8)


def run_cached(model, x, cache, workdir, **options):
    from profiling.runtimes import profile_runtime

    return profile_runtime(model, (x,), runtime="onnxruntime", warmup=0, repeats=1,
                           attach=ATTACH, workdir=workdir, cache_folder=cache, **options)


def output_matches(profiled, model, x) -> bool:
    return np.allclose(profiled.outputs[0], model(x).detach().numpy(), atol=1e-5)


def leftovers(*folders: Path) -> list[str]:
    return [p.name for f in folders if f.is_dir() for p in f.iterdir()
            if p.name.startswith((".incoming-", "stagezoo-export-"))]
