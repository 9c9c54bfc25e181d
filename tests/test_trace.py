"""trace=true: a gzipped Chrome/Perfetto trace in which the stages are named ranges."""

from __future__ import annotations

import gzip
import json

import pytest
import torch

from profiling import stage
from profiling.trace.export import trace_forward


class Staged(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.head = torch.nn.Linear(8, 2)

    def forward(self, x):
        with stage("features", x) as s:
            y = s.output(self.conv(x).relu())
        return self.head(y.mean((2, 3)))


def _events(trace: bytes) -> list[dict]:
    return json.loads(gzip.decompress(trace))["traceEvents"]


def _ranges(events: list[dict]) -> dict[str, dict]:
    return {e["name"]: e for e in events if e.get("cat") == "user_annotation"}


def test_trace_names_marked_and_attached_stages():
    model = Staged().eval()
    events = _events(trace_forward(model, (torch.randn(1, 3, 16, 16),),
                                   attach={"classifier": "head"}, cuda=False))
    ranges = _ranges(events)
    assert {"features", "classifier"} <= set(ranges)
    features = ranges["features"]
    convolutions = [e for e in events if e.get("name") == "aten::conv2d"]
    assert len(convolutions) == 1
    start, end = features["ts"], features["ts"] + features["dur"]
    assert start <= convolutions[0]["ts"] <= end
    assert not model.head._forward_hooks and not model.head._forward_pre_hooks


@pytest.mark.slow
def test_trace_true_in_a_run(tmp_path):
    from zoo.tools.job import run_profile
    from zoo.tools.composition import compose_config

    cfg = compose_config(["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
                          "run.warmup=0", "run.repeats=1", "trace=true"])
    run_profile(cfg, tmp_path, print_summary=False)
    names = set(_ranges(_events((tmp_path / "trace.json.gz").read_bytes())))
    assert {"conv1", "layer1", "layer4", "fc"} <= names


@pytest.mark.cuda
def test_cuda_trace_has_kernels_inside_the_stage_ranges():
    model = Staged().eval().cuda()
    events = _events(trace_forward(model, (torch.randn(1, 3, 16, 16, device="cuda"),)))
    assert "features" in _ranges(events)
    assert any(e.get("cat") == "kernel" for e in events)
