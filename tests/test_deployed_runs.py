"""As deployed through the app: option checks, autocast, compiled runs, CLI errors and sweeps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from profiling.stages import call_model
from zoo.tools.job import run_profile
from zoo.tools.job_inputs import prepare
from zoo.tools.composition import compose_config
from zoo.deploy import Deployment, roofline_dtype
from zoo.options import ConfigError

from test_deployed import relative_error

ROOT = Path(__file__).resolve().parents[1]
CPU, META = torch.device("cpu"), torch.device("meta")


def test_options_are_checked_strictly():
    assert Deployment.from_config({}) == Deployment()
    assert Deployment.from_config({"dtype": "bfloat16", "channels_last": True}).torch_dtype \
        == torch.bfloat16
    for bad, message in (({"dtype": "float64"}, "run.dtype='float64' is not accepted"),
                         ({"channels_last": "no"}, "run.channels_last='no' is not accepted"),
                         ({"compile_mode": "fast"}, "accepted: one of default, reduce-overhead")):
        with pytest.raises(ConfigError, match=message):
            Deployment.from_config(bad)


@pytest.mark.parametrize("deployment, device, message", [
    (Deployment(autocast=True), CPU, "run.autocast=true needs run.dtype=bfloat16 or float16"),
    (Deployment(dtype="bfloat16", autocast=True), META, "run.autocast=true needs real"),
    (Deployment(compile=True), META, "run.compile=true needs real computation"),
])
def test_bad_combinations_are_refused_in_one_line(deployment, device, message):
    with pytest.raises(ConfigError, match=message) as error:
        deployment.check(device)
    assert "\n" not in str(error.value)


def test_compile_needs_a_timed_warm_up():
    with pytest.raises(ConfigError, match="needs run.warmup >= 1"):
        Deployment(compile=True).check(CPU, warmup=0)
    with pytest.raises(ConfigError, match="no timer among its collectors"):
        Deployment(compile=True).check(CPU, timed=False)


def test_roofline_dtype_is_tf32_where_float32_runs_on_tf32_tensor_cores(monkeypatch):
    cfg = {"run": {"dtype": "float32"}, "roofline": {"dtype": None}}
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    assert roofline_dtype(cfg, "cuda") == "tf32"
    assert roofline_dtype(cfg, "cpu") == "float32"
    assert roofline_dtype({"run": {"dtype": "bfloat16"}, "roofline": {"dtype": None}},
                          "cuda") == "bfloat16"
    assert roofline_dtype({"run": {"dtype": "float32"}, "roofline": {"dtype": "float32"}},
                          "cuda") == "float32"
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    assert roofline_dtype(cfg, "cuda") == "float32"


def test_roofline_dtype_follows_run_dtype_unless_set():
    assert roofline_dtype({"run": {"dtype": "bfloat16"}, "roofline": {"dtype": None}}) \
        == "bfloat16"
    assert roofline_dtype({"run": {"dtype": "bfloat16"}, "roofline": {"dtype": "tf32"}}) \
        == "tf32"
    assert roofline_dtype(compose_config(["run.dtype=float16"])) == "float16"


def test_a_missing_half_kernel_is_a_one_line_error():
    with pytest.raises(ConfigError, match="cannot run in float16 on cpu: torch has no Half "
                                          "kernel of nms_kernel there"):
        with Deployment(dtype="float16").running(CPU, "faster_rcnn"):
            raise RuntimeError('operator(), nms_kernel.cpp:122, "nms_kernel" not implemented '
                               "for 'Half'")


def test_autocast_payload_is_what_the_tensors_are():
    cfg = compose_config(["model=swiftnet", "input.size=[32,32]", "run.dtype=bfloat16",
                          "run.autocast=true"])
    model, inputs, _, _ = prepare(cfg, CPU)
    assert next(model.parameters()).dtype == torch.float32 and inputs[0].dtype == torch.float32
    with Deployment.from_config(cfg.run).running(CPU, "swiftnet"), torch.inference_mode():
        output = call_model(model, inputs)
    assert output.dtype == torch.bfloat16  # the last convolution ran under autocast
    assert list(output.shape) == [1, 19, 32, 32]


def test_meta_run_in_bfloat16_halves_the_input_payload(tmp_path):
    cfg = compose_config(["model=swiftnet", "device=meta", "input.size=[64,64]",
                          "run.dtype=bfloat16", "summary=false"])
    run = run_profile(cfg, tmp_path / "run", print_summary=False)
    encoder = run.result.stages.set_index("stage").loc["encoder"]
    assert encoder["in_bytes"] == 3 * 64 * 64 * 2
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["deployment"]["dtype"] == "bfloat16"
    assert "as deployed: bfloat16 weights and inputs" in meta["notes"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["swiftnet", "gmflow"])
def test_compiled_run_times_each_stage_and_agrees_with_eager(name, tmp_path):
    overrides = [f"model={name}", "input.size=[64,64]", "run.warmup=1", "run.repeats=2",
                 "collectors=[payload,cpu_time]"]
    eager_model, inputs, _, _ = prepare(compose_config(overrides), CPU)
    with torch.inference_mode():
        eager = call_model(eager_model, inputs)
    cfg = compose_config(overrides + ["run.compile=true"])
    run = run_profile(cfg, tmp_path / "run", print_summary=False)
    stages = run.result.stages[run.result.stages["kind"] == "stage"]
    assert set(stages["stage"]) == set(eager_model.stage_names) - {"feature0", "feature1"}
    assert (stages["cpu_time_ms_median"] > 0).all()  # every stage call timed
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["deployment"]["graphs"] >= 4 and meta["deployment"]["compile"] is True
    assert any(note.startswith("compiled (torch.compile, mode=default) in the warm-up: "
                               f"{meta['deployment']['graphs']} graphs") for note in run.notes)
    assert relative_error(run.result.output, eager) < (1e-3 if name == "gmflow" else 1e-4)


_TRANSPOSE = """
import sys, torch
from profiling.runner import compile_model
x = torch.arange(64 * 48, dtype=torch.float32).reshape(64, 48)
f = lambda t: (t.t() * 2 + 1).contiguous()  # a transposed copy: inductor's 2-D tile kernel
print(torch.backends.cpu.get_cpu_capability(), torch.equal(compile_model(f)(x), f(x)))
"""


def test_the_vector_width_is_an_explicit_compile_option(monkeypatch):
    from profiling.runner import compile_options

    assert compile_options("default")["cpp.simdlen"] in (0, 128, 256, 512)
    assert compile_options("max-autotune")["max_autotune"] is True  # the mode's own options
    monkeypatch.setattr("torch._inductor.cpu_vec_isa.pick_vec_isa",
                        lambda: __import__("torch")._inductor.cpu_vec_isa.invalid_vec_isa)
    assert compile_options("default") == {"cpp.simdlen": 0}  # ATEN_CPU_CAPABILITY=default


@pytest.mark.slow
def test_a_compiled_graph_cached_with_vectors_is_not_reused_without_them(tmp_path):
    """Inductor's disk cache does not count ATEN_CPU_CAPABILITY: without the width as an
    option, a graph compiled with AVX2 vectors was reused by a process without them and
    failed to build (a CPU without AVX2 runs both without vectors)."""
    import os

    runs = []
    for capability in ("avx2", "default"):
        environment = {**os.environ, "ATEN_CPU_CAPABILITY": capability,
                       "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
        runs.append(subprocess.run([sys.executable, "-c", _TRANSPOSE], cwd=ROOT, text=True,
                                   capture_output=True, timeout=600, env=environment))
    assert [run.stdout.split()[-1:] for run in runs] == [["True"], ["True"]], \
        [run.stderr[-2000:] for run in runs]
    assert runs[1].stdout.split()[0] == "DEFAULT"


def _profile(*overrides: str, sweep: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zoo.profile", *(["-m"] if sweep else []),
                           *overrides], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("overrides, message", [
    (["run.autocast=true"], "error: run.autocast=true needs run.dtype=bfloat16 or float16"),
    (["device=meta", "run.compile=true"], "error: run.compile=true needs real computation"),
    (["run.dtype=half"], "error: run.dtype='half' is not accepted; accepted: one of float32"),
])
def test_bad_combinations_through_the_cli(overrides, message, tmp_path):
    result = _profile("model=swiftnet", "input.size=[32,32]", *overrides,
                      f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 2
    assert result.stderr.strip().startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_sweep_over_dtype_and_layout_compares_in_the_summary(tmp_path):
    result = _profile("model=swiftnet", "device=meta", "input.size=[64,64]", "summary=false",
                      "hydra/launcher=local", "run.dtype=float32,bfloat16",
                      "run.channels_last=false,true", f"hydra.sweep.dir={tmp_path}", sweep=True)
    assert result.returncode == 0, result.stderr
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert {"run.dtype", "run.channels_last"} <= set(summary.columns)
    spp = summary[summary["stage"] == "spp"].set_index(["run.dtype", "run.channels_last"])
    assert len(spp) == 4
    for layout in (False, True):
        assert spp.loc[("bfloat16", layout), "out_bytes"] * 2 == \
            spp.loc[("float32", layout), "out_bytes"]
        assert spp.loc[("bfloat16", layout), "flops"] == spp.loc[("float32", layout), "flops"]
    runs = sorted(p for p in tmp_path.iterdir() if (p / "meta.json").is_file())
    compared = subprocess.run([sys.executable, "-m", "zoo.compare", str(runs[0]), str(runs[2]),
                               "--out", str(tmp_path / "compare.csv")], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    assert compared.returncode == 0, compared.stderr
    table = pd.read_csv(tmp_path / "compare.csv")
    assert not table.empty
