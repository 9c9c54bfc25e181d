"""Faster R-CNN: the seed log's stages and payload shapes, torchvision's weights, outputs."""

import re
from pathlib import Path

import pytest
import torch
from torchvision.models import resnet50
from torchvision.models.detection import (FasterRCNN_ResNet50_FPN_Weights,
                                          fasterrcnn_resnet50_fpn)

import zoo
from profiling.reports.payload_log import format_payload_log
from profiling.runner.passes import profile_model

#: the users' hand-instrumented log, copied from ../shared/seeds
SEED = Path(__file__).resolve().parent / "data" / "seeds" / "001_12931549c071c8b4.txt"


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return zoo.create_model("faster_rcnn")


@pytest.fixture(scope="module")
def profiled(model):
    inputs = model.example_inputs(1, (224, 224), generator=torch.Generator().manual_seed(0))
    result = profile_model(model, inputs, collectors=["payload"], warmup=0, repeats=1)
    return inputs, result


def _payload_section(text):
    section = text.split("payload ", 1)[1]
    return [line for line in section.splitlines()[2:] if " :: " in line and "---" not in line]


def test_state_dict_is_torchvisions(model, tmp_path):
    # torchvision's COCO weights come from the model with frozen BatchNorm, which has no
    # num_batches_tracked buffers: the same tensors as the BatchNorm build otherwise
    reference = {k: v for k, v in fasterrcnn_resnet50_fpn(
        weights=None, weights_backbone=None).state_dict().items()
        if not k.endswith("num_batches_tracked")}
    ours = model.state_dict()
    assert list(ours) == list(reference)
    assert all(ours[k].shape == reference[k].shape for k in reference)
    weights = FasterRCNN_ResNet50_FPN_Weights.COCO_V1
    trainable = sum(p.numel() for p in model.parameters())
    assert trainable == weights.meta["num_params"] == 41_755_286
    path = tmp_path / "frcnn.pth"
    torch.save(reference, path)
    loaded = zoo.create_model("faster_rcnn", checkpoint=str(path))
    assert torch.equal(loaded.state_dict()["roi_heads.box_predictor.cls_score.weight"],
                       reference["roi_heads.box_predictor.cls_score.weight"])


def test_mismatched_checkpoint_is_one_clear_error(tmp_path):
    path = tmp_path / "other.pth"
    torch.save({"model": resnet50(weights=None).state_dict()}, path)
    with pytest.raises(zoo.ConfigError, match=r"does not match StagedFasterRCNN: \d+ missing"):
        zoo.create_model("faster_rcnn", checkpoint=str(path))


def test_stage_set_and_order(profiled, model):
    _, result = profiled
    stages = [c.name for c in result.calls if c.kind == "stage"]
    assert list(dict.fromkeys(stages)) == list(model.stage_names)
    assert stages.count("rpn_head_details_conv_per_feature") == 5
    probes = [c.name for c in result.calls if c.kind == "probe"]
    assert probes == ["sum2_topdown", "sum2_lateral", "sum1_topdown", "sum1_lateral",
                      "sum0_topdown", "sum0_lateral"]
    parents = {c.name: c.parent for c in result.calls}
    names = {c.index: c.name for c in result.calls}
    assert names[parents["backbonefpn_fpn_inner_0"]] == "backbonefpn_fpn"
    assert names[parents["roi_heads_box_head_fc6"]] == "roi_heads_box_head"


def test_seed_payload_shapes(profiled):
    _, result = profiled
    calls = {c.key: c for c in result.calls}
    assert calls[("transform", 0)].outputs.items[0][1].shape == (1, 3, 800, 800)
    body = calls[("backbonefpn_body", 0)].outputs
    assert [leaf.shape for _, leaf in body.items] == [
        (1, 256, 200, 200), (1, 512, 100, 100), (1, 1024, 50, 50), (1, 2048, 25, 25)]
    assert body.nbytes == 76_800_000
    fpn = calls[("backbonefpn_fpn", 0)].outputs
    assert [leaf.shape[1:] for _, leaf in fpn.items] == [
        (256, 200, 200), (256, 100, 100), (256, 50, 50), (256, 25, 25), (256, 13, 13)]
    assert fpn.nbytes == 54_573_056
    assert calls[("roi_heads_box_head_fc6", 0)].inputs.shape[1] == 12544
    assert calls[("roi_heads_box_predictor_bbox_pred(linear)", 0)].outputs.shape[1] == 364


def test_payload_log_matches_the_seed_except_known_differences(profiled, model):
    _, result = profiled
    ours = _payload_section(format_payload_log(result.events, result.stages, host="h",
                                               device="cpu", label=model.payload_log_label))
    seed = _payload_section(SEED.read_text().split("--- cpu ---")[0])
    # the seed printed body shapes for FPN outputs [1]-[4] by mistake; every FPN level has 256
    fixed_seed = [re.sub(r"backbone_fpn_out.*", "", line) for line in seed]
    fixed_ours = [re.sub(r"backbone_fpn_out.*", "", line) for line in ours]

    def proposals(lines: list[str]) -> list[str]:
        return [re.sub(r"torch.Size\(\[\d+,", "torch.Size([N,", line) for line in lines]

    # the same lines, in execution order (the seed logged fc6/fc7 after the predictor)
    assert sorted(proposals(fixed_ours)) == sorted(proposals(fixed_seed))
    assert len(ours) == len(seed) == 90


def test_profiling_leaves_outputs_and_model_unchanged():
    """At 64x64 (a forward at 800x800 takes seconds on 2 cores): still 100 detections."""
    torch.manual_seed(0)
    model = zoo.create_model("faster_rcnn", min_size=64, max_size=64)
    inputs = model.example_inputs(1, (64, 64), generator=torch.Generator().manual_seed(0))
    result = profile_model(model, inputs, collectors=["payload"], warmup=0, repeats=1)
    with torch.inference_mode():
        plain = model(*inputs)
    assert len(plain) == len(result.output) == 1 and len(plain[0]["boxes"]) == 100
    for key in ("boxes", "scores", "labels"):
        assert torch.equal(plain[0][key], result.output[0][key])
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_bad_size_is_a_clear_error(model):
    with pytest.raises(zoo.ConfigError, match="at least 32"):
        model.check_input_size((16, 224))
