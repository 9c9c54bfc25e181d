"""The contract every registered executor keeps (profiling.runtimes.registry).

Each registered executor opens a tiny exported model, runs it (its outputs are PyTorch's),
gives per-node times for each timed forward that add up to at most the forward's wall time,
describes the precision it executed, and opens sessions that take turns with the settings it
declares. A new executor is checked here without a line of its own: the parameters are the
registry's."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from profiling import stage
from profiling.errors import ProfilingError
from profiling.runtimes import executor, missing_packages, register_executor
from profiling.runtimes import registry
from profiling.runtimes.paired_speed import interleaved_settings
from profiling.runtimes.registry import Executor, registered_executors

ROOT = Path(__file__).resolve().parents[1]


class Tiny(nn.Module):
    """A convolution stage and an elementwise one: nodes the runtimes keep apart or fuse."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with stage("conv", x) as s:
            x = s.output(self.conv(x))
        with stage("act", x) as s:
            return s.output(torch.relu(x) * 2.0)


EXECUTORS = [pytest.param(name, marks=[pytest.mark.runtimes, pytest.mark.skipif(
    bool(missing_packages(name)), reason=f"{name} is not installed")])
    for name in registered_executors()]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The tiny model exported once, its input as a feed, and PyTorch's output."""
    from profiling.runtimes.export import export_onnx

    torch.manual_seed(0)
    model, x = Tiny().eval(), torch.randn(1, 3, 8, 8)
    folder = tmp_path_factory.mktemp("contract")
    with torch.no_grad():
        expected = model(x).numpy()
    return export_onnx(model, (x,), folder / "tiny.onnx").path, [x.numpy()], expected, folder


@pytest.mark.parametrize("name", EXECUTORS)
def test_an_executor_declares_what_it_runs(name):
    cls = registered_executors()[name]
    assert cls.name == name and "float32" in cls.dtypes
    assert set(cls.devices) <= {"cpu", "cuda"} and "cpu" in cls.devices
    assert ("int8" in cls.dtypes) == bool(cls.quantiser)
    assert set(cls.packages) >= {"onnx"}  # it runs the exported ONNX model
    assert executor(name).needed("int8")[:len(cls.packages)] == cls.packages
    settings = dict(cls.interleaved_settings)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in settings.items())
    assert interleaved_settings(name) == settings  # what meta.json records of such sessions
    assert executor(name).session_settings(interleaved=False) == {}
    for suffix in cls.node_name_suffixes:  # each a pattern that strips something
        assert not re.fullmatch(suffix, ""), suffix


@pytest.mark.parametrize("name", EXECUTORS)
def test_an_executor_runs_the_model_and_times_its_nodes_within_the_forward(name, exported):
    from profiling.runtimes.backends import time_session

    model_file, feeds, expected, folder = exported
    session = executor(name).open(model_file, folder, "cpu", profile=True, dtype="float32")
    forward_ms, outputs, noise = time_session(session, feeds, warmup=1, repeats=3)
    assert len(forward_ms) == 3 and noise["repeats"] == 3
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-4, atol=1e-5)
    node_runs = session.node_times(noise["warmup"]["made"])  # warmed up until settled
    assert len(node_runs) == 3
    for node_times, total in zip(node_runs, forward_ms):
        assert node_times and min(node_times.values()) >= 0
        assert sum(node_times.values()) <= total + session.rounding_bound_ms()
    facts = session.describe()
    assert facts["runtime"] == name and facts["inference_precision"] == "float32"
    assert facts["version"] and facts["execution_provider"]
    assert "float32" in session.node_precisions().values()
    plain = executor(name).open(model_file, folder, "cpu", profile=False, dtype="float32")
    np.testing.assert_allclose(plain.run(feeds)[0], outputs[0], rtol=1e-6, atol=1e-7)
    taking_turns = executor(name).open(model_file, folder, "cpu", profile=False,
                                       dtype="float32", interleaved=True)
    np.testing.assert_allclose(taking_turns.run(feeds)[0], outputs[0], rtol=1e-6, atol=1e-7)


def test_the_registry_refuses_a_second_name_and_int8_without_a_quantiser(monkeypatch):
    monkeypatch.setattr(registry, "_EXECUTORS", dict(registry._EXECUTORS))

    class Again(Executor):
        name, packages = "onnxruntime", ("onnx",)

    with pytest.raises(ValueError, match="two executors named 'onnxruntime'"):
        register_executor(Again)

    class Unquantised(Executor):
        name, dtypes = "unquantised", ("float32", "int8")

    with pytest.raises(ValueError, match="names its quantiser"):
        register_executor(Unquantised)

    class Untyped(Executor):
        name, interleaved_settings = "untyped", {"threads": 1}

    with pytest.raises(TypeError, match="interleaved_settings maps setting names to string "
                                        "values"):
        register_executor(Untyped)
    with pytest.raises(ProfilingError, match="unknown runtime 'tensorrt'; accepted: "
                                             "onnxruntime, openvino$"):
        executor("tensorrt")
    with pytest.raises(ProfilingError, match="dtype 'float16' is not run by onnxruntime; "
                                             "accepted: float32, int8$"):
        executor("onnxruntime", "float16")


@pytest.mark.runtimes  # the runtime's packages are checked before its name is
def test_an_executor_registered_later_is_an_accepted_run_runtime(monkeypatch):
    from zoo.options import SCHEMA

    monkeypatch.setattr(registry, "_EXECUTORS", dict(registry._EXECUTORS))
    assert not SCHEMA["run.runtime"].ok("toy")

    @register_executor
    class Toy(Executor):
        name, packages = "toy", ("onnx",)

    assert SCHEMA["run.runtime"].ok("toy")
    assert SCHEMA["run.runtime"].accepts == "one of torch, onnxruntime, openvino, toy"
    assert missing_packages("toy") == []


def test_the_help_lists_the_registered_runtimes_from_the_declared_option():
    from zoo.options import options_help

    entry = options_help().split("run.runtime=torch", 1)[1].split("\n  run.", 1)[0]
    assert f"accepted: one of {', '.join(['torch', *registered_executors()])}" in \
        " ".join(entry.split())


_RUNTIME_LIST = re.compile(r"run\.runtime=((?:\w+\\?\|)+\w+)")


@pytest.mark.parametrize("path", ["README.md", *sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))])
def test_every_list_of_runtimes_in_the_docs_names_the_registered_ones(path):
    """``run.runtime=A|B`` in README.md and docs/ names every registered runtime (torch
    aside), no more: a runtime is one registered module, never a name in several lists."""
    for listed in _RUNTIME_LIST.findall((ROOT / path).read_text(encoding="utf-8")):
        names = [name for name in listed.replace("\\", "").split("|") if name != "torch"]
        assert names == list(registered_executors()), (path, listed)


def test_a_session_is_timed_by_the_runners_loop_with_automatic_repeats():
    """Runtime forwards stop as PyTorch's do (profiling.runner.repeats): at the minimum of
    automatic repeats on quiet data, the warm-up untimed, the counters read after each."""
    from profiling.runtimes.backends import time_session
    from profiling.statistics import AutoRepeats

    now = [0]
    calls = []

    class Session:
        def run(self, feeds):
            now[0] += 10_000_000  # 10 ms a forward
            calls.append("run")
            return [feeds[0] * 2]

        def record(self):
            calls.append("record")

    progress = []
    forward_ms, outputs, noise = time_session(
        Session(), [np.ones(2)], warmup=1, repeats=AutoRepeats(0.02, 60.0, 4),
        progress=lambda *step: progress.append(step), clock=lambda: now[0])
    assert forward_ms == [10.0] * 4 and outputs[0].tolist() == [2.0, 2.0]
    # warmed up until settled: two windows of three steady forwards, then the four timed
    assert noise["warmup"] == {"asked": 1, "made": 6, "settled": True}
    assert calls == ["run", "record"] * 10
    auto = noise["auto_repeats"]
    assert (auto["stopped_by"], auto["repeats"], auto["elapsed_s"]) == ("target", 4, 0.04)
    assert progress == [("warmup", 1, 5), *[("warmup", k, k + 4) for k in range(2, 7)],
                        *[("repeats", k, 10) for k in range(7, 11)]]


@pytest.mark.runtimes  # the runtime's packages are checked before the device
def test_the_app_refuses_a_device_or_dtype_the_executor_does_not_declare(monkeypatch):
    from zoo.deploy import Deployment
    from zoo.options import ConfigError
    from zoo.deploy import check_runtime

    with pytest.raises(ConfigError, match=r"^run.runtime=openvino runs on device=cpu here; use "
                                          r"device=cpu or run.runtime=onnxruntime for "
                                          r"device=cuda$"):
        check_runtime(Deployment(runtime="openvino"), torch.device("cuda"))
    with pytest.raises(ConfigError, match=r"^run.runtime=onnxruntime runs run.dtype=float32 or "
                                          r"int8, got run.dtype=bfloat16; "):
        check_runtime(Deployment(runtime="onnxruntime", dtype="bfloat16"), torch.device("cpu"))
    monkeypatch.setattr(registry, "_EXECUTORS", dict(registry._EXECUTORS))

    @register_executor
    class Quantising(Executor):
        name, dtypes, quantiser = "quantising", ("float32", "int8"), "a toy quantiser"

    with pytest.raises(ConfigError, match="add run.runtime=onnxruntime or run.runtime=openvino "
                                          "or run.runtime=quantising "):
        check_runtime(Deployment(dtype="int8"), torch.device("cpu"))


def test_quiet_keeps_every_executors_native_log_and_the_loggers_quiet_and_restores_them(
        monkeypatch, capsys):
    """``quiet()`` names no runtime: it enters each registered executor's
    ``quiet_native_log`` and lowers the loggers of its packages, and puts both back, after an
    exception too."""
    import contextlib
    import logging

    from profiling.runtimes.quiet import quiet

    monkeypatch.setattr(registry, "_EXECUTORS", dict(registry._EXECUTORS))
    events = []

    @register_executor
    class Loud(Executor):
        name, packages = "loud", ("onnx", "loud_runtime")

        @classmethod
        @contextlib.contextmanager
        def quiet_native_log(cls):
            events.append("quiet")
            try:
                yield
            finally:
                events.append("back")

    logger = logging.getLogger("loud_runtime")
    monkeypatch.setattr(logger, "level", logging.INFO)
    with pytest.raises(RuntimeError, match="^failed$"):
        with quiet():
            assert events == ["quiet"] and logger.level == logging.ERROR
            print("progress chatter")
            raise RuntimeError("failed")
    assert events == ["quiet", "back"] and logger.level == logging.INFO
    assert capsys.readouterr().out == ""


def test_a_suffix_an_executor_declares_leads_a_node_name_back_to_its_exported_node(
        monkeypatch):
    """The stage map names no runtime: it strips the suffixes the registered executors
    declare (``node_name_suffixes``), a new one's as soon as it is registered."""
    from profiling.runtimes.stage_map import StageMap

    monkeypatch.setattr(registry, "_EXECUTORS", dict(registry._EXECUTORS))

    def placed(name):
        return StageMap({"node_conv": "encoder#0/conv#0"}, {}).stage_of(name)

    assert placed("node_conv_nchwc") == "encoder#0/conv#0"  # ONNX Runtime's layout pass
    assert placed("node_conv_toy7") is None

    @register_executor
    class Renaming(Executor):
        name, packages, node_name_suffixes = "renaming", ("onnx",), (r"_toy\d",)

    assert placed("node_conv_toy7") == "encoder#0/conv#0"
    assert placed("node_conv_toy") is None  # the pattern, not a prefix of it
