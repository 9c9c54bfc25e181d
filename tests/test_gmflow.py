"""GMFlow: equivalence with the official outputs, checkpoint loading, stages and payload,
input sizes and option errors. Modifications and the U-Net variant: test_gmflow_variants.py."""

from __future__ import annotations

import pytest
import torch

import zoo
from profiling import Session
from reference_weights import fill_reference_weights_, fingerprint, fingerprint_mismatch, \
    load_reference
from zoo.options import ConfigError

#: compact references of the official code (tests/data/README.md), in every clone.
REFERENCES = {"gmflow": "gmflow_64x96.pt", "gmflow_refine": "gmflow_refine_64x96.pt"}
#: max |flow - official| in px against them: float32 round-off. The reference weights keep
#: the matching well conditioned; our fused and explicit paths, with 1 or 2 threads, measure
#: 4e-6..1.1e-5 px here, and a 1e-6 relative change of an input moves the flows by 1e-5 px.
REFERENCE_TOLERANCE = 1e-4

#: compact extracts of the official golden files (tests/data/make_golden_extracts.py): inputs,
#: outputs, and fingerprints of the official weights, which our models rebuild from the seed
#: (bit for bit with ATen's AVX2 and AVX-512 kernels, within a few eps with its scalar ones:
#: reference_weights.WEIGHT_TOLERANCE_EPS)
GOLDEN_EXTRACTS = {"gmflow": "gmflow_golden_64x96.pt",
                   "gmflow_refine": "gmflow_refine_golden_64x96.pt"}

# Allowed (max, mean) |flow - golden| in px, on every device. The golden files' random weights
# make the flow ill-conditioned in float32, so round-off of another machine's kernels moves it
# far more than any tight bound allows; the bound is the largest miss measured across machines,
# kernels and thread counts, with a margin. Our explicit ("math") path runs the official
# operations in the official order and equals the official code run in the same process, bit
# for bit; what is measured below is the spread of float32 round-off, max (mean), in px:
#
#   machine, kernels, threads                  gmflow             gmflow_refine
#   Intel Xeon, AVX-512, 1-2 (official code)   5e-4..8e-4         0.05..0.07
#   Intel Xeon, AVX2 / none / no oneDNN (off.) 6e-4 / 1.6e-3 / 2.4e-3   0.11 / 0.11 / 0.31
#   AMD EPYC, AVX2, 1-2 (ours, both paths)     3.5e-3 (2.8e-4)    0.51 (9.3e-3)
#   AMD EPYC, AVX2, official code              3.1e-3             0.46
#   AMD EPYC, no SIMD (default), 1-2 (ours)    6.2e-3 (3.3e-4)    0.21 (6.4e-3)
#   the same, weights rebuilt there (4 eps)    5.9e-3 (3.3e-4)    0.43 (8.4e-3)
#   AMD EPYC, no oneDNN, default / AVX2 (ours) 2.4e-3 / 2.8e-3    0.095 / 0.18
#   NVIDIA H100, no TF32, official code        4.5e-3 (2.9e-4)    0.55 (0.010)
#   NVIDIA H100, no TF32, ours                 4.2e-3 (2.5e-4)    0.58 (0.010)
#   NVIDIA H200, ours                          (3.2e-4)
#
# An implementation error (a missing shift mask, the position encoding not per window, another
# head count) moves the flow by 10 px on average, far above every mean bound. The tight check of
# equivalence is test_matches_official_reference (well-conditioned weights, 1e-4 px).
TOLERANCE = {"gmflow": (1e-2, 1e-3), "gmflow_refine": (1.0, 0.02)}


def _load_golden(name: str, **options) -> tuple[torch.nn.Module, dict]:
    """Our model with the official golden weights (rebuilt from their seed and checked against
    their fingerprints) and the golden inputs and outputs."""
    data = load_reference(GOLDEN_EXTRACTS[name])
    torch.manual_seed(data["seed"])
    model = zoo.create_model(name, **options).eval()
    state = model.state_dict()
    assert list(state) == list(data["state_dict_fingerprints"])
    for key, value in state.items():
        problem = fingerprint_mismatch(value, data["state_dict_fingerprints"][key])
        assert not problem, f"the seed no longer rebuilds the golden {key}: {problem}"
    return model, data


def test_the_golden_weight_check_allows_kernel_round_off_and_nothing_more():
    torch.manual_seed(0)
    weight = torch.nn.init.kaiming_normal_(torch.empty(96, 64, 3, 3))
    expected = fingerprint(weight)
    eps = torch.finfo(torch.float32).eps
    assert not fingerprint_mismatch(weight, expected)
    assert not fingerprint_mismatch(weight * (1 + 4 * eps), expected)  # scalar-kernel rounding
    assert not fingerprint_mismatch(weight + 4 * eps * weight.abs().max(), expected)
    assert "values differ" in fingerprint_mismatch(weight * (1 + 1e-4), expected)
    assert "values differ" in fingerprint_mismatch(weight.flip(0), expected)  # another order
    changed = weight.clone()
    changed.view(-1)[1] += 0.1  # between the kept values: the magnitudes' sum shows it
    assert "sum" in fingerprint_mismatch(changed, expected)
    assert "type or size" in fingerprint_mismatch(weight[:48], expected)


def _assert_close_flows(name: str, ours: list, theirs: list) -> None:
    assert len(ours) == len(theirs)
    max_error, mean_error = TOLERANCE[name]
    for flow, expected in zip(ours, theirs):
        assert flow.shape == expected.shape
        error = (flow - expected).abs()
        assert error.max().item() < max_error, error.max().item()
        assert error.mean().item() < mean_error, error.mean().item()


def _flows_both_ways(model: torch.nn.Module, data: dict, device: str = "cpu"
                     ) -> tuple[list, list]:
    """The flows of the official inputs on ``device`` (returned on the CPU), forward and
    bidirectional, after checking that the model's forward options are those the official
    code ran with."""
    for option in ("attn_splits_list", "corr_radius_list", "prop_radius_list"):
        assert getattr(model, option) == tuple(data["forward_kwargs"][option])
    model = model.to(device)
    images = data["img0"].to(device), data["img1"].to(device)
    with torch.no_grad():
        return ([f.cpu() for f in model(*images)["flow_preds"]],
                [f.cpu() for f in model(*images, pred_bidir_flow=True)["flow_preds"]])


#: the devices the equivalence tests run on (CUDA where there is a GPU)
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


@pytest.fixture(autouse=True)
def _no_tf32(monkeypatch):
    """Full float32 convolutions on CUDA (matrix products are by default). cuDNN's default
    TF32 ones move the flows by up to 0.014 px with the reference weights, and by up to 2 px
    (25 px for gmflow_refine) with the golden files' ill-conditioned random weights, on an
    H100 (docs/models/gmflow.md)."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("impl", ["sdpa", pytest.param("math", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["gmflow", "gmflow_refine"])
def test_matches_official_outputs(monkeypatch, name, impl, device):
    # at 64x96 the windows are too small for the fused CPU path; force it to test it
    monkeypatch.setattr("zoo.models.networks.gmflow.attention.FUSED_MIN_KEYS_CPU", 0)
    model, data = _load_golden(name, attention_impl=impl)
    flows, bidir = _flows_both_ways(model, data, device)
    _assert_close_flows(name, flows, data["flow_preds"])
    _assert_close_flows(name, bidir, data["flow_preds_bidir"])
    assert bidir[0].shape == (2, 2, 64, 96)


def _reference_model(name: str, **options) -> tuple[torch.nn.Module, dict]:
    data = load_reference(REFERENCES[name])
    model = zoo.create_model(name, **options).eval()
    fill_reference_weights_(model)
    return model, data


def _assert_flows_within(ours: list, theirs: list, tolerance: float) -> None:
    assert [flow.shape for flow in ours] == [flow.shape for flow in theirs]
    for flow, expected in zip(ours, theirs):
        error = (flow - expected).abs().max().item()
        assert error <= tolerance, error


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("impl", ["sdpa", pytest.param("math", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["gmflow", "gmflow_refine"])
def test_matches_official_reference(monkeypatch, name, impl, device):
    monkeypatch.setattr("zoo.models.networks.gmflow.attention.FUSED_MIN_KEYS_CPU", 0)
    model, data = _reference_model(name, attention_impl=impl)
    assert data["official_commit"].startswith("b5123431")
    flows, bidir = _flows_both_ways(model, data, device)
    assert bidir[0].shape == (2, 2, 64, 96)
    assert data["flow_preds"][0].std() > 1.0  # flows of several px, not a trivial field
    _assert_flows_within(flows, data["flow_preds"], REFERENCE_TOLERANCE)
    _assert_flows_within(bidir, data["flow_preds_bidir"], REFERENCE_TOLERANCE)


def test_reference_detects_a_changed_network():
    model, data = _reference_model("gmflow", position_encoding="none")
    with torch.no_grad():
        flows = model(data["img0"], data["img1"])["flow_preds"]
    assert (flows[0] - data["flow_preds"][0]).abs().max().item() > 100 * REFERENCE_TOLERANCE


@pytest.mark.parametrize("name", ["gmflow", pytest.param("gmflow_refine", marks=pytest.mark.slow)])
def test_bidirectional_flow_as_a_model_option(name):
    model, data = _reference_model(name, pred_bidir_flow=True)
    with torch.no_grad():
        flows = model(data["img0"], data["img1"])["flow_preds"]
    _assert_flows_within(flows, data["flow_preds_bidir"], REFERENCE_TOLERANCE)


@pytest.mark.parametrize("name", ["gmflow", "gmflow_refine"])
def test_official_state_dict_names_and_shapes(name):
    official = load_reference(REFERENCES[name])["official_entries"]
    ours = zoo.create_model(name).state_dict()
    assert {k: list(v.shape) for k, v in ours.items()} == official


def _reference_state_dict(name: str) -> dict[str, torch.Tensor]:
    model = zoo.create_model(name)
    fill_reference_weights_(model)
    return model.state_dict()


def test_checkpoint_option_loads_strictly(tmp_path):
    state_dict = _reference_state_dict("gmflow")
    path = tmp_path / "gmflow_things.pth"
    torch.save({"model": state_dict}, path)  # the official releases wrap it so
    model = zoo.create_model("gmflow", checkpoint=str(path))
    assert torch.equal(model.upsampler[2].weight, state_dict["upsampler.2.weight"])
    refine_path = tmp_path / "gmflow_with_refine.pth"
    torch.save(_reference_state_dict("gmflow_refine"), refine_path)
    with pytest.raises(ConfigError, match=r"1 unexpected \(first: backbone.trident_conv.weight\); "
                                          r"2 of another shape \(first: upsampler.2.weight"):
        zoo.create_model("gmflow", checkpoint=str(refine_path))


def test_grayscale_model_adapts_a_colour_checkpoint(tmp_path):
    state_dict = _reference_state_dict("gmflow")
    path = tmp_path / "gmflow.pth"
    torch.save(state_dict, path)
    model = zoo.create_model("gmflow", in_channels=1, checkpoint=str(path)).eval()
    weight = state_dict["backbone.conv1.weight"]
    assert torch.equal(model.backbone.conv1.weight, weight.sum(dim=1, keepdim=True))
    img0, img1 = model.example_inputs(1, (64, 96))
    assert img0.shape == (1, 1, 64, 96)
    with torch.no_grad():
        assert model(img0, img1)["flow_preds"][0].shape == (1, 2, 64, 96)


# ---- stages and payload -------------------------------------------------------------------

def _record(model: torch.nn.Module, size=(64, 96)) -> list:
    with Session(record_payload=True) as session, torch.no_grad():
        with session.forward():
            model(*model.example_inputs(1, size))
    return session.forwards[0]


def _shape(node):
    return node.shape if hasattr(node, "shape") else [_shape(child) for _, child in node.items]


def test_gmflow_stages_and_payload_shapes():
    model = zoo.create_model("gmflow").eval()
    calls = _record(model)
    assert tuple(dict.fromkeys(call.name for call in calls)) == model.stage_names == (
        "normalize", "backbone", "conv1", "layer1", "layer2", "layer3", "conv2", "feature0",
        "feature1", "position_encoding", "transformer", "self_attn", "cross_attn_ffn",
        "global_correlation_softmax", "feature_flow_attn", "upsampler")
    by_key = {call.key: call for call in calls}
    outputs = {  # 64x96 input: 1/2 = 32x48, 1/4 = 16x24, 1/8 = 8x12 (96 tokens)
        ("normalize", 0): [(1, 3, 64, 96), (1, 3, 64, 96)],
        ("backbone", 0): [(2, 128, 8, 12)],
        ("conv1", 0): (2, 64, 32, 48),
        ("layer1", 0): (2, 64, 32, 48),
        ("layer2", 0): (2, 96, 16, 24),
        ("layer3", 0): (2, 128, 8, 12),
        ("conv2", 0): (2, 128, 8, 12),
        ("feature0", 0): (1, 128, 8, 12),
        ("feature1", 0): (1, 128, 8, 12),
        ("position_encoding", 0): [(1, 128, 8, 12), (1, 128, 8, 12)],
        ("transformer", 0): [(1, 128, 8, 12), (1, 128, 8, 12)],
        ("self_attn", 5): (2, 96, 128),
        ("cross_attn_ffn", 5): (2, 96, 128),
        ("global_correlation_softmax", 0): (1, 2, 8, 12),
        ("feature_flow_attn", 0): (1, 2, 8, 12),
        ("upsampler", 0): (1, 2, 64, 96),
    }
    assert {key: _shape(by_key[key].outputs) for key in outputs} == outputs
    assert _shape(by_key[("cross_attn_ffn", 0)].inputs) == [(2, 96, 128), (2, 96, 128)]
    assert by_key[("backbone", 0)].inputs.nbytes == 2 * 3 * 64 * 96 * 4
    assert [call.kind for call in calls if call.name in ("feature0", "feature1")] == ["probe"] * 2
    counts = {name: sum(call.name == name for call in calls) for name in model.stage_names}
    assert counts["self_attn"] == counts["cross_attn_ffn"] == 6
    assert by_key[("self_attn", 0)].parent == by_key[("transformer", 0)].index
    assert by_key[("conv1", 0)].parent == by_key[("backbone", 0)].index


def test_refine_stages_per_scale():
    model = zoo.create_model("gmflow_refine").eval()
    calls = _record(model)
    assert tuple(dict.fromkeys(call.name for call in calls)) == model.stage_names
    assert model.stage_names[7:] == (
        "trident_conv", "feature0", "feature1", "position_encoding", "transformer", "self_attn",
        "cross_attn_ffn", "global_correlation_softmax", "feature_flow_attn", "flow_warp",
        "local_correlation_softmax", "upsampler")
    by_key = {call.key: call for call in calls}
    outputs = {  # scale 0 at 1/8 (8x12), scale 1 at 1/4 (16x24, 384 tokens)
        ("layer3", 0): (2, 128, 16, 24),
        ("trident_conv", 0): [(2, 128, 16, 24), (2, 128, 8, 12)],
        ("backbone", 0): [(2, 128, 8, 12), (2, 128, 16, 24)],
        ("feature0", 1): (1, 128, 16, 24),
        ("position_encoding", 0): [(1, 128, 8, 12), (1, 128, 8, 12)],
        ("position_encoding", 1): [(1, 128, 16, 24), (1, 128, 16, 24)],
        ("self_attn", 5): (2, 96, 128),
        ("self_attn", 6): (2, 384, 128),
        ("flow_warp", 0): [(1, 2, 16, 24), (1, 128, 16, 24)],
        ("local_correlation_softmax", 0): (1, 2, 16, 24),
        ("feature_flow_attn", 1): (1, 2, 16, 24),
        ("upsampler", 0): (1, 2, 64, 96),
    }
    assert {key: _shape(by_key[key].outputs) for key in outputs} == outputs
    assert sum(call.name == "self_attn" for call in calls) == 12


def test_stage_markers_do_not_change_outputs():
    model = zoo.create_model("gmflow").eval()
    inputs = model.example_inputs(1, (64, 96))
    with torch.no_grad():
        plain = model(*inputs)["flow_preds"][0]
        with Session(record_payload=True) as session, session.forward():
            profiled = model(*inputs)["flow_preds"][0]
    assert torch.equal(plain, profiled)


def test_training_mode_returns_the_intermediate_flows():
    model = zoo.create_model("gmflow").train()
    flows = model(*model.example_inputs(1, (64, 96)))["flow_preds"]
    assert [tuple(f.shape) for f in flows] == [(1, 2, 64, 96)] * 2  # bilinear, then convex


def test_example_inputs_are_seeded_pairs_in_0_255():
    model = zoo.create_model("gmflow")
    img0, img1 = model.example_inputs(2, (64, 96), generator=torch.Generator().manual_seed(3))
    again = model.example_inputs(2, (64, 96), generator=torch.Generator().manual_seed(3))
    assert img0.shape == img1.shape == (2, 3, 64, 96)
    assert torch.equal(img0, again[0]) and torch.equal(img1, again[1])
    assert not torch.equal(img0, img1)
    assert 0 <= img0.min() and img0.max() < 255 and img0.max() > 250
    assert model.input_scale == 255.0


# ---- input sizes and options --------------------------------------------------------------

@pytest.mark.parametrize("name, size, message, padded", [
    ("gmflow", (65, 96), "multiples of 16 .*nearest valid sizes: 64x96, 80x96;", (80, 96)),
    ("gmflow", (70, 100), "nearest valid sizes: 64x96, 80x96, 64x112, 80x112;", (80, 112)),
    ("gmflow_refine", (64, 100), "multiples of 32 .*nearest valid sizes: 64x96, 64x128;",
     (64, 128)),
])
def test_bad_input_sizes(name, size, message, padded):
    model = zoo.create_model(name)
    assert model.check_input_size((64, 96)) == (64, 96)
    with pytest.raises(ConfigError, match=message):
        model.check_input_size(size)
    assert model.check_input_size(size, pad=True) == padded


def test_padded_input_runs_and_replicates_edges():
    model = zoo.create_model("gmflow").eval()
    inputs = model.example_inputs(1, (60, 90))
    padded = model.pad_inputs(inputs, model.check_input_size((60, 90), pad=True))
    assert padded[0].shape == (1, 3, 64, 96)
    assert torch.equal(padded[0][..., 2, 3:93], inputs[0][..., 0, :])  # 2 rows, 3 cols on top/left
    with torch.no_grad():
        assert model(*padded)["flow_preds"][0].shape == (1, 2, 64, 96)


@pytest.mark.parametrize("options, message", [
    (dict(attention_type="linear"),
     "attention_type='linear' is not accepted; accepted: swin, full"),
    (dict(attention_impl="flash"), "accepted: sdpa, math"),
    (dict(upsample_factor=16), "accepted: 4, 8"),
    (dict(num_head=3), "num_head=3 does not divide feature_channels=128"),
    (dict(feature_channels=126), "multiple of 4"),
    (dict(first_kernel_size=4), "odd size"),
    (dict(attn_splits_list=[2, 2]), "attn_splits_list has 2 entries; it needs one per scale"),
    (dict(attn_splits_list=[0]), r"attn_splits_list=\[0\] is not accepted; accepted: integers"),
    (dict(corr_radius_list=[0]), "accepted: -1 .global. or a radius >= 1"),
])
def test_bad_options(options, message):
    with pytest.raises(ConfigError, match=message):
        zoo.create_model("gmflow", **options)
