"""ProfileResult reaches what a collector provides through what the collector declares (its
metrics, its ``provides``), never through a collector's name (issue 34)."""

import torch
from torch import nn

from profiling import profile_model
from profiling.collectors.module_time import ModuleTime
from profiling.collectors.op_counts import OpCounts


class _RenamedCounter(OpCounts):
    """The op counter under another name, as a user's own counting collector would be."""

    name = "my_counts"


class _RenamedTimer(ModuleTime):
    name = "my_module_time"


def test_a_counter_of_another_name_gives_the_totals_and_the_module_counts():
    model = nn.Linear(4, 3).eval()
    x = torch.ones(2, 4)
    result = profile_model(model, (x,), collectors=["payload", _RenamedCounter()])
    assert result.totals["macs"] == 2 * 4 * 3  # batch x in x out
    assert list(result.totals) == ["macs", "flops", "bytes_read", "bytes_written",
                                   "activations"]  # as the counter declares them
    named = profile_model(model, (x,), collectors=["payload", "op_counts"])
    assert result.totals == named.totals
    assert set(result.module_counts) == set(named.module_counts) == {""}
    assert result.uncounted == named.uncounted == {}
    other = result.stages.set_index("kind").loc["other"]  # no stage: all of it is "other"
    assert int(other["macs"]) == 2 * 4 * 3


def test_a_module_timer_of_another_name_gives_the_module_seconds():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    result = profile_model(model, (torch.ones(1, 4),),
                           collectors=["cpu_time", _RenamedTimer()], warmup=0, repeats=1)
    last, total = result.module_seconds
    assert set(last) == set(total) == {"", "0", "1"}
    assert all(seconds > 0 for seconds in total.values())


def test_without_a_provider_the_result_says_not_measured():
    result = profile_model(nn.Linear(2, 2).eval(), (torch.ones(1, 2),), collectors=["payload"])
    assert result.totals is None and result.module_counts is None
    assert result.uncounted == {} and result.module_seconds == (None, None)
