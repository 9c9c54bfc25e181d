"""As deployed: run.dtype, run.channels_last and run.autocast on every zoo model, at small sizes.

Tolerances (relative L2 error of every floating output tensor against the float32 run, random
weights, the sizes below) are those of docs/deployed.md:

- bfloat16 (8 significant bits): 2e-2 for the outputs of SwiftNet, Swin-UNet and ResNet-18 and
  for Faster R-CNN's FPN features (its detections pass NMS and a score threshold, which a
  rounding can flip); 2e-1 for GMFlow's transformer features and encoder skips (the refining
  scale's features see image 1 warped by the coarse flow). GMFlow's flows
  are not compared: with random weights the global matching's softmax is close to an argmax over
  weakly contrasted features, and the features' few-percent error moves matches by whole
  pixels (30 to 60 % relative error of the flow at these sizes).
- float16 (11 significant bits): 5e-3, and 1e-1 for GMFlow's features.
- channels-last: 1e-5 (float32 round-off of another summation order); 1e-3 for GMFlow's flows,
  whose matching amplifies the round-off as it amplifies bfloat16's.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd
import pytest
import torch
from torch.utils._pytree import tree_leaves

from profiling.stages.payload import iter_leaves
from profiling.reports.layers_table import layers_table
from profiling.runner.passes import profile_model
from zoo.tools.job_inputs import prepare
from zoo.tools.composition import compose_config

#: Each model at a small size: the overrides of its runs.
CASES = {
    "faster_rcnn": ["model.min_size=96", "model.max_size=96", "input.size=[96,96]",
                    "model.rpn_post_nms_top_n_test=10"],
    "gmflow": ["input.size=[64,64]"],
    "gmflow_refine": ["input.size=[64,64]"],
    "gmflow_unet": ["input.size=[64,64]"],
    "swiftnet": ["input.size=[64,64]"],
    "swin_unet": ["input.size=[64,64]", "model.img_size=64"],
    "torchvision": ["model.arch=resnet18", "input.size=[64,64]"],
    "timm": ["model.arch=resnet18", "input.size=[64,64]"],
}
MODELS = list(CASES)
GMFLOW = ("gmflow", "gmflow_refine", "gmflow_unet")


@pytest.fixture(scope="module", params=MODELS)
def name(request) -> str:
    """The model under test; module-scoped, so pytest runs each model's tests together and
    the cache below holds its four runs."""
    return request.param


@lru_cache(maxsize=4)
def _run(name: str, *extra: str):  # noqa: F811  (not the fixture)
    """The model, inputs and untimed profile (payload and counts) of ``name`` with ``extra``."""
    cfg = compose_config([f"model={name}", *CASES[name], *extra])
    model, inputs, attach, _ = prepare(cfg, torch.device("cpu"))
    result = profile_model(model, inputs, collectors=["payload", "op_counts"], attach=attach)
    return model, inputs, result


def _compared_output(name: str, model: torch.nn.Module, inputs: tuple, result) -> object:
    """What the bfloat16 test compares: the output; Faster R-CNN's FPN features; GMFlow's
    transformer features and encoder skips (see the module's docstring)."""
    with torch.inference_mode():
        if name == "faster_rcnn":
            return model.backbone(model.transform(*inputs)[0].tensors)
        if name in GMFLOW:
            prediction = model.predict(*inputs)
            return prediction.feature0, prediction.skips
    return result.output


def relative_error(value, reference) -> float:
    """``|value - reference| / |reference|`` over every floating tensor (L2 norms)."""
    pairs = [(v.double(), r.double()) for v, r in zip(tree_leaves(value), tree_leaves(reference))
             if isinstance(r, torch.Tensor) and r.is_floating_point()]
    assert pairs and all(v.shape == r.shape for v, r in pairs)
    difference = sum(((v - r) ** 2).sum() for v, r in pairs) ** 0.5
    return float(difference / sum((r ** 2).sum() for _, r in pairs) ** 0.5)


@pytest.mark.slow
def test_bfloat16_output_agrees_with_float32(name):
    reference = _compared_output(name, *_run(name))
    model, inputs, result = _run(name, "run.dtype=bfloat16")
    assert next(model.parameters()).dtype == torch.bfloat16
    output = _compared_output(name, model, inputs, result)
    assert {t.dtype for t in tree_leaves(output) if isinstance(t, torch.Tensor)} == {
        torch.bfloat16}
    assert relative_error(output, reference) < (2e-1 if name in GMFLOW else 2e-2)
    flows = [t.dtype for t in tree_leaves(result.output) if isinstance(t, torch.Tensor)]
    if name in GMFLOW:  # the flow path is one of GMFlow's float32 parts
        assert set(flows) == {torch.float32}


@pytest.mark.slow
def test_float16_runs_and_agrees_with_float32(name):
    reference = _compared_output(name, *_run(name))
    model, inputs, result = _run(name, "run.dtype=float16")
    output = _compared_output(name, model, inputs, result)
    assert {t.dtype for t in tree_leaves(output) if isinstance(t, torch.Tensor)} == {
        torch.float16}
    assert relative_error(output, reference) < (1e-1 if name in GMFLOW else 5e-3)


@pytest.mark.slow
def test_bfloat16_payload_is_exactly_half_outside_the_float32_parts(name):
    model, _, result = _run(name, "run.dtype=bfloat16")
    _, _, reference = _run(name)
    kept = model.float32_parts()
    assert len(result.calls) == len(reference.calls)
    halved = 0
    for call, full in zip(result.calls, reference.calls):
        assert call.key == full.key
        if call.name in kept:
            continue
        for node, full_node in ((call.inputs, full.inputs), (call.outputs, full.outputs)):
            leaves, full_leaves = list(iter_leaves(node)), list(iter_leaves(full_node))
            assert [path for path, _ in leaves] == [path for path, _ in full_leaves]
            for (_, leaf), (_, full_leaf) in zip(leaves, full_leaves):
                assert leaf.shape == full_leaf.shape
                if full_leaf.dtype == torch.float32:
                    assert (leaf.dtype, 2 * leaf.nbytes) == (torch.bfloat16, full_leaf.nbytes)
                    halved += 1
                else:
                    assert (leaf.dtype, leaf.nbytes) == (full_leaf.dtype, full_leaf.nbytes)
    assert halved >= len(reference.calls) - len(kept)


@pytest.mark.slow
def test_bfloat16_halves_memory_traffic_and_the_torchstat_memory_columns(name):
    model, _, result = _run(name, "run.dtype=bfloat16")
    if model.float32_parts():
        pytest.skip("its float32 parts keep float32 traffic (the payload test covers it)")
    reference_model, _, reference = _run(name)
    traffic = ["bytes_read", "bytes_written"]
    if name == "swin_unet":  # its relative-position index (int64) keeps its bytes
        ratio = result.stages[traffic].sum() / reference.stages[traffic].sum()
        assert ((ratio > 0.5) & (ratio < 0.51)).all()
    else:
        assert (reference.stages[traffic].fillna(0) == 2 * result.stages[traffic].fillna(0)
                ).all().all()
    layers = layers_table(model, result.collectors["op_counts"].modules, None)
    full = layers_table(reference_model, reference.collectors["op_counts"].modules, None)
    for column in ("memory(MB)", "MemRead(B)", "MemWrite(B)"):
        assert (full[column] == 2 * layers[column]).all() and full[column].sum() > 0


#: Stages whose work depends on the values, not only the shapes: Faster R-CNN's proposal
#: filtering and its detection post-processing keep as many boxes as the scores let through
#: (score threshold, NMS), and rounding in the layers before them (bfloat16, or another CPU's
#: kernels) changes that by a few boxes. Measured on an AMD EPYC: in bfloat16 the detection
#: post-processing counts 38746 FLOPs instead of 38229 with any kernels, and the proposal
#: stage 6013881 instead of 6001979 with AVX2 kernels only. The top-level ``other`` row holds
#: the transform's post-processing (scaling the detected boxes back to the image's size), which
#: works on as many boxes as survive: 166 FLOPs instead of 162 in bfloat16 on an AMD EPYC.
DATA_DEPENDENT_STAGES = {"faster_rcnn": ("rpn_anchor_generator",
                                         "roi_heads_postprocess_detections", "other")}


def _enclosing_too(stages: pd.DataFrame, names) -> pd.Series:
    """A mask of the rows of ``stages`` named in ``names`` and of every stage enclosing one
    (a parent's counts include its children's)."""
    parents = {stage: parent for stage, parent in zip(stages["stage"], stages["parent"])
               if isinstance(parent, str) and parent}
    marked = set(names)
    for name in names:
        while name in parents:
            name = parents[name]
            marked.add(name)
    return stages["stage"].isin(marked)


@pytest.mark.slow
def test_counts_do_not_change_with_the_type_or_the_layout(name):
    model, _, reference = _run(name)
    columns = ["stage", "macs", "flops", "activations"]
    data_dependent = _enclosing_too(reference.stages, DATA_DEPENDENT_STAGES.get(name, ()))
    expected = reference.stages.loc[~data_dependent, columns].fillna(-1)
    assert expected["flops"].sum() > 0
    for extra in ("run.dtype=bfloat16", "run.channels_last=true"):
        _, _, result = _run(name, extra)
        assert result.stages.loc[~data_dependent, columns].fillna(-1).equals(expected), extra


@pytest.mark.slow
def test_channels_last_outputs_equal_contiguous_ones(name):
    model, inputs, contiguous = _run(name)
    reference = (_compared_output(name, model, inputs, contiguous) if name == "faster_rcnn"
                 else contiguous.output)
    model, inputs, result = _run(name, "run.channels_last=true")
    assert all(t.is_contiguous(memory_format=torch.channels_last)
               for t in tree_leaves(inputs) if isinstance(t, torch.Tensor) and t.dim() == 4)
    assert result.stages["in_bytes"].equals(contiguous.stages["in_bytes"])
    assert result.stages["out_bytes"].equals(contiguous.stages["out_bytes"])
    assert relative_error(result.output if name != "faster_rcnn" else
                          _compared_output(name, model, inputs, result),
                          reference) < (1e-3 if name in GMFLOW else 1e-5)


#: max |bfloat16 flow - float32 flow| in px with well-conditioned weights: measured 0.24 px
#: (gmflow, gmflow_unet) and 0.15 px (gmflow_refine) for flows of up to 7-9 px at 64x96.
BFLOAT16_FLOW_TOLERANCE_PX = 0.5


@pytest.mark.slow
@pytest.mark.parametrize("flow_model", GMFLOW)
def test_bfloat16_flows_agree_with_float32_for_well_conditioned_weights(flow_model):
    from reference_weights import fill_reference_weights_, load_reference
    from zoo.deploy import Deployment

    import zoo

    data = load_reference("gmflow_64x96.pt")
    model = zoo.create_model(flow_model).eval()
    fill_reference_weights_(model)
    inputs = (data["img0"], data["img1"])
    with torch.inference_mode():
        reference = model(*inputs)["flow_preds"][-1]
    deployment = Deployment.from_config({"dtype": "bfloat16"})
    half, half_inputs = deployment.apply(model, inputs)
    assert next(half.parameters()).dtype == torch.bfloat16
    with torch.inference_mode():
        flow = half(*half_inputs)["flow_preds"][-1]
    assert flow.dtype == torch.float32  # the flow path is one of GMFlow's float32 parts
    assert reference.abs().max() > 5  # flows of several pixels, not a trivial field
    assert (flow - reference).abs().max() < BFLOAT16_FLOW_TOLERANCE_PX
