"""Runtime stage times are per forward and true to the runtime's own raw profile, and a run
says the precision it executed (profiling.runtimes, docs/runtimes.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch import nn

from profiling.runtimes.openvino_backend import per_inference_times
from profiling.runtimes.runtime_profile import forward_calls, precision_shares
from profiling.stages.markers import StageCall
from runtime_models import needs_onnxruntime, needs_openvino, seeded


class Small(nn.Module):
    """Three attached stages, each with a convolution, the first with a folded norm."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.stem(x)))


#: Small's stages, attached to its modules.
ATTACH = {"stem": "stem", "body": "body", "head": "head"}


def _small() -> tuple[nn.Module, torch.Tensor]:
    return seeded(Small, 1, 3, 32, 32)


def _openvino_readings(true_us: list[dict[str, int]]) -> list[tuple[int, dict[str, float]]]:
    """What OpenVINO's CPU counters report after each inference: the integer mean of the
    whole microseconds so far."""
    totals: dict[str, int] = {}
    readings = []
    for count, times in enumerate(true_us, start=1):
        for node, us in times.items():
            totals[node] = totals.get(node, 0) + us
        readings.append((count, {node: float(total // count) for node, total in totals.items()}))
    return readings


def test_openvino_running_means_become_per_inference_times():
    """Before: each reading was the mean since compiling, so a stage time fell at every
    repeat (34.7, 25.1, 20.6 ... ms) while the node really took the same time."""
    true_us = [{"conv": 900, "relu": 40}] + [{"conv": 300, "relu": 10}] * 7
    readings = _openvino_readings(true_us)
    assert [means["conv"] for _, means in readings][:4] == [900, 600, 500, 450]  # falling
    recovered = per_inference_times(readings)
    for count, (times, truth) in enumerate(zip(recovered, true_us), start=1):
        for node, us in truth.items():
            assert abs(times[node] * 1e3 - us) <= count  # within the integer division
    assert [round(times["conv"], 3) for times in recovered[1:]] == \
        pytest.approx([0.3] * 7, abs=0.008)


def test_readings_that_skip_inferences_spread_the_difference_over_them():
    readings = _openvino_readings([{"conv": 100}] * 4)
    assert per_inference_times([readings[0], readings[3]]) == [
        {"conv": 0.1}, {"conv": pytest.approx(0.1, abs=0.004)}]  # within 4 us (4 inferences)


def test_other_time_is_never_below_zero():
    """Before: a runtime run wrote `other` as -4.4e-17 (round-off); node times that overlap
    (stages adding up to more than the forward) leave no negative time either: an `other`
    time is what is left, at least 0, on every face (issue 35)."""
    calls = [StageCall("a", "stage", 0, None, 0, 0), StageCall("b", "stage", 1, None, 0, 0)]
    paths = {0: "a#0", 1: "b#0"}
    rows = forward_calls(calls, paths, {"a#0": 0.1, "b#0": 0.2}, "cpu_time_ms", 0.1 + 0.2 - 1e-17)
    assert rows[-1].kind == "other" and rows[-1].metrics["cpu_time_ms"] == 0.0
    rows = forward_calls(calls, paths, {"a#0": 0.1, "b#0": 0.2}, "cpu_time_ms", 0.25)
    assert rows[-1].metrics["cpu_time_ms"] == 0.0
    rows = forward_calls(calls, paths, {"a#0": 0.1, "b#0": 0.2}, "cpu_time_ms", 0.5)
    assert rows[-1].metrics["cpu_time_ms"] == pytest.approx(0.2)


def test_precision_shares_weigh_each_precision_by_node_time():
    runs = [{"conv": 3.0, "reorder": 1.0}, {"conv": 3.0, "reorder": 1.0, "new": 2.0}]
    assert precision_shares(runs, {"conv": "bfloat16", "reorder": "float32"}) == \
        {"bfloat16": 0.6, "float32": 0.2, "unknown": 0.2}


@needs_openvino
def test_openvino_stage_times_add_up_to_its_own_counters(tmp_path):
    """An independent re-sum: the last reading of OpenVINO's counters (means over every
    inference since compiling) times the inferences is the sum of the per-forward node
    times, so each stage's per-forward times add up to its nodes' counters re-summed."""
    from profiling.runtimes import profile_runtime

    model, x = _small()
    warmup, repeats = 0, 6
    profiled = profile_runtime(model, (x,), runtime="openvino", warmup=warmup, repeats=repeats,
                               attach=ATTACH, workdir=tmp_path)
    backend = profiled.backend
    warmed = profiled.result.noise["warmup"]["made"]  # settled: at least six untimed
    assert warmed >= 6
    count, means = backend.raw_means()
    before, means_before = backend.raw_means(warmed - 1)  # the reading after the warm-up
    assert (count, before) == (warmed + repeats, warmed)
    stage_map = profiled.stage_map
    for name in ("stem", "body", "head"):
        nodes = [node for node in means if stage_map.stage_of(node) == f"{name}#0"]
        assert nodes, name
        raw_ms = sum(count * means[node] - before * means_before.get(node, 0.0)
                     for node in nodes) / 1e3
        ours = sum(c.metrics["cpu_time_ms"] for forward in profiled.result.timed
                   for c in forward if c.name == name)
        assert abs(ours - raw_ms) <= len(nodes) * count / 1e3 + 1e-9, name
        assert ours > 0
    for forward, total in zip(profiled.result.timed, profiled.result.forward_ms):
        assert all(c.metrics["cpu_time_ms"] <= total for c in forward)
    assert profiled.deployment["node_time_rounding_ms"] == pytest.approx(
        len(means) * count / 2 / 1e3, abs=1e-4)


@needs_onnxruntime
def test_onnxruntime_stage_times_are_its_json_profile_resummed(tmp_path):
    """An independent re-sum: the ``_kernel_time`` events of each ``model_run`` in ONNX
    Runtime's own profile file, added up per stage, are the stage times of that forward."""
    from profiling.runtimes import profile_runtime

    model, x = _small()
    profiled = profile_runtime(model, (x,), runtime="onnxruntime", warmup=1, repeats=4,
                               attach=ATTACH, workdir=tmp_path)
    events = json.loads(profiled.backend.profile_file.read_text())
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("name") == "model_run")
    warmed = profiled.result.noise["warmup"]["made"]
    assert len(runs) == warmed + 4 and len(profiled.result.timed) == 4
    for (start, stop), forward in zip(runs[warmed:], profiled.result.timed):
        per_stage: dict[str, float] = {}
        for event in events:
            name = event.get("name", "")
            if event.get("cat") == "Node" and name.endswith("_kernel_time") and \
                    start <= event["ts"] <= stop:
                stage = profiled.stage_map.stage_of(name[:-len("_kernel_time")]) or "other"
                top = stage.split("#")[0]
                per_stage[top] = per_stage.get(top, 0.0) + event["dur"] / 1e3
        ours = {c.name: c.metrics["cpu_time_ms"] for c in forward}
        for name in ("stem", "body", "head"):
            assert ours[name] == pytest.approx(per_stage[name], abs=1e-9)


@needs_openvino
@pytest.mark.parametrize("dtype, expected", [("float32", "float32"), ("bfloat16", None)])
def test_openvino_executes_the_precision_the_run_names(dtype, expected, tmp_path):
    """Before: run.dtype=float32 ran in bfloat16 on CPUs with AVX-512 bf16 or AMX (OpenVINO's
    default INFERENCE_PRECISION_HINT there), 7e-3 of the output away from PyTorch."""
    import openvino as ov
    from profiling.runtimes import profile_runtime

    native = str(ov.Core().get_property("CPU", "INFERENCE_PRECISION_HINT"))
    expected = expected or ("bfloat16" if "bfloat16" in native else "float32")
    model, x = _small()
    profiled = profile_runtime(model, (x,), runtime="openvino", dtype=dtype, repeats=2,
                               attach=ATTACH, workdir=tmp_path)
    deployment = profiled.deployment
    assert deployment["inference_precision"] == dtype
    convolutions = [node for node in deployment["node_precisions"]
                    if node.startswith("node_Conv")]
    assert convolutions and {deployment["node_precisions"][n] for n in convolutions} == \
        {expected}
    assert max(deployment["executed_precision"], key=deployment["executed_precision"].get) \
        == expected
    relative = deployment["output_difference"]["relative_max_difference"]
    if expected == "float32":
        assert relative < 1e-5  # float32 round-off
    else:
        assert 1e-5 < relative < 0.1  # bfloat16's 8-bit mantissa


@needs_onnxruntime
def test_a_runtime_run_gets_the_noise_verdict_of_a_pytorch_run(tmp_path):
    """Before: runtime runs recorded ``noise: {}`` and never said timings were unreliable."""
    from profiling.runtimes import profile_runtime

    model, x = _small()
    profiled = profile_runtime(model, (x,), runtime="onnxruntime", repeats=3, attach=ATTACH,
                               workdir=tmp_path)
    noise = profiled.result.noise
    assert noise["repeats"] == 3
    assert noise["forward_median_ms"] == pytest.approx(np.median(profiled.result.forward_ms))
    assert "forward_cv" in noise and isinstance(noise["unreliable"], list)
    assert profiled.deployment["node_precisions"]
    assert set(profiled.deployment["executed_precision"]) <= {"float32", "int64", "unknown"}


def test_the_page_header_says_the_precision_the_runtime_executed():
    from profiling.reports.view import executed_precision

    meta = {"deployment": {"runtime": "openvino", "inference_precision": "bfloat16",
                           "executed_precision": {"bfloat16": 0.8, "float32": 0.2}},
            "config": {"run": {"dtype": "bfloat16"}}}
    assert executed_precision(meta) == "bfloat16 80% + float32 20% of node time"
    meta["deployment"]["executed_precision"] = {"bfloat16": 1.0}
    assert executed_precision(meta) == "bfloat16"
    assert executed_precision({"config": {"run": {"dtype": "float32"}}}) == "float32"  # PyTorch


