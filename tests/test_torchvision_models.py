"""Every builder of ``torchvision.models.list_models()`` under the zoo's profile job.

Each one runs on the meta device (the whole analysis, about a second each) and on the CPU at a
tiny size. In the quick suite: on the meta device the builders of :data:`QUICK_ON_META`, one per
torchvision module (about 30 s in all), on the CPU the few small ones of :data:`QUICK_ON_CPU`,
one per family. Every other builder on the meta device is a slow test (``pytest -m slow``,
which CI runs); every other CPU run is a broad sweep, run with ``pytest --sweeps``, about 15
minutes on 2 cores. Inputs follow the model's family.
"""

from __future__ import annotations

import pytest
import torch
import torchvision

from profiling.stages.payload import iter_tensors
from profiling.runner.passes import profile_model
from zoo.tools.job_inputs import prepare
from zoo.tools.composition import compose_config

#: Builders left out, with the reason; pytest -ra prints them as skips. The goal is empty, and
#: docs/inputs.md lists the same.
SKIPPED: dict[str, str] = {}

#: CPU runs in the quick suite: small classification, segmentation, detection and video models
#: (RAFT's twelve refinements take seconds even at 128x128; the zoo's GMFlow covers pairs);
#: every other CPU run is slow.
QUICK_ON_CPU = {"resnet18", "mobilenet_v3_small", "squeezenet1_1", "lraspp_mobilenet_v3_large",
                "fasterrcnn_mobilenet_v3_large_320_fpn", "r3d_18"}
#: Meta runs in the quick suite: the cheapest builder of each torchvision module (a family
#: shares its module: resnet18 stands for the ResNets and ResNeXts, vgg11_bn for the VGGs), the
#: quantized ones through quantized_resnet18. Left to the slow run: SSDlite (SSD's head is
#: ssd300_vgg16's), RAFT (4-5 s on the meta device for its refinements) and MViT (its iterated
#: blocks are tests/test_iterated_containers.py's).
QUICK_ON_META = QUICK_ON_CPU | {
    "alexnet", "convnext_tiny", "densenet121", "efficientnet_b0", "googlenet", "inception_v3",
    "maxvit_t", "mnasnet1_0", "mobilenet_v2", "regnet_y_400mf", "shufflenet_v2_x0_5", "swin_t",
    "vgg11_bn", "vit_b_32", "quantized_resnet18", "deeplabv3_resnet50", "fcn_resnet50",
    "fcos_resnet50_fpn", "keypointrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn",
    "retinanet_resnet50_fpn", "ssd300_vgg16", "s3d", "swin3d_t"}
#: The small size everything runs at (raised to a model's documented minimum).
SIDE = 32


def _weights_meta(arch: str) -> dict:
    try:
        return torchvision.models.get_model_weights(arch).DEFAULT.meta
    except (ValueError, AttributeError):
        return {}


def small_overrides(arch: str, device: str) -> list[str]:
    """The overrides that make ``arch`` small: its minimum size (from its weights' metadata),
    a ViT built for twice its patch, detectors resizing to 64, clips of the fewest frames."""
    meta = _weights_meta(arch)
    side = max(SIDE, *meta.get("min_size", (1, 1)))
    overrides = ["model=torchvision", f"model.arch={arch}", f"device={device}",
                 "collectors=[payload,op_counts]" if device == "meta"
                 else "collectors=[payload]"]  # one real forward: the cost is the build
    package = torchvision.models.get_model_builder(arch).__module__
    if arch.startswith("vit_"):
        side = 2 * int(arch.rsplit("_", 1)[1])
        overrides.append(f"model.arch_options={{image_size: {side}}}")
    elif ".detection." in package:
        side = 64
        if "ssd" not in arch:  # SSD fixes its own size (300, 320)
            overrides.append("model.arch_options={min_size: 64, max_size: 64}")
    elif ".video." in package:
        overrides.append(f"input.frames={meta.get('min_temporal_size', 2)}")
    return overrides + [f"input.size=[{side},{side}]"]


def _params(device: str) -> list:
    params = []
    for arch in torchvision.models.list_models():
        marks = []
        if arch in SKIPPED:
            marks.append(pytest.mark.skip(reason=f"left out: {SKIPPED[arch]}"))
        if device == "cpu" and arch not in QUICK_ON_CPU:
            marks += [pytest.mark.slow, pytest.mark.sweep]
        elif device == "meta" and arch not in QUICK_ON_META:
            marks.append(pytest.mark.slow)
        params.append(pytest.param(arch, marks=marks, id=arch))
    return params


def _check_inputs(model, inputs, side: int) -> None:
    """The inputs have the form the model's family takes (:mod:`zoo.inputs.kinds`)."""
    kind = model.input_kind
    if kind == "image_list":
        assert isinstance(inputs[0], list) and [tuple(i.shape) for i in inputs[0]] == \
            [(3, side, side)]
    elif kind == "image_pair":
        assert [tuple(i.shape) for i in inputs] == [(1, 3, side, side)] * 2
    elif kind == "clip":
        assert len(inputs) == 1 and inputs[0].shape[:2] == (1, 3) and \
            inputs[0].shape[-2:] == (side, side)
    else:
        assert kind == "image" and [tuple(i.shape) for i in inputs] == [(1, 3, side, side)]


def _check_stages(model, inputs, result) -> None:
    """The stages are top-level children, or the children of one that the forward iterates
    rather than calls (MaxViT's and MViT's ``blocks``), and the first one takes the whole
    input (float32)."""
    stages = result.stages[result.stages.kind == "stage"]
    paths = set(model.stage_paths())
    stand_ins = {name for name in stages.stage if name.rpartition(".")[0] in paths}
    assert set(stages.stage) <= paths | stand_ins and len(stages) >= 2
    assert not {name.rpartition(".")[0] for name in stand_ins} & set(stages.stage)
    assert stages.in_bytes.iloc[0] == sum(4 * t.numel() for t in iter_tensors(inputs))


def _profile(arch: str, device: str):
    overrides = small_overrides(arch, device)
    cfg = compose_config(overrides)
    model, inputs, attach, notes = prepare(cfg, torch.device(device))
    _check_inputs(model, inputs, cfg.input.size[0])
    result = profile_model(model, inputs, collectors=list(cfg.collectors), warmup=0, repeats=1,
                           attach=attach)
    return model, inputs, result, notes


@pytest.mark.parametrize("arch", _params("meta"))
def test_every_torchvision_builder_runs_on_meta(arch):
    model, inputs, result, notes = _profile(arch, "meta")
    _check_stages(model, inputs, result)
    assert result.collectors["op_counts"].total.macs > 0
    if model.input_kind == "image_list":  # the meta assumptions are stated
        assert any(note.startswith(f"meta device: {type(model).__name__} assumes")
                   for note in notes)


@pytest.mark.parametrize("arch", _params("cpu"))
def test_every_torchvision_builder_runs_on_the_cpu(arch):
    model, inputs, result, notes = _profile(arch, "cpu")
    _check_stages(model, inputs, result)


def test_skip_list_is_the_documented_one():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "inputs.md").read_text()
    documented = "The skip list is empty." if not SKIPPED else ", ".join(sorted(SKIPPED))
    assert documented in text
    print(f"torchvision builders left out: {sorted(SKIPPED) or 'none'}")


def test_family_inputs_at_their_defaults():
    """r3d_18 takes the library's 16-frame clips, RAFT two batches, detectors a list."""
    cfg = compose_config(["model=torchvision", "model.arch=r3d_18", "device=meta"])
    model, (clip,), _, notes = prepare(cfg, torch.device("meta"))
    assert clip.shape == (1, 3, 16, 112, 112) and model.default_frames == 16
    assert "input: clips of 16 frames ([B, C, T, H, W])" in notes
    cfg = compose_config(["model=torchvision", "model.arch=r3d_18", "device=meta",
                          "input.frames=4", "input.batch=2"])
    assert prepare(cfg, torch.device("meta"))[1][0].shape == (2, 3, 4, 112, 112)
    cfg = compose_config(["model=torchvision", "model.arch=raft_small", "device=meta",
                          "input.batch=2", "input.size=[128,160]"])
    model, inputs, _, _ = prepare(cfg, torch.device("meta"))
    assert [tuple(i.shape) for i in inputs] == [(2, 3, 128, 160)] * 2
    assert model.input_mean == (0.5, 0.5, 0.5)  # RAFT's preset maps [0, 1] to [-1, 1]
    cfg = compose_config(["model=torchvision", "model.arch=resnet18", "device=meta",
                          "input.frames=4", "input.size=[32,32]"])
    assert prepare(cfg, torch.device("meta"))[3] == [
        "input.frames=4 is unused: this model takes one image batch [B, C, H, W], not clips"]


def test_detector_on_meta_keeps_the_assumed_counts():
    cfg = compose_config(["model=torchvision", "model.arch=maskrcnn_resnet50_fpn",
                          "device=meta", "input.size=[64,96]", "input.batch=2",
                          "model.arch_options={min_size: 64, max_size: 96}"])
    model, inputs, _, notes = prepare(cfg, torch.device("meta"))
    assert [tuple(i.shape) for i in inputs[0]] == [(3, 64, 96)] * 2
    with torch.inference_mode():
        detections = model(*inputs)
    keep = model.roi_heads.detections_per_img
    assert [tuple(d["boxes"].shape) for d in detections] == [(keep, 4)] * 2
    assert tuple(detections[0]["masks"].shape) == (keep, 1, 64, 96)
    assert "the RPN keeps 1000 proposals per image and the box head 100 detections" in notes[-1]
    assert "masks are resized to the whole image" in notes[-1]


def test_meta_builds_put_every_parameter_on_meta_and_restore_torch():
    """A meta build allocates no weights, yet counts the parameters a CPU build has (4.3 M
    and 1.2 M, torchvision's figures); RegNet computes its widths from tensors while building."""
    from zoo.tools.model_build import build_model

    register = torch.nn.Module.register_parameter
    for arch, parameters in (("regnet_y_400mf", 4_344_144), ("squeezenet1_1", 1_235_496)):
        cfg = compose_config(["model=torchvision", f"model.arch={arch}"])
        model = build_model(cfg.model, 0, torch.device("meta"))
        assert all(p.is_meta for p in model.parameters())
        assert sum(p.numel() for p in model.parameters()) == parameters
    assert torch.nn.Module.register_parameter is register
