"""A runtime run's ``other`` row taken apart (``deployment["other_parts_ms"]``): node time of no
stage, the runtime's run call less its nodes, and the wall time outside the run call. Checked
against what each clock says on its own: the runtime's nodes lie inside its span of the run
call, which lies inside the wall time of the call, in ONNX Runtime and in OpenVINO."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from profiling import stage
from profiling.runtimes.runtime_profile import other_parts
from runtime_models import needs_onnxruntime, needs_openvino


class _Staged(nn.Module):
    """Two convolutions in a stage, and a ReLU in none (its node maps to no stage)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with stage("convs", x) as s:
            x = s.output(self.conv(x))
        return torch.relu(x) * 2


def test_the_parts_are_each_forwards_differences_taken_as_medians():
    forward = [1.0, 2.0, 3.0]
    spans = [0.8, 1.5, 2.9]
    nodes = [{"a": 0.5, "b": 0.1}, {"a": 1.0, "b": 0.2}, {"a": 2.0, "b": 0.3}]
    per_run = [({"convs": 0.5}, 0.1), ({"convs": 1.0}, 0.2), ({"convs": 2.0}, 0.3)]
    # between: 0.2, 0.3, 0.6; outside: 0.2, 0.5, 0.1 (medians 0.3 and 0.2)
    assert other_parts(forward, spans, per_run, nodes) == {
        "unmapped_nodes": 0.2, "between_nodes": 0.3, "outside_run": 0.2}
    assert other_parts(forward, None, per_run, nodes) is None  # the runtime says nothing
    assert other_parts(forward, spans[:2], per_run, nodes) is None  # spans of other runs


@pytest.mark.parametrize("runtime", [pytest.param("onnxruntime", marks=needs_onnxruntime),
                                     pytest.param("openvino", marks=needs_openvino)])
def test_the_nodes_lie_inside_the_runtimes_run_call_inside_the_forward(runtime, tmp_path):
    """Three clocks: the runtime's per-node times (ONNX Runtime's kernel events, OpenVINO's
    counters), its span of the run call (``model_run``; the request's ``latency``) and the
    wall time of our call. Each forward's nodes fit inside its run call, and that inside the
    forward, whatever placed the nodes in stages."""
    from profiling.runtimes import profile_runtime

    torch.manual_seed(0)
    profiled = profile_runtime(_Staged().eval(), (torch.randn(1, 3, 32, 32),),
                               runtime=runtime, warmup=1, repeats=5, workdir=tmp_path)
    warmed = profiled.result.noise["warmup"]["made"]
    spans = profiled.backend.run_spans(warmed)
    nodes = [sum(times.values()) for times in profiled.backend.node_times(warmed)]
    forward = profiled.result.forward_ms
    rounding = profiled.deployment["node_time_rounding_ms"]
    assert len(spans) == len(nodes) == len(forward) == 5
    for span, node_ms, wall in zip(spans, nodes, forward):
        assert node_ms <= span + rounding and span <= wall
    parts = profiled.deployment["other_parts_ms"]
    assert parts["between_nodes"] == pytest.approx(
        np.median([s - n for s, n in zip(spans, nodes)]), abs=1e-4)
    assert parts["outside_run"] == pytest.approx(
        np.median([w - s for w, s in zip(forward, spans)]), abs=1e-4)
    assert parts["outside_run"] > 0 and parts["between_nodes"] > -rounding
    assert parts["unmapped_nodes"] >= 0
