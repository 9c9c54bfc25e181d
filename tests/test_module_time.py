"""The module_time collector: per-module times in a pass of their own, hooks always removed,
and the torchstat table's duration[%] and the module tree's times filled from them."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

from profiling.collectors.module_time import ModuleTime
from profiling.counting import OpCounting
from profiling.reports.layers_table import layers_table
from profiling.reports.modules_table import modules_table, render_modules_text
from profiling.runner.passes import profile_model



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
        return self.slow(self.block(self.block(x)))  # block and its layers run twice


def _hooks(model: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def _timed(model: nn.Module) -> ModuleTime:
    collector = ModuleTime()
    profile_model(model, (torch.zeros(2),), collectors=[collector])
    return collector


def test_last_call_and_total_per_module_and_no_hooks_left():
    model = _Net().eval()
    collector = ModuleTime()
    result = profile_model(model, (torch.zeros(2),), collectors=["payload", collector])
    last, total = collector.last_call_seconds, collector.total_seconds
    assert set(last) == set(total) == {"", "block", "block.0", "block.1", "slow"}
    # lower bounds only: a sleep never returns early, but a busy machine can oversleep
    assert last["block.0"] >= 0.01 and total["block.0"] >= last["block.0"] + 0.01  # two calls
    assert last["block"] >= last["block.0"] and total["block"] >= total["block.0"]
    assert total["slow"] == last["slow"] >= 0.04  # one call
    assert total[""] >= total["block"] + total["slow"]  # inclusive of the submodules
    assert torch.equal(result.output, torch.full((2,), 3.0))
    assert result.timed == []  # a pass of its own, no timed forwards
    assert _hooks(model) == 0


def test_hooks_removed_when_the_forward_raises():
    class Failing(_Net):
        def forward(self, x):
            self.block(x)
            raise RuntimeError("boom")

    model = Failing().eval()
    with pytest.raises(RuntimeError, match="boom"):
        profile_model(model, (torch.zeros(2),), collectors=["module_time", "cpu_time"])
    assert _hooks(model) == 0


def test_times_fill_the_torchstat_column_and_the_module_tree():
    model = _Net().eval()
    collector = _timed(model)
    with OpCounting(model) as counting:
        model(torch.zeros(2))
    shares = layers_table(model, counting.modules, collector.last_call_seconds).set_index(
        "module name")["duration[%]"]
    # leaves only, each by its last call
    assert list(shares.index) == ["block.0", "block.1", "slow", "total"]
    last = collector.last_call_seconds
    leaves = last["block.0"] + last["block.1"] + last["slow"]
    assert shares["slow"] == pytest.approx(last["slow"] / (leaves + 1e-7))
    assert shares["total"] == pytest.approx(1.0, abs=1e-4)  # torchstat divides by sum + 1e-7
    table = modules_table(model, counting.modules, collector.total_seconds)
    times = table[table.kind == "module"].set_index("module")["time_ms"]
    assert times["block"] == pytest.approx(collector.total_seconds["block"] * 1e3)
    assert times["model"] >= 60  # two 10 ms sleeps and one of 40 ms
    text = render_modules_text(model, table)
    assert f"time: {times['slow']:.3g} ms" in text


def test_the_module_tree_without_times_shows_dashes():
    model = _Net().eval()
    with OpCounting(model) as counting:
        model(torch.zeros(2))
    table = modules_table(model, counting.modules)
    assert table["time_ms"].isna().all()
    assert "time: -" in render_modules_text(model, table)


@pytest.mark.cuda
def test_module_times_with_cuda_events():
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU()).eval().cuda()
    collector = ModuleTime()
    profile_model(model, (torch.randn(64, 512, device="cuda"),), collectors=[collector])
    assert set(collector.total_seconds) == {"", "0", "1"}
    assert all(0 < seconds < 1 for seconds in collector.total_seconds.values())
    assert collector.total_seconds[""] >= collector.total_seconds["0"]
    assert _hooks(model) == 0
