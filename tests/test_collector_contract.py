"""The contract of every registered collector: built by name, run in its declared pass, it
writes exactly the metrics it declares. A new collector is tested by being registered."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

from profiling import stage
from profiling.collectors import (PASSES, Collector, collector_class, make_collectors,
                                  register_collector, registered_collectors)
from profiling.runner.passes import profile_model

DEVICE_CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "device"


class _Staged(nn.Module):
    """Two top-level stages, the first with a nested one; convolution, ReLU, linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with stage("body", x) as body:
            with stage("conv", x) as conv:
                y = conv.output(self.conv(x))
            y = body.output(torch.relu(y))
        with stage("head", y) as head:
            return head.output(self.head(y.mean((2, 3))))


def _each_collector() -> list:
    """One parameter per registered collector; those that cannot run on the CPU need CUDA."""
    return [pytest.param(name, id=name, marks=[] if "cpu" in cls.devices else [pytest.mark.cuda])
            for name, cls in registered_collectors().items()]


@pytest.mark.parametrize("name", _each_collector())
def test_writes_exactly_the_metrics_it_declares(name):
    cls = registered_collectors()[name]
    device = "cpu" if "cpu" in cls.devices else "cuda"
    model = _Staged().eval().to(device)
    result = profile_model(model, (torch.randn(1, 3, 8, 8, device=device),),
                           collectors=[name], warmup=0, repeats=1)
    assert [call.name for call in result.calls] == ["body", "conv", "head"]
    written = set().union(*(call.metrics for call in result.calls))
    assert written == set(cls.metrics)
    assert [type(c) for c in result.collectors.values()] == [cls]


@pytest.mark.parametrize("name", list(registered_collectors()))
def test_declarations(name):
    cls = registered_collectors()[name]
    assert cls.name == name and issubclass(cls, Collector)
    assert cls.__name__ == name.title().replace("_", "")  # cpu_time: CpuTime, op_counts: OpCounts
    assert cls.pass_name in PASSES
    assert set(cls.devices) <= {"cpu", "cuda", "meta"} and cls.devices
    assert len(set(cls.metrics)) == len(cls.metrics)
    assert collector_class(name) is cls
    assert all(collector_class(alias) is cls for alias in cls.aliases)


def test_a_former_name_builds_the_renamed_collector():
    (memory,) = make_collectors(["cpu_memory"])
    assert type(memory) is collector_class("tensor_memory") and memory.name == "tensor_memory"
    x = torch.randn(1, 3, 8, 8)
    result = profile_model(_Staged().eval(), (x,), collectors=["cpu_memory"], warmup=0, repeats=1)
    conv = next(call for call in result.calls if call.name == "conv")
    assert conv.metrics["tensor_retained_mb"] == 4 * 8 * 8 * 4 / 1e6  # the conv output's storage


def test_one_pass_nests_its_collectors_in_one_order():
    ranks: dict[str, list[int]] = {}
    for cls in registered_collectors().values():
        ranks.setdefault(cls.pass_name, []).append(cls.nesting_rank)
    assert all(len(set(values)) == len(values) for values in ranks.values()), ranks
    timed = sorted((cls.nesting_rank, name) for name, cls in registered_collectors().items()
                   if cls.pass_name == "timed")
    assert timed[-1][1] == "cpu_time"  # the host timer sits innermost


def test_no_two_collectors_share_a_metric():
    metrics = [m for cls in registered_collectors().values() for m in cls.metrics]
    assert len(metrics) == len(set(metrics))


@pytest.mark.parametrize("path", sorted(DEVICE_CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_device_configs_name_collectors_that_measure_there(path):
    config = yaml.safe_load(path.read_text())
    named = [name for name in config["collectors"] if name != "payload"]
    collectors = registered_collectors()
    assert set(named) <= set(collectors), set(named) - set(collectors)  # current names only
    assert [n for n in named if config["name"] not in collectors[n].devices] == []


def test_registration_refuses_an_unknown_pass_and_a_taken_name():
    class Nowhere(Collector):
        name = "nowhere"
        pass_name = "sometimes"

    class Impostor(Collector):
        name = "cpu_time"

    with pytest.raises(ValueError, match="pass_name='sometimes'; accepted: analysis, "):
        register_collector(Nowhere)
    with pytest.raises(ValueError, match="two collectors named 'cpu_time': CpuTime and Impostor"):
        register_collector(Impostor)
    assert "nowhere" not in registered_collectors()
    assert type(make_collectors(["cpu_time"])[0]).__name__ == "CpuTime"
