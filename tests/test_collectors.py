"""Collectors: tensor memory with exact bytes, CPU time, CUDA (skipped without a GPU)."""

import pytest
import torch

from profiling import Session, stage
from profiling.collectors import make_collectors
from profiling.collectors.tensor_memory import TensorMemory
from profiling.collectors.timing import CpuTime
from profiling.errors import ProfilingError


MB = 1e6


def _forward(collectors, fn):
    with Session(collectors) as session:
        with session.forward():
            fn()
    return {c.name: c for c in session.forwards[0]}


def test_tensor_memory_allocated_and_peak_exact():
    x = torch.ones(1000)  # 4000 bytes, allocated before the stage: not counted

    def fn():
        with stage("outer", x):
            a = x * 2                      # +4000, kept
            with stage("inner", a):
                b = a + 1                  # +4000
                c = b * 3                  # +4000 -> peak 8000 inside inner
                del b                      # -4000
                d = c.view(10, 100)        # a view: no allocation
                c.mul_(2)                  # in place: no allocation
            del c, d                       # -4000
            e = torch.empty(250)           # +1000, kept
    calls = _forward([TensorMemory()], fn)
    assert calls["inner"].metrics["tensor_peak_mb"] == 8000 / MB
    assert calls["inner"].metrics["tensor_retained_mb"] == 4000 / MB
    assert calls["outer"].metrics["tensor_peak_mb"] == 12000 / MB
    assert calls["outer"].metrics["tensor_retained_mb"] == 5000 / MB


def test_tensor_memory_on_meta_tensors():
    x = torch.empty(256, 256, device="meta")

    def fn():
        with stage("matmul", x):
            y = x @ x
    calls = _forward([TensorMemory()], fn)
    assert calls["matmul"].metrics["tensor_retained_mb"] == 256 * 256 * 4 / MB


def test_cpu_time_is_measured_per_call():
    def fn():
        for _ in range(2):
            with stage("sleep"):
                torch.ones(10).sum()
    with Session([CpuTime()]) as session:
        with session.forward():
            fn()
    times = [c.metrics["cpu_time_ms"] for c in session.forwards[0]]
    assert len(times) == 2 and all(t > 0 for t in times)


def test_unknown_collector_is_one_clear_error():
    with pytest.raises(ProfilingError, match="unknown collector.*nope.*choose from: payload"):
        make_collectors(["nope"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_cuda_collectors_refuse_without_a_gpu():
    with pytest.raises(ProfilingError, match="no.*CUDA|has none"):
        make_collectors(["cuda_time"])


@pytest.mark.cuda
def test_cuda_time_and_memory_on_a_gpu():
    x = torch.ones(1024, 1024, device="cuda")

    def fn():
        with stage("outer", x):
            with stage("inner", x):
                y = x @ x                  # 4 MiB kept
            z = y + 1                      # 4 MiB kept
    calls = _forward(make_collectors(["cuda_memory", "cuda_time"]), fn)
    assert calls["inner"].metrics["cuda_time_ms"] > 0
    assert calls["inner"].metrics["cuda_retained_mb"] == pytest.approx(4 * 2**20 / MB)
    assert calls["outer"].metrics["cuda_retained_mb"] == pytest.approx(8 * 2**20 / MB)
    assert calls["outer"].metrics["cuda_peak_mb"] >= calls["inner"].metrics["cuda_peak_mb"]
