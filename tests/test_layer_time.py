"""The layer_time collector: per-leaf times in a pass of their own, hooks always removed, and
the torchstat table's duration[%] filled from them."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

from profiling.runner import profile_model
from profiling.collectors.layer_time import LayerTime
from profiling.counting import OpCounting
from profiling.reports.layers_table import layers_table

from conftest import requires_cuda


class _Sleep(nn.Module):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.seconds)
        return x + 1


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Sequential(_Sleep(0.01), nn.ReLU())
        self.slow = _Sleep(0.04)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.slow(self.block(self.block(x)))  # block.* run twice


def _hooks(model: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_leaf_times_of_the_last_call_and_no_hooks_left():
    model = _Net()
    collector = LayerTime()
    result = profile_model(model, (torch.zeros(2),), collectors=["payload", collector])
    assert set(collector.durations) == {"block.0", "block.1", "slow"}  # leaves only
    assert 0.01 <= collector.durations["block.0"] < 0.04
    assert collector.durations["slow"] >= 0.04
    assert collector.durations["block.1"] < 0.01
    assert torch.equal(result.output, torch.full((2,), 3.0))
    assert result.timed == []  # a pass of its own, no timed forwards
    assert _hooks(model) == 0


def test_hooks_removed_when_the_forward_raises():
    class Failing(_Net):
        def forward(self, x):
            self.block(x)
            raise RuntimeError("boom")

    model = Failing()
    with pytest.raises(RuntimeError, match="boom"):
        profile_model(model, (torch.zeros(2),), collectors=["layer_time", "cpu_time"])
    assert _hooks(model) == 0


def test_durations_fill_the_torchstat_column():
    model = _Net()
    collector = LayerTime()
    profile_model(model, (torch.zeros(2),), collectors=[collector])
    with OpCounting(model) as counting:
        model(torch.zeros(2))
    shares = layers_table(model, counting.modules, collector.durations).set_index(
        "module name")["duration[%]"]
    # slow sleeps 40 ms of about 50: its share is most of the total
    assert 0.6 < shares["slow"] < 0.9
    assert shares["total"] == pytest.approx(1.0, abs=1e-4)  # torchstat divides by sum + 1e-7


@requires_cuda
def test_leaf_times_with_cuda_events():
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU()).cuda()
    collector = LayerTime()
    profile_model(model, (torch.randn(64, 512, device="cuda"),), collectors=[collector])
    assert set(collector.durations) == {"0", "1"}
    assert all(0 < seconds < 1 for seconds in collector.durations.values())
    assert _hooks(model) == 0
