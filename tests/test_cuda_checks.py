"""The CUDA figures add up (benchmarks/cuda_stage_checks.py's checks, on GPU-sized cases), and
the trace summary they use reads hand-made traces right (on any machine)."""

from __future__ import annotations

import pytest
import torch

from profiling.trace.summary import gpu_work_per_range, read_trace_events, sync_calls


def _x(cat: str, name: str, ts: float, dur: float, tid: int = 1, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid, "args": args}


#: Two calls of "block" (the second nesting "inner"), a launch outside every range, a launch on
#: another thread inside the first range's time, a memcpy, and two synchronisations.
HAND_MADE = [
    _x("user_annotation", "block", 0, 100),
    _x("cuda_runtime", "cudaLaunchKernel", 10, 5, correlation=1),
    _x("kernel", "k1", 50, 40, tid=7, correlation=1),
    _x("cuda_runtime", "cudaLaunchKernel", 20, 5, tid=2, correlation=2),  # other thread
    _x("kernel", "k2", 95, 10, tid=7, correlation=2),
    _x("cuda_runtime", "cudaDeviceSynchronize", 90, 9),
    _x("cuda_runtime", "cudaLaunchKernel", 150, 5, correlation=3),        # outside the ranges
    _x("kernel", "k3", 160, 5, tid=7, correlation=3),
    _x("user_annotation", "block", 200, 100),
    _x("user_annotation", "inner", 210, 30),
    _x("cuda_runtime", "cudaMemcpyAsync", 220, 5, correlation=4),
    _x("gpu_memcpy", "Memcpy HtoD", 230, 20, tid=8, correlation=4),
    _x("cuda_runtime", "cudaLaunchKernel", 260, 5, correlation=5),
    _x("kernel", "k5", 280, 60, tid=7, correlation=5),
    _x("cuda_runtime", "cudaEventSynchronize", 310, 2),
    _x("cuda_runtime", "cudaEventQuery", 315, 1),
    _x("cpu_op", "aten::nonzero", 400, 50),
    _x("cuda_runtime", "cudaStreamSynchronize", 420, 10),                # the model's own
]


def test_gpu_work_is_what_each_range_launched():
    work = {(w.name, w.call_index): w for w in gpu_work_per_range(HAND_MADE)}
    assert set(work) == {("block", 0), ("block", 1), ("inner", 0)}
    first, second, inner = work["block", 0], work["block", 1], work["inner", 0]
    assert (first.gpu_ms, first.span_ms, first.launches) == (0.040, 0.040, 1)
    assert (second.gpu_ms, second.span_ms, second.launches) == (0.080, 0.110, 2)  # 230..340 us
    assert (inner.gpu_ms, inner.launches) == (0.020, 1)
    assert [w.name for w in gpu_work_per_range(HAND_MADE, names={"inner"})] == ["inner"]


def test_sync_calls_are_the_waits_only():
    assert [e["name"] for e in sync_calls(HAND_MADE)] == [
        "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaStreamSynchronize"]
    assert [e["name"] for e in sync_calls(HAND_MADE, outside_operators=True)] == [
        "cudaDeviceSynchronize", "cudaEventSynchronize"]


def test_read_trace_events_takes_gzipped_bytes_and_text():
    import gzip
    import json

    text = json.dumps({"traceEvents": HAND_MADE[:2]})
    assert read_trace_events(text) == HAND_MADE[:2]
    assert read_trace_events(gzip.compress(text.encode())) == HAND_MADE[:2]


@pytest.fixture(scope="module")
def swiftnet():
    from benchmarks.cuda_stage_checks import zoo_case

    return zoo_case("swiftnet")


@pytest.mark.cuda
def test_top_level_cuda_times_add_up_to_a_plain_forward(swiftnet):
    from benchmarks.cuda_stage_checks import check_sums

    sums = check_sums(*swiftnet, repeats=20)
    assert sums["top_level_stages"] == 4
    assert abs(sums["error"]) <= 0.05, sums


@pytest.mark.cuda
def test_stage_cuda_times_match_the_kernels_of_a_trace():
    from benchmarks.cuda_stage_checks import check_trace, zoo_case

    # 8 image pairs keep the GPU busy in these stages: at batch 1 an H100 mostly waits for
    # the launches, and a stage's CUDA time is then mostly that wait (docs/measurement.md)
    rows = {r["stage"]: r for r in check_trace(*zoo_case("gmflow", ["input.batch=8"]))
            if r["depth"] == 0}
    for name in ("backbone", "transformer", "global_correlation_softmax", "feature_flow_attn"):
        assert rows[name]["event_ms"] > 1.0
        assert abs(rows[name]["error"]) <= 0.05, rows[name]       # the kernels' sum
        assert rows[name]["span_ms"] == pytest.approx(rows[name]["event_ms"], rel=0.05)


@pytest.mark.cuda
def test_whole_forward_peak_is_the_allocators_and_nested_peaks_stay_below(swiftnet):
    from benchmarks.cuda_stage_checks import check_memory

    memory = check_memory(*swiftnet)
    assert abs(memory["difference_mb"]) <= 1.0, memory
    assert memory["nested_above_parent"] == []
    assert memory["stage_calls"] > 4


@pytest.mark.cuda
def test_one_synchronisation_per_timed_forward(swiftnet):
    from benchmarks.cuda_stage_checks import check_syncs

    syncs = check_syncs(*swiftnet)
    assert syncs["syncs_per_forward"] == 1, syncs
    assert syncs["inside_stages"] == 0


@pytest.mark.cuda
def test_a_model_that_draws_on_the_gpu_synchronises_once_per_timed_forward():
    from benchmarks.cuda_stage_checks import check_syncs
    from profiling import stage

    class Noisy(torch.nn.Module):
        """BatchNorm buffers, and noise drawn from the CUDA generator in every forward."""

        def __init__(self) -> None:
            super().__init__()
            self.conv, self.norm = torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)

        def forward(self, x):
            with stage("noisy", x) as s:
                return s.output(self.norm(self.conv(x + torch.randn_like(x))))

    model = Noisy().cuda().eval()
    generator = torch.cuda.get_rng_state()
    syncs = check_syncs(model, (torch.rand(1, 3, 16, 16, device="cuda"),), {})
    # the generator is set back after every forward, on the host: no synchronisation
    assert syncs["syncs_per_forward"] == 1 and syncs["inside_stages"] == 0, syncs
    assert torch.equal(torch.cuda.get_rng_state(), generator)


@pytest.mark.cuda
def test_stage_names_are_nvtx_ranges(monkeypatch):
    from profiling import Session, stage
    from profiling.collectors.trace_ranges import TraceRanges

    pushed = []
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", pushed.append)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: pushed.append("pop"))
    with Session([TraceRanges()]) as session:
        with session.forward():
            with stage("outer"):
                with stage("inner"):
                    torch.ones(4, device="cuda").sum()
    assert pushed == ["outer", "inner", "pop", "pop"]
