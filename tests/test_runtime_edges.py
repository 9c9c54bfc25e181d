"""Runtime runs on networks and installs that no other test names: broken or missing runtime
packages, models of which nothing runs in the runtime, outputs that are not one float tensor,
and the figures a run reports about itself (output difference, profiler overhead).

The tests that export or run a model need the ``runtimes`` extra and skip without it."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from profiling import ProfilingError, stage
from profiling.errors import MissingExtra
from profiling.runtimes import require_runtime
from profiling.runtimes.runtime_profile import output_difference
from runtime_models import needs_onnxruntime


def _broken_package(tmp_path, monkeypatch, name: str) -> None:
    """Put a package ``name`` first on the path that is there but fails to import, as an
    install whose native library is missing does."""
    folder = tmp_path / "site" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        'raise ImportError("libfake.so.1: cannot open shared object file")\n')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        monkeypatch.delitem(sys.modules, module)


@needs_onnxruntime  # the other packages of the extra must be there to reach this one
@pytest.mark.parametrize("runtime, dtype, package", [
    ("onnxruntime", "float32", "onnxruntime"),
    ("openvino", "float32", "openvino"),
    ("openvino", "int8", "nncf"),
    ("onnxruntime", "int8", "onnxscript"),
])
def test_a_runtime_package_that_does_not_import_is_one_line_naming_the_extra(
        runtime, dtype, package, tmp_path, monkeypatch):
    _broken_package(tmp_path, monkeypatch, package)
    with pytest.raises(MissingExtra) as refused:
        require_runtime(runtime, dtype)
    line = str(refused.value)
    assert line == (f"runtime={runtime} needs {package}, which is installed but does not "
                    f"import (libfake.so.1: cannot open shared object file); reinstall it "
                    f"with pip install --force-reinstall 'stagezoo[runtimes]'")


@needs_onnxruntime  # the other packages of the extra must be there to reach this one
@pytest.mark.parametrize("package", ["onnx", "onnxruntime", "onnxscript"])
def test_a_blocked_runtime_package_is_refused_by_the_library_before_any_export(
        package, monkeypatch, tmp_path):
    from profiling.runtimes import profile_runtime

    monkeypatch.setitem(sys.modules, package, None)  # as if it were not installed
    model = nn.Conv2d(3, 4, 1).eval()
    with pytest.raises(MissingExtra, match=rf"runtime=onnxruntime needs {package}, which is "
                                           rf"not installed; install it with pip install "
                                           rf"'stagezoo\[runtimes\]'"):
        profile_runtime(model, (torch.randn(1, 3, 8, 8),), runtime="onnxruntime",
                        workdir=tmp_path / "work")
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())


@needs_onnxruntime  # the other packages of the extra must be there to reach this one
def test_a_broken_runtime_is_refused_by_the_app_before_the_model_is_built(
        tmp_path, monkeypatch):
    from zoo.tools.composition import compose_config
    from zoo.tools.job import run_profile

    _broken_package(tmp_path, monkeypatch, "onnxruntime")
    monkeypatch.setattr("zoo.tools.job_description.prepare",
                        lambda *a, **k: pytest.fail("the model was built"))
    cfg = compose_config(["model=swiftnet", "input.size=[32,32]", "run.runtime=onnxruntime"])
    with pytest.raises(MissingExtra, match=r"^run.runtime=onnxruntime needs onnxruntime, which "
                                           r"is installed but does not import"):
        run_profile(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


# -- models of which no part runs in the runtime -------------------------------------------

class _Eigen(nn.Module):
    """A code stage, then an operator the ONNX exporter has no function for."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 3, 3, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with stage("conv", x) as s:
            y = s.output(F.conv2d(x, self.weight, padding=1))
        return torch.linalg.eigvals(y[..., :4, :4]).real


class _EigenChildren(nn.Module):
    """Its only child is called twice (never a part), and the whole does not export."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(self.conv(x))
        return torch.linalg.eigvals(y[..., :4, :4]).real


class _Refused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


@needs_onnxruntime
@pytest.mark.slow
@pytest.mark.parametrize("model, refuse, message", [
    (_Eigen, False, r"^onnxruntime runs no part of _Eigen: the whole model: DispatchError: No "
                    r"ONNX function found for <OpOverload\(op='aten.linalg_eig'.*; no submodule "
                    r"exports on its own; profile it in PyTorch$"),
    (_EigenChildren, False, r"^onnxruntime runs no part of _EigenChildren: the whole model: "
                            r"DispatchError: .*aten.linalg_eig.*; on their own: conv: called 2 "
                            r"times in a forward; profile it in PyTorch$"),
    (_Refused, True, r"^onnxruntime runs no part of _Refused: the whole model: onnxruntime "
                     r"could not run it: unsupported operator; on their own: conv: onnxruntime "
                     r"could not run it: unsupported operator; profile it in PyTorch$"),
])
def test_a_model_of_which_nothing_runs_in_the_runtime_is_one_line(model, refuse, message,
                                                                  monkeypatch, tmp_path):
    """Before: the run went on in PyTorch alone, labelled as the runtime's (the library), and
    the app failed with ``KeyError: 'version'``."""
    from profiling.runtimes import hybrid, profile, profile_runtime

    if refuse:  # the runtime refuses every model it is given
        def make_backend(*args, **kwargs):
            raise RuntimeError("unsupported operator\nits details")

        monkeypatch.setattr(profile, "make_backend", make_backend)
        monkeypatch.setattr(hybrid, "make_backend", make_backend)
    torch.manual_seed(0)
    with pytest.raises(ProfilingError, match=message) as refused:
        profile_runtime(model().eval(), (torch.randn(1, 3, 8, 8),), runtime="onnxruntime",
                        repeats=1, workdir=tmp_path)
    assert "\n" not in str(refused.value)


# -- the runtime's output against PyTorch's ------------------------------------------------

def test_the_output_difference_leaves_out_integer_outputs():
    logits = torch.tensor([[0.5, 2.0, -1.0]])
    labels = torch.tensor([1])
    reference = {"logits": logits, "labels": labels, "nothing": None}
    got = [np.array([[0.5, 1.5, -1.0]], np.float32), np.array([0])]  # the label differs by 1
    figures = output_difference(reference, got)
    assert figures["max_abs_difference"] == pytest.approx(0.5)
    assert figures["mean_abs_difference"] == pytest.approx(0.5 / 3)
    assert figures["reference_max_abs"] == 2.0
    assert figures["relative_max_difference"] == pytest.approx(0.25)
    assert output_difference((labels, labels), [np.array([3]), np.array([4])]) == {}


@pytest.mark.parametrize("scale", [1e-10, 1.0, 1e6])
def test_the_output_difference_is_relative_to_the_outputs_scale(scale):
    """A network whose random weights give outputs of 1e-10 differs by 1e-11 whatever the
    runtime does: the relative figure says 10% at every scale."""
    reference = (torch.tensor([[1.0, -2.0], [0.5, 0.0]]) * scale,)
    got = [np.array([[1.0, -2.2], [0.5, 0.0]], np.float32) * np.float32(scale)]
    figures = output_difference(reference, got)
    assert figures["max_abs_difference"] == pytest.approx(0.2 * scale, rel=1e-5)
    assert figures["relative_max_difference"] == pytest.approx(0.1, rel=1e-5)


def test_the_output_difference_skips_tensors_of_another_shape_and_zeros():
    reference = [torch.zeros(2, 3), torch.ones(4), torch.ones(0)]
    got = [np.zeros((2, 3), np.float32), np.ones(5, np.float32), np.ones(0, np.float32)]
    figures = output_difference(reference, got)
    assert figures == {"max_abs_difference": 0.0, "mean_abs_difference": 0.0,
                       "reference_max_abs": 0.0}


@pytest.mark.parametrize("dtype, figures, expected", [
    ("float32", {"max_abs_difference": 3e-7, "reference_max_abs": 4.0,
                 "relative_max_difference": 7.5e-8},
     "onnxruntime's float32 output against PyTorch's float32: max abs difference 3e-07, "
     "7.5e-08 of the output's scale (its largest value 4, at least 0.001)"),
    ("float32", {"max_abs_difference": 5e-16, "reference_max_abs": 1e-15,
                 "relative_max_difference": 0.5},
     "onnxruntime's float32 output against PyTorch's float32: max abs difference 5e-16, "
     "5e-13 of the output's scale (its largest value 1e-15, at least 0.001)"),
    ("bfloat16", {"max_abs_difference": 0.4, "reference_max_abs": 40.0,
                  "relative_max_difference": 0.01},
     "onnxruntime's bfloat16 output against PyTorch's float32: max abs difference 0.4, "
     "0.01 of the output's scale (its largest value 40, at least 0.001)"),
    ("float32", {"max_abs_difference": 0.5, "reference_max_abs": 2.0,
                 "relative_max_difference": 0.25},
     "onnxruntime's float32 output against PyTorch's float32: max abs difference 0.5, 0.25 "
     "of the output's scale (its largest value 2, at least 0.001); more than float32 "
     "round-off (>0.001): the exported model "
     "does not compute what the PyTorch one does, so its stage times describe another "
     "network"),
    ("int8", {"max_abs_difference": 0.5, "relative_max_difference": 0.25},
     "int8 (static post-training quantisation, calibrated on input.images) against float32: "
     "max_abs_difference 0.5, relative_max_difference 0.25; with random weights this is no "
     "accuracy figure"),
])
def test_the_run_says_how_far_the_runtimes_output_is_from_pytorchs(dtype, figures, expected):
    """Real images do not make a randomly initialised network's int8 difference an accuracy
    figure (before: the caveat went away with input.images)."""
    from zoo.deploy.in_runtime import _output_notes

    info = {"runtime": "onnxruntime", "calibration": "input.images",
            "int8_output" if dtype == "int8" else "output_difference": figures}
    assert _output_notes(info, dtype, random_weights=True) == [expected]


@pytest.mark.parametrize("overhead, speedup, expected", [
    (0.5, 2.0, "the forward timed with openvino's profiler off was 2.00x the profiled "
               "one: this machine's timing noise exceeds the profiler's cost, so "
               "deployment.profiler_overhead and int8_speedup are no reliable figures on this "
               "run (more run.repeats, or a quieter machine)"),
    (0.9, None, "the forward timed with openvino's profiler off was 1.11x the profiled "
                "one: this machine's timing noise exceeds the profiler's cost, so "
                "deployment.profiler_overhead is no reliable figure on this run (more "
                "run.repeats, or a quieter machine)"),
    (0.97, None, None),
    (1.02, 1.5, None),
])
def test_an_unprofiled_forward_slower_than_the_profiled_one_is_called_noise(
        overhead, speedup, expected):
    """Before: a profiler overhead of 0.15 (the profiler making the forward 6x faster) went
    into meta.json without a word."""
    from zoo.deploy.in_runtime import _speed_notes

    info = {"runtime": "openvino", "profiler_overhead": overhead,
            "unprofiled_forward_ms_median": 20.0, "float32_forward_ms_median": 30.0}
    if speedup is not None:
        info["int8_speedup"] = speedup
    assert _speed_notes(info) == ([expected] if expected else [])


class _Outputs(nn.Module):
    """Outputs of every kind: a dict, a tuple inside, an integer tensor, a scalar, None."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor):
        y = self.a(x)
        z = self.b(y)
        return {"feature": y, "pair": (z, z.argmax(1)), "mean": y.mean(), "none": None}


@needs_onnxruntime
@pytest.mark.slow
def test_a_float32_run_reports_its_output_against_pytorch_and_logs_nothing(tmp_path, capfd):
    """Outputs of every kind line up with PyTorch's within float32 round-off; before, a
    float32 run reported no output difference at all. ONNX Runtime's own C++ log does not
    reach the terminal."""
    from profiling.runtimes import profile_runtime

    torch.manual_seed(0)
    model, x = _Outputs().eval(), torch.randn(1, 3, 8, 8)
    profiled = profile_runtime(model, (x,), runtime="onnxruntime", repeats=1,
                               attach={"a": "a", "b": "b"}, workdir=tmp_path)
    figures = profiled.deployment["output_difference"]
    with torch.no_grad():
        expected = model(x)
    assert figures["reference_max_abs"] == pytest.approx(float(max(
        expected["feature"].abs().max(), expected["pair"][0].abs().max(),
        expected["mean"].abs())))
    assert figures["relative_max_difference"] < 1e-5
    assert [o.shape for o in profiled.outputs] == [(1, 4, 8, 8), (1, 2, 8, 8), (1, 8, 8), ()]
    assert "onnxruntime" not in capfd.readouterr().err


# -- runtime nodes named after nothing exported ---------------------------------------------

def _made_up_nodes_map():
    from profiling.runtimes.stage_map import StageMap

    exported = {"node_conv": "body#0/conv#0", "node_head": "head#0"}
    producers = {"conv_out": "node_conv", "logits": "node_head"}
    # FakeQuantize_7 feeds the head; the reorder takes the head's output to the graph output;
    # Dequantize_w feeds a made-up node that feeds the convolution
    neighbours = {"FakeQuantize_7": ["node_head", "node_conv"],
                  "logits_abcd_acdb/sink_port_0": ["Result_9", "logits"],
                  "Dequantize_w": ["Convert_3"], "Convert_3": ["node_conv", "Dequantize_w"],
                  "far_0": ["far_1"], "far_1": ["far_2"], "far_2": ["far_3"],
                  "far_3": ["node_head"]}
    return StageMap(exported, producers, neighbours=neighbours)


@pytest.mark.parametrize("name, stage_path", [
    ("FakeQuantize_7", "head#0"),                         # the node it feeds
    ("logits_abcd_acdb/sink_port_0", "head#0"),           # no reader exported: its maker
    ("Dequantize_w", "body#0/conv#0"),                    # two runtime nodes away
    ("far_0", None),                                      # more than NEIGHBOUR_HOPS away
    ("node_conv", "body#0/conv#0"),                       # a name still wins over neighbours
])
def test_a_node_the_runtime_made_up_takes_the_stage_of_its_neighbours(name, stage_path):
    """Before: OpenVINO's FakeQuantize and output reorders and ONNX Runtime's weight
    dequantisations fell into 'other' (swiftnet, OpenVINO int8, 64x96: 44% of node time)."""
    assert _made_up_nodes_map().stage_of(name) == stage_path


def test_a_derived_graph_leaves_nodes_it_cannot_place_to_the_neighbours():
    from profiling.runtimes.stage_map import StageMap

    exported = StageMap({"node_conv": "conv#0"}, {"y": "node_conv"})
    derived = exported.derive({"y": "node_conv", "w_DequantizeLinear_Output": "w_Dq",
                               "x_QuantizeLinear_Output": "x_Q"})
    assert derived == {"node_conv": "conv#0"}  # before: w_Dq and x_Q placed at "" (no stage)
    run_map = StageMap(derived, {}, neighbours={"w_Dq": ["node_conv"]})
    assert run_map.stage_of("w_Dq") == "conv#0"
    assert run_map.stage_times({"w_Dq": 1.0, "node_conv": 2.0, "x_Q": 0.5}) == \
        ({"conv#0": 3.0}, 0.5)


# -- why a runtime cannot run a model, in one line -------------------------------------------

@pytest.mark.parametrize("error, line", [
    (KeyError("1878 node_select_4"), "KeyError: '1878 node_select_4'"),
    (IndexError("list index out of range"), "IndexError: list index out of range"),
    (KeyError(), "KeyError"),
    (RuntimeError("unsupported operator\ndetails"), "unsupported operator"),
])
def test_a_failure_without_words_keeps_its_type(error, line):
    """Before: NNCF's KeyError on gmflow_refine read "openvino could not run it:
    '1878 node_select_4'"."""
    from profiling.runtimes.parts import export_failure

    assert export_failure(error) == line


@needs_onnxruntime
@pytest.mark.slow
def test_a_quantiser_that_fails_is_named_as_the_quantiser(monkeypatch, tmp_path):
    from profiling.runtimes import profile_runtime
    from profiling.runtimes.backends import QuantiseFailure, runtime_failure

    assert runtime_failure("openvino", RuntimeError("Exception from src/x.cpp")) == \
        "openvino could not run it: Exception from src/x.cpp"
    assert runtime_failure("openvino", QuantiseFailure("NNCF could not quantise it: x")) == \
        "NNCF could not quantise it: x"

    def fail(*args, **kwargs):
        raise KeyError("node_select_4")

    monkeypatch.setattr("profiling.runtimes.onnxruntime_backend.quantize_onnxruntime", fail)
    torch.manual_seed(0)
    with pytest.raises(ProfilingError, match=r"^onnxruntime runs no part of _Refused: the "
                                             r"whole model: ONNX Runtime's quantiser could not "
                                             r"quantise it: KeyError: 'node_select_4'; on their "
                                             r"own: conv: ONNX Runtime's quantiser could not "
                                             r"quantise it: KeyError: 'node_select_4'; profile "
                                             r"it in PyTorch$"):
        profile_runtime(_Refused().eval(), (torch.randn(1, 3, 8, 8),), runtime="onnxruntime",
                        dtype="int8", repeats=1, workdir=tmp_path)


@pytest.mark.parametrize("deployed, hint", [
    ({"runtime": "openvino", "mapped_share": 1.0},
     "100.0% of openvino's node time is in them already: the rest is openvino's own work "
     "around its nodes (large for a small input or on a busy machine), which no stage can "
     "name"),
    ({"runtime": "onnxruntime", "mapped_share": 0.9983},
     "99.8% of onnxruntime's node time is in them already: the rest is onnxruntime's own work "
     "around its nodes (large for a small input or on a busy machine), which no stage can "
     "name"),
    ({"runtime": "onnxruntime", "mapped_share": 0.95,
      "other_parts_ms": {"unmapped_nodes": 0.0213, "between_nodes": 0.4125,
                         "outside_run": 0.1201}},
     "95.0% of onnxruntime's node time is in them already: the rest is onnxruntime's own work "
     "around its nodes (large for a small input or on a busy machine), which no stage can "
     "name (the note 'run by' takes it apart)"),
    ({"runtime": "onnxruntime", "mapped_share": 0.56}, None),  # naming more stages helps
    ({"runtime": "onnxruntime", "mapped_share": None}, None),
    ({"runtime": "torch"}, None),
])
def test_a_runtime_run_with_its_nodes_in_stages_is_not_told_to_name_more(deployed, hint):
    """Before: resnet18 in ONNX Runtime with 99.8% of its node time in stages was told to
    "name more with model.stage_paths" because the runtime's own time made 'other' 20%."""
    from zoo.deploy import runtime_coverage_hint

    assert runtime_coverage_hint(deployed) == hint


def test_the_run_note_takes_other_apart_where_the_runtime_timed_its_run_calls():
    from zoo.deploy.in_runtime import other_parts_text

    assert other_parts_text({"runtime": "onnxruntime", "other_parts_ms": {
        "unmapped_nodes": 0.0213, "between_nodes": 0.4125, "outside_run": 0.1201}}) == (
        "a forward's medians: 0.0213 ms in nodes of no stage, 0.412 ms between nodes inside "
        "onnxruntime's run call, 0.12 ms outside it")
    assert other_parts_text({"runtime": "openvino"}) is None


def _logits(shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("model_name, wrap", [
    ("swiftnet", lambda logits: logits),
    ("swin_unet", lambda logits: logits),
    ("torchvision", lambda logits: {"out": logits, "aux": logits * 2}),
])
def test_an_int8_segmentation_reports_the_share_of_pixels_whose_label_holds(model_name, wrap):
    """Before: segmentation runs got no task metric (classifiers and flow had one). The metric
    is the one the model's task declares (zoo.models.TASK_METRICS)."""
    from zoo.deploy import int8_metric

    logits = _logits((1, 3, 2, 4))
    changed = logits.clone()
    changed[0, :, 0, :2] = torch.tensor([5.0, -5.0, -5.0])[:, None]  # two pixels: label 0
    changed[0, :, 0, 2:] = torch.tensor([-5.0, 5.0, -5.0])[:, None]  # two pixels: label 1
    flipped = int((logits.argmax(1) != changed.argmax(1)).sum())
    outputs = [changed.numpy()] + ([changed.numpy() * 2] if model_name == "torchvision" else [])
    metric = int8_metric("pixel_agreement", wrap(logits), outputs)
    assert metric == {"pixel_agreement": pytest.approx(1 - flipped / 8)}
    assert 0 < flipped <= 4


def test_near_zero_logits_decide_no_label():
    """Before: a network with near-zero outputs (random weights) read top-1 agreement 0,
    its logits ordered by round-off of 1e-16."""
    from zoo.deploy import int8_metric

    logits = _logits((4, 10)) * 1e-15
    got = (logits + 5e-16 * _logits((4, 10), seed=1)).numpy()
    assert int8_metric("top1_agreement", logits, [got]) == {"top1_agreement_decided": 0.0}
    half = logits.clone()
    half[:2] = _logits((2, 10), seed=2)  # two samples of real logits, kept as they are
    got[:2] = half[:2].numpy()
    assert int8_metric("top1_agreement", half, [got]) == {"top1_agreement_decided": 0.5,
                                                       "top1_agreement": 1.0}


def test_a_feature_map_that_is_no_segmentation_gets_no_pixel_metric():
    from zoo.deploy import int8_metric

    features = _logits((1, 8, 2, 2))
    assert int8_metric("top1_agreement", features, [features.numpy()]) == {}
    assert int8_metric(None, (features,), [features.numpy()]) == {}


def test_the_run_says_when_the_runtime_needed_more_warm_up_or_never_settled():
    from zoo.deploy.in_runtime import warmup_note

    assert warmup_note("openvino", {"warmup": {"asked": 1, "made": 11, "settled": True}}) == (
        "openvino ran 11 untimed forwards before the timed ones (run.warmup=1): its forwards "
        "got faster until then")
    assert warmup_note("onnxruntime", {"warmup": {"asked": 1, "made": 30, "settled": False}}) \
        == ("onnxruntime's forwards were still getting faster after 30 untimed ones: its "
            "times may be high (a larger run.warmup, or a quieter machine)")
    assert warmup_note("openvino", {"warmup": {"asked": 8, "made": 8, "settled": True}}) is None
    assert warmup_note("openvino", {"warmup": {"asked": 1, "made": 4, "settled": None}}) == (
        "openvino ran 4 untimed forwards before the timed ones (run.warmup=1), as many as its "
        "warm-up's time limit allowed: too few to tell whether its forwards had stopped "
        "getting faster")
    assert warmup_note("torch", {}) is None
