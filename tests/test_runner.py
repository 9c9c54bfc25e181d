"""The runner: passes, aggregation statistics and input checks."""

import numpy as np
import pytest
import torch
from torch import nn

from profiling import ProfilingError, stage
from profiling.statistics.aggregate import aggregate_stages
from profiling.runner.passes import profile_model
from profiling.stages.markers import StageCall


class Two(nn.Module):
    def forward(self, x):
        with stage("a", x) as s:
            x = s.output(x * 2)
        for _ in range(2):
            with stage("b", x) as s:
                x = s.output(x + 1)
        return x


def test_profile_model_rows_statistics_and_output():
    x = torch.ones(4)
    result = profile_model(Two().eval(), (x,), collectors=["payload", "tensor_memory", "cpu_time"],
                           warmup=1, repeats=3)
    df = result.stages[result.stages.kind == "stage"]
    assert list(zip(df.stage, df.call_index)) == [("a", 0), ("b", 0), ("b", 1)]
    assert list(result.stages.stage)[-1] == "other"  # the forward outside "a" and "b"
    assert list(df.out_bytes) == [16, 16, 16]
    # "b" allocates its output and frees its input (the previous x) inside the stage
    assert list(df.tensor_retained_mb) == [16 / 1e6, 0.0, 0.0]
    assert list(df.tensor_peak_mb) == [16 / 1e6] * 3
    assert {f"cpu_time_ms_{s}" for s in ("mean", "median", "p10", "p90", "std")} <= set(df)
    assert len(result.timed) == 3 and len(result.forward_ms) == 3
    assert torch.equal(result.output, torch.full((4,), 4.0))


def test_statistics_are_computed_over_repeats():
    def call(value):
        c = StageCall("s", "stage", 0, None, 0, 0)
        c.metrics["cpu_time_ms"] = value
        return c
    values = [1.0, 2.0, 3.0, 4.0, 10.0]
    df = aggregate_stages([call(0.0)], [[call(v)] for v in values])
    row = df.iloc[0]
    assert row.cpu_time_ms_mean == 4.0 and row.cpu_time_ms_median == 3.0
    assert row.cpu_time_ms_p10 == pytest.approx(np.percentile(values, 10))
    assert row.cpu_time_ms_p90 == pytest.approx(np.percentile(values, 90))
    assert row.cpu_time_ms_std == pytest.approx(np.std(values, ddof=1))


@pytest.mark.parametrize("options, message", [({"repeats": 0}, "run.repeats must be at least 1"),
                                              ({"warmup": -1}, "run.warmup must be 0 or more")])
def test_bad_run_options(options, message):
    with pytest.raises(ProfilingError, match=message):
        profile_model(Two().eval(), (torch.ones(1),), **options)


class Attention(nn.Module):
    def forward(self, x):
        with stage("attention", x) as s:
            return s.output(torch.nn.functional.scaled_dot_product_attention(x, x, x))


def test_memory_is_measured_apart_from_counting():
    # the counter forces attention onto its math kernel, which materialises the score matrix;
    # the memory measured must be that of the real kernel all the same
    x = torch.rand(1, 1, 2048, 64)
    alone = profile_model(Attention().eval(), (x,), collectors=["tensor_memory"], warmup=0,
                          repeats=1)
    both = profile_model(Attention().eval(), (x,), collectors=["tensor_memory", "op_counts"],
                         warmup=0, repeats=1)
    assert both.stages.tensor_peak_mb[0] == alone.stages.tensor_peak_mb[0]
    assert both.stages.macs[0] == 2 * 2048 * 2048 * 64


def test_no_dispatch_mode_or_session_outlives_a_run():
    from torch.utils._python_dispatch import is_in_torch_dispatch_mode
    from profiling.stages.markers import active_session, is_counting
    profile_model(Two().eval(), (torch.ones(4),),
                  collectors=["payload", "tensor_memory", "op_counts", "liveness", "cpu_time"],
                  repeats=1)
    assert not is_in_torch_dispatch_mode() and active_session() is None and not is_counting()


def test_no_timed_forwards_without_timers():
    calls = []

    class Counting(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x + 1

    result = profile_model(Counting().eval(), (torch.ones(1),),
                           collectors=["payload", "op_counts"], warmup=3, repeats=5)
    assert len(calls) == 2 and result.forward_ms == [] and result.timed == []
