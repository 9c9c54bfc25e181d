"""Profiling as an inference runtime runs the network (profiling.runtimes, run.runtime).

The mapping tests need no runtime; the others skip without the ``runtimes`` extra."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from profiling import profile_model, stage
from profiling.stages import PayloadGroup, TensorLeaf
from profiling.runtimes.int8_payload import quantised_payload
from profiling.runtimes.stage_map import StageMap, enclosing_paths, part_path
from runtime_models import needs_onnxruntime, needs_openvino, seeded


class Staged(nn.Module):
    """Attached stages (encoder, conv inside it, head), a code stage and a repeated one."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        with stage("scale", x) as s:
            x = s.output(x * 2.0)
        for _ in range(2):
            with stage("shift", x) as s:
                x = s.output(x + 1.0)
        return self.head(x)


#: Staged's stages attached to its modules (beside its code stages).
ATTACH = {"encoder": "encoder", "conv": "encoder.0", "head": "head"}


def _model_and_input() -> tuple[nn.Module, torch.Tensor]:
    return seeded(Staged, 1, 3, 16, 16)


def test_enclosing_paths_lists_every_call_around_a_stage():
    assert enclosing_paths("a#0/b#1/c#0") == ["a#0", "a#0/b#1", "a#0/b#1/c#0"]
    assert enclosing_paths("") == []


def test_stage_map_follows_runtime_names_back_to_exported_nodes():
    mapping = StageMap({"node_Conv_1": "enc#0", "node_relu": "enc#0/act#0", "node_add": ""},
                       producers={"relu": "node_relu", "conv": "node_Conv_1"},
                       aliases={"ReorderOutput": ["conv"]}, input_readers={"x": "node_Conv_1"})
    assert mapping.stage_of("node_Conv_1_token_4") == "enc#0"  # a suffix stripped
    assert mapping.stage_of("relu_nchwc") == "enc#0/act#0"  # named after its output value
    assert mapping.stage_of("conv_QuantizeLinear") == "enc#0"
    assert mapping.stage_of("ReorderOutput") == "enc#0"  # through the runtime's own graph
    assert mapping.stage_of("node_Conv_1/fq_weights_1") == "enc#0"
    assert mapping.stage_of("x_abcd_acdb_node_relu/WithoutBiases") == "enc#0/act#0"
    assert mapping.stage_of("x_QuantizeLinear") == "enc#0"  # the input, where it is read
    assert mapping.stage_of("node_add") == ""
    assert mapping.stage_of("Transpose") is None
    times, unmapped = mapping.stage_times({"relu_nchwc": 2.0, "node_Conv_1": 3.0,
                                           "node_add": 0.5, "Transpose": 0.25})
    assert times == {"enc#0": 5.0, "enc#0/act#0": 2.0}  # a parent includes its children
    assert unmapped == 0.75


def test_a_path_inside_a_part_takes_the_call_indices_of_the_whole_forward():
    before = {"conv": 2, "block": 1, "body": 1}  # calls made before the part started
    assert part_path("body#0", "block#0/conv#0", before) == "body#0/block#1/conv#2"
    assert part_path("body#0", "block#1/conv#1", before) == "body#0/block#2/conv#3"
    assert part_path("", "head#0", before) == "head#0"  # a name not seen before
    assert part_path("body#0", "", before) == "body#0"  # a node outside the part's stages
    assert part_path("", "a#b#0", {"a#b": 4}) == "a#b#4"  # a name with '#' in it


def test_quantised_payload_counts_one_byte_per_quantised_element():
    leaf = TensorLeaf((1, 8, 4, 4), torch.float32, "cpu", 512)
    other = TensorLeaf((1, 2), torch.float32, "cpu", 8)
    tree = PayloadGroup("tuple", ((0, leaf), (1, other)), 520)
    result = quantised_payload(tree, [(1, 8, 4, 4)])
    assert result.nbytes == 128 + 8
    assert result.items[0][1].dtype == torch.int8 and result.items[1][1].dtype == torch.float32


@needs_onnxruntime
def test_export_tags_code_attached_and_repeated_stages(tmp_path):
    from profiling.runtimes.export import export_onnx

    model, x = _model_and_input()
    exported = export_onnx(model, (x,), tmp_path / "model.onnx", attach=ATTACH)
    assert set(exported.node_stages.values()) >= {"encoder#0", "scale#0", "shift#0",
                                                  "shift#1", "head#0"}
    assert exported.input_names == ["x"] and len(exported.output_names) == 1


def _torch_stage_names(model: nn.Module, x: torch.Tensor) -> list[str]:
    result = profile_model(model, (x,), collectors=["payload"], attach=ATTACH, repeats=1)
    return list(result.stages["stage"])


def _check_times_add_up(profiled) -> None:
    """The top-level stages plus ``other`` are each timed forward, the stages inside
    ``encoder`` plus ``encoder/other`` are ``encoder``, and nearly all of the runtime's node
    time maps to stages."""
    result = profiled.result
    top = result.stages[result.stages["depth"] == 0]
    assert list(top["stage"]) == ["encoder", "scale", "shift", "shift", "head", "other"]
    for forward, forward_ms in zip(result.timed, result.forward_ms):
        times = {c.name: c.metrics["cpu_time_ms"] for c in forward}
        assert sum(c.metrics["cpu_time_ms"] for c in forward if c.depth == 0) == \
            pytest.approx(forward_ms, rel=1e-9)
        assert times["conv"] + times["encoder/other"] == pytest.approx(times["encoder"])
        assert all(value >= 0 for name, value in times.items() if "other" not in name)
    assert profiled.deployment["mapped_share"] > 0.9


@needs_onnxruntime
@pytest.mark.parametrize("runtime", ["onnxruntime", pytest.param("openvino", marks=needs_openvino)])
def test_float32_run_has_the_torch_stages_and_times_that_add_up(runtime, tmp_path):
    from profiling.runtimes import profile_runtime

    model, x = _model_and_input()
    profiled = profile_runtime(model, (x,), runtime=runtime, repeats=3, attach=ATTACH,
                               workdir=tmp_path)
    stages = profiled.result.stages
    assert list(stages["stage"]) == _torch_stage_names(model, x)
    assert "encoder/other" in list(stages["stage"])
    assert set(stages["engine"]) == {runtime}
    _check_times_add_up(profiled)
    head = stages.set_index("stage").loc["head"]
    assert head["out_bytes"] == 4 * 16 * 16 * 4  # [1, 4, 16, 16] float32
    assert stages.set_index("stage").loc["head", "macs"] == 8 * 4 * 16 * 16  # 1x1 conv
    reference = model(x).detach().numpy()
    assert np.allclose(profiled.outputs[0], reference, atol=1e-5)
    assert profiled.deployment["runtime"] == runtime
    # the same model timed with the runtime's profiler on and off in interleaved rounds
    assert profiled.deployment["unprofiled_forward_ms_median"] > 0
    overhead = profiled.deployment["profiler_overhead"]
    assert overhead["rounds"] == 10 and overhead["confidence"] == 0.95
    assert overhead["low"] <= overhead["ratio"] <= overhead["high"]
    # sessions that take turns keep ONNX Runtime's threads from spinning, and say so
    assert profiled.deployment["paired_session_settings"] == (
        {"session.intra_op.allow_spinning": "0"} if runtime == "onnxruntime" else {})


def test_a_slow_runtime_profiler_and_a_slow_int8_are_said():
    from zoo.deploy.in_runtime import _speed_notes

    info = {"runtime": "onnxruntime",
            "profiler_overhead": {"ratio": 1.16, "low": 1.1, "high": 1.2, "confidence": 0.95,
                                  "rounds": 10},
            "unprofiled_forward_ms_median": 74.5,
            "int8_speedup": {"ratio": 0.8, "low": None, "high": None, "confidence": 0.95,
                             "rounds": 5},
            "float32_forward_ms_median": 10.5}
    first, second = _speed_notes(info)
    assert first.startswith("int8 is slower than float32 in onnxruntime here: the int8 "
                            "forward took 1.25x the float32 one")
    assert first.endswith("see docs/runtimes.md)")  # 5 rounds: no interval to quote
    # ratios only: the paired rounds' own times are not the run's regime (cold caches)
    assert second.startswith("onnxruntime's profiler made the forward 1.16x slower here: the "
                             "stage times and the total are the profiled ones, and the forward "
                             "as deployed takes about 86% of the total")
    assert second.endswith("; profiled/unprofiled 95% interval 1.1-1.2x over 10 interleaved "
                           "rounds")
    assert _speed_notes({**info, "profiler_overhead": 1.04, "int8_speedup": 1.3}) == []


@needs_onnxruntime
@pytest.mark.parametrize("runtime", [
    "onnxruntime", pytest.param("openvino", marks=[needs_openvino, pytest.mark.slow])])
def test_int8_run_quantises_the_boundaries_to_one_byte_per_element(runtime, tmp_path):
    from profiling.runtimes import profile_runtime

    model, x = _model_and_input()
    calibration = [(torch.randn(1, 3, 16, 16),) for _ in range(4)]
    profiled = profile_runtime(model, (x,), runtime=runtime, dtype="int8", repeats=2,
                               attach=ATTACH, calibration=calibration, workdir=tmp_path)
    stages = profiled.result.stages.set_index("stage")
    # the head's convolution reads its input quantised: [1, 8, 16, 16] at one byte each
    assert stages.loc["head", "in_bytes"] == 8 * 16 * 16
    assert stages.loc["head", "out_bytes"] == 4 * 16 * 16 * 4  # the float32 model output
    assert stages.loc["head", "macs"] == 8 * 4 * 16 * 16  # counts do not change
    difference = profiled.deployment["int8_output"]
    assert 0 < difference["mean_abs_difference"] < 0.1
    assert difference["max_abs_difference"] >= difference["mean_abs_difference"]
    speedup = profiled.deployment["int8_speedup"]
    assert speedup["low"] <= speedup["ratio"] <= speedup["high"] and speedup["rounds"] == 10
    assert profiled.deployment["float32_forward_ms_median"] > 0
    _check_times_add_up(profiled)


@pytest.mark.parametrize("overrides, message", [
    (["run.dtype=int8"], "run.dtype=int8 needs an inference runtime"),
    (["run.runtime=onnxruntime", "device=meta"], "device=meta computes nothing"),
    (["run.runtime=onnxruntime", "run.dtype=bfloat16"], "runs run.dtype=float32 or int8"),
    (["run.runtime=onnxruntime", "run.channels_last=true"], "run.channels_last=true is a "
                                                            "PyTorch option"),
])
def test_runtime_combinations_that_cannot_run_are_one_line_refusals(overrides, message,
                                                                    tmp_path):
    from zoo.tools.job import run_profile
    from zoo.tools.composition import compose_config
    from zoo.options import ConfigError

    cfg = compose_config(["model=swiftnet", "input.size=[32,32]", *overrides])
    with pytest.raises(ConfigError, match=message):
        run_profile(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_an_unknown_runtime_and_a_missing_extra_are_refused(monkeypatch, tmp_path):
    from profiling.errors import MissingExtra
    from zoo.tools.composition import check_overrides, compose_config
    from zoo.tools.job import run_profile

    assert "accepted: one of torch, onnxruntime, openvino" in check_overrides(
        ["run.runtime=tensorflow"])
    monkeypatch.setattr("profiling.runtimes.missing_packages", lambda runtime, dtype: ["nncf"])
    monkeypatch.setitem(__import__("sys").modules, "nncf", None)
    cfg = compose_config(["model=swiftnet", "run.runtime=openvino", "run.dtype=int8"])
    with pytest.raises(MissingExtra, match=r"pip install 'stagezoo\[runtimes\]'"):
        run_profile(cfg, tmp_path / "run")


class Branching(Staged):
    """``Staged`` whose ``scale`` stage branches on a value: the whole model does not export,
    its ``encoder`` and ``head`` do."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        with stage("scale", x) as s:
            x = s.output(x * 2.0 if float(x.mean()) > -1e9 else x)
        return self.head(x)


@needs_onnxruntime
@pytest.mark.parametrize("runtime, dtype", [
    ("onnxruntime", "float32"),
    pytest.param("onnxruntime", "int8", marks=pytest.mark.slow),
    pytest.param("openvino", "float32", marks=[needs_openvino, pytest.mark.slow])])
def test_parts_that_do_not_export_run_in_pytorch_and_say_so(runtime, dtype, tmp_path):
    from profiling.runtimes import profile_runtime

    model, x = seeded(Branching, 1, 3, 16, 16)
    attach = {"encoder": "encoder", "conv": "encoder.0", "head": "head"}
    profiled = profile_runtime(model, (x,), runtime=runtime, dtype=dtype, repeats=2,
                               attach=attach, workdir=tmp_path / "work",
                               cache_folder=tmp_path / "cache")
    stages = profiled.result.stages
    torch_run = profile_model(model, (x,), collectors=["payload"], attach=attach, repeats=1)
    assert list(stages["stage"]) == list(torch_run.stages["stage"])
    engines = dict(zip(stages["stage"], stages["engine"]))
    assert engines == {"encoder": runtime, "conv": runtime, "encoder/other": runtime,
                       "scale": "torch", "head": runtime, "other": f"torch+{runtime}"}
    assert set(profiled.deployment["parts"]) == {"encoder", "head"}
    assert "data-dependent" in profiled.deployment["in_torch"][""]
    assert all("forward" not in m.__dict__ for m in model.modules())  # put back
    for forward, forward_ms in zip(profiled.result.timed, profiled.result.forward_ms):
        times = {c.name: c.metrics["cpu_time_ms"] for c in forward}
        assert sum(c.metrics["cpu_time_ms"] for c in forward if c.depth == 0) == \
            pytest.approx(forward_ms)
        assert times["conv"] > 0 and times["scale"] > 0  # one from each engine
    # conv reads the part's input [1, 3, 16, 16]: quantised in int8, one byte per element
    conv_in = stages.set_index("stage").loc["conv", "in_bytes"]
    assert conv_in == 3 * 16 * 16 * (1 if dtype == "int8" else 4)
    expected = model(x).detach().numpy()
    tolerance = 1e-4 if dtype == "float32" else 0.5
    assert np.allclose(profiled.outputs[0], expected, atol=tolerance)


class Block(nn.Module):
    """A convolution inside a code stage named ``conv``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with stage("conv", x) as s:
            return s.output(torch.relu(self.conv(x)))


class Body(nn.Module):
    """Calls its one block twice."""

    def __init__(self) -> None:
        super().__init__()
        self.block = Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(self.block(x))


class Repeating(nn.Module):
    """``conv`` stages in PyTorch before and after an exported part (``body``) that enters
    ``block`` and ``conv`` twice; a branch on a value keeps the whole model from exporting."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 1)
        self.body = Body()
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        with stage("conv", x) as s:
            x = s.output(x * 2.0 if float(x.mean()) > -1e9 else x)
        x = self.body(x)
        with stage("conv", x) as s:
            x = s.output(x + 1.0)
        return self.head(x)


@needs_onnxruntime
def test_a_stage_repeated_inside_a_part_keeps_the_call_indices_of_a_torch_run(tmp_path):
    from profiling.runtimes import profile_runtime

    model, x = seeded(Repeating, 1, 3, 8, 8)
    attach = {"body": "body", "block": "body.block"}
    profiled = profile_runtime(model, (x,), runtime="onnxruntime", repeats=2, attach=attach,
                               workdir=tmp_path)
    assert set(profiled.deployment["parts"]) == {"stem", "body", "head"}
    torch_run = profile_model(model, (x,), collectors=["payload"], attach=attach, repeats=1)
    columns = ["stage", "parent", "depth", "call_index"]
    assert profiled.result.stages[columns].values.tolist() == \
        torch_run.stages[columns].values.tolist()
    stages = profiled.result.stages
    engines = {(name, index): engine for name, index, engine, kind in zip(
        stages["stage"], stages["call_index"], stages["engine"], stages["kind"])
        if kind == "stage"}
    assert engines == {("conv", 0): "torch", ("body", 0): "onnxruntime",
                       ("block", 0): "onnxruntime", ("conv", 1): "onnxruntime",
                       ("block", 1): "onnxruntime", ("conv", 2): "onnxruntime",
                       ("conv", 3): "torch"}
    for forward, forward_ms in zip(profiled.result.timed, profiled.result.forward_ms):
        times = {(c.name, c.call_index): c.metrics["cpu_time_ms"] for c in forward}
        # each conv call has its own engine's time: the runtime's nodes inside the part,
        # PyTorch's clock around the code before and after it
        assert all(times[("conv", index)] > 0 for index in range(4))
        for block in (0, 1):  # the block's only nodes are its conv's
            assert times[("block", block)] == pytest.approx(times[("conv", block + 1)])
        assert times[("body", 0)] >= times[("block", 0)] + times[("block", 1)]
        assert sum(c.metrics["cpu_time_ms"] for c in forward if c.depth == 0) == \
            pytest.approx(forward_ms)


@needs_onnxruntime
def test_an_export_is_cached_by_model_options_and_input_shape(monkeypatch, tmp_path):
    from profiling.runtimes import profile_runtime
    from profiling.runtimes.cache import export_key

    model, x = _model_and_input()
    first = profile_runtime(model, (x,), runtime="onnxruntime", repeats=1, attach=ATTACH,
                            workdir=tmp_path / "a", cache_folder=tmp_path / "cache")
    monkeypatch.setattr("profiling.runtimes.profile.export_onnx", None)  # must not export
    again = profile_runtime(model, (x,), runtime="onnxruntime", repeats=1, attach=ATTACH,
                            workdir=tmp_path / "b", cache_folder=tmp_path / "cache")
    assert (first.deployment["export_cache"], again.deployment["export_cache"]) == \
        ("miss", "hit")
    assert list(again.result.stages["stage"]) == list(first.result.stages["stage"])
    key = export_key(model, (x,), attach=ATTACH)
    assert key != export_key(model, (torch.randn(1, 3, 8, 8),), attach=ATTACH)  # shape
    assert key != export_key(model, (x,), attach={"head": "head"})  # options
    with torch.no_grad():
        model.head.bias += 1
    assert key != export_key(model, (x,), attach=ATTACH)  # weights
    assert len(list((tmp_path / "cache").iterdir())) == 1


def test_trace_with_a_runtime_is_a_one_line_refusal(tmp_path):
    from zoo.options import ConfigError
    from zoo.tools.composition import compose_config
    from zoo.tools.job import run_profile

    cfg = compose_config(["model=swiftnet", "input.size=[32,32]", "run.runtime=onnxruntime",
                          "trace=true"])
    with pytest.raises(ConfigError, match="trace=true traces the PyTorch forward"):
        run_profile(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@needs_onnxruntime
@pytest.mark.slow
def test_compare_a_torch_run_with_a_runtime_run(tmp_path, monkeypatch, capsys):
    from zoo.tools.composition import compose_config
    from zoo.tools.compare import main
    from zoo.tools.job import run_profile

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fast = ["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
            "run.warmup=1", "run.repeats=2"]
    run_profile(compose_config(fast), tmp_path / "torch", print_summary=False)
    run_profile(compose_config([*fast, "run.runtime=onnxruntime", "run.dtype=int8"]),
                tmp_path / "ort", print_summary=False)
    main([str(tmp_path / "torch"), str(tmp_path / "ort"), "--out", str(tmp_path / "cmp.csv")])
    printed = capsys.readouterr().out
    assert "run.runtime: torch -> onnxruntime" in printed
    table = pd.read_csv(tmp_path / "cmp.csv").set_index("stage")
    assert (table.loc[table["kind"] == "stage", "present"] == "both").all()
    # layer1 reads [1, 64, 8, 8]: float32 in PyTorch, quantised to one byte per element
    assert table.loc["layer1", "in_bytes_a"] == 64 * 8 * 8 * 4
    assert table.loc["layer1", "in_bytes_b"] == 64 * 8 * 8
    assert table.loc["layer1", "cpu_time_ms_median_a"] > 0
    assert table.loc["layer1", "cpu_time_ms_median_b"] > 0


@needs_onnxruntime
def test_a_part_the_runtime_cannot_run_stays_in_pytorch(monkeypatch, tmp_path):
    from profiling.runtimes import profile_runtime
    from profiling.runtimes import hybrid

    real = hybrid.make_backend

    def refuse_the_head(runtime, path, *args, **kwargs):
        if path.name == "part1.onnx":  # the head, exported second
            raise RuntimeError("unsupported operator\nmore detail")
        return real(runtime, path, *args, **kwargs)

    monkeypatch.setattr(hybrid, "make_backend", refuse_the_head)
    model, x = seeded(Branching, 1, 3, 16, 16)
    profiled = profile_runtime(model, (x,), runtime="onnxruntime", repeats=1,
                               attach={"encoder": "encoder", "conv": "encoder.0",
                                       "head": "head"}, workdir=tmp_path)
    engines = dict(zip(profiled.result.stages["stage"], profiled.result.stages["engine"]))
    assert (engines["encoder"], engines["head"]) == ("onnxruntime", "torch")
    assert profiled.deployment["in_torch"]["head"] == \
        "onnxruntime could not run it: unsupported operator"
    assert list(profiled.deployment["parts"]) == ["encoder"]
    assert np.allclose(profiled.outputs[0], model(x).detach().numpy(), atol=1e-4)


@needs_onnxruntime
def test_a_model_the_runtime_cannot_run_whole_runs_in_parts(monkeypatch, tmp_path):
    from profiling.runtimes import profile, profile_runtime

    real = profile.make_backend

    def refuse_the_whole(runtime, path, *args, **kwargs):
        if path.name == "model.onnx":
            raise RuntimeError("segment too large")
        return real(runtime, path, *args, **kwargs)

    monkeypatch.setattr(profile, "make_backend", refuse_the_whole)
    model, x = _model_and_input()
    profiled = profile_runtime(model, (x,), runtime="onnxruntime", repeats=1, attach=ATTACH,
                               workdir=tmp_path)
    assert profiled.deployment["in_torch"][""] == \
        "onnxruntime could not run it: segment too large"
    assert set(profiled.deployment["parts"]) == {"encoder", "head"}
    engines = dict(zip(profiled.result.stages["stage"], profiled.result.stages["engine"]))
    assert (engines["conv"], engines["scale"]) == ("onnxruntime", "torch")


@pytest.mark.runtimes
def test_onnxruntime_on_cuda_needs_the_cuda_execution_provider(monkeypatch):
    from profiling import ProfilingError
    from profiling.runtimes.onnxruntime_backend import default_provider
    from zoo.deploy import Deployment

    def providers(*names):
        monkeypatch.setattr("onnxruntime.get_available_providers", lambda: list(names))

    providers("CUDAExecutionProvider", "CPUExecutionProvider")
    assert default_provider("cuda") == "CUDAExecutionProvider"
    assert default_provider("cpu") == "CPUExecutionProvider"
    Deployment(runtime="onnxruntime").check(torch.device("cuda"))  # accepted
    providers("CPUExecutionProvider")  # the CPU-only package: it would run on the CPU
    assert default_provider("cpu") == "CPUExecutionProvider"
    with pytest.raises(ProfilingError, match="install onnxruntime-gpu in place of onnxruntime"):
        default_provider("cuda")
    with pytest.raises(ProfilingError, match="needs its CUDAExecutionProvider"):
        Deployment(runtime="onnxruntime").check(torch.device("cuda"))  # before any model
    Deployment(runtime="onnxruntime").check(torch.device("cpu"))
    providers("TensorrtExecutionProvider", "CPUExecutionProvider")
    with pytest.raises(ProfilingError):
        default_provider("cuda")


@pytest.mark.runtimes
def test_onnxruntime_sessions_that_take_turns_do_not_spin_and_quiet_silences_its_log(
        monkeypatch, tmp_path):
    """What ONNX Runtime's executor declares is what its sessions apply: idle threads that
    do not spin only in a session opened to take turns; and ``quiet()`` keeps its C++ log at
    fatal errors (severity 4), back at warnings (2) afterwards."""
    import onnxruntime

    from profiling.runtimes import executor
    from profiling.runtimes.export import export_onnx
    from profiling.runtimes.quiet import quiet

    model, x = _model_and_input()
    path = export_onnx(model, (x,), tmp_path / "model.onnx").path
    spinning = "session.intra_op.allow_spinning"

    def options(interleaved: bool):
        return executor("onnxruntime").open(path, tmp_path, "cpu", profile=False,
                                            interleaved=interleaved).session.get_session_options()

    assert options(True).get_session_config_entry(spinning) == "0"
    with pytest.raises(RuntimeError, match="does not have configuration with key"):
        options(False).get_session_config_entry(spinning)  # ONNX Runtime's default: spinning
    severities = []
    monkeypatch.setattr(onnxruntime, "set_default_logger_severity", severities.append)
    with quiet():
        assert severities == [4]
    assert severities == [4, 2]
