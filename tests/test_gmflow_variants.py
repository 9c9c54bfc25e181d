"""GMFlow's architecture modifications (each changes exactly the parameters it should) and the
``gmflow_unet`` decoder variant. Parameter counts are worked out by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import zoo
from profiling import Session
from zoo.options import ConfigError

SIZE = (64, 96)  # 1/8: 8x12 = 96 tokens; 1/4: 16x24 = 384 tokens

# Default GMFlow: encoder 1,049,120 (the seed's torchinfo total); transformer 6 blocks of
# 8C² + 6·E·C² + 6C = 525,056 with C=128, E=4 (3,150,336, the seed's total); feature-flow
# attention 2·(C² + C) = 33,024; upsampler (2+C)·256·9 + 256 + 256·576 + 576 = 447,808.
DEFAULT_COUNTS = {"backbone": 1_049_120, "transformer": 3_150_336,
                  "feature_flow_attn": 33_024, "upsampler": 447_808}


def _counts(model: torch.nn.Module) -> dict[str, int]:
    return {name: sum(p.numel() for p in child.parameters())
            for name, child in model.named_children()}


def _shape_changes(model: torch.nn.Module, reference: torch.nn.Module) -> dict[str, tuple]:
    """``{key: (reference shape, model shape)}`` for every key added, removed or reshaped."""
    ours = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    theirs = {k: tuple(v.shape) for k, v in reference.state_dict().items()}
    return {k: (theirs.get(k), ours.get(k)) for k in ours.keys() | theirs.keys()
            if ours.get(k) != theirs.get(k)}


def _record(model: torch.nn.Module, inputs) -> tuple[list, list]:
    with Session(record_payload=True) as session, torch.no_grad():
        with session.forward():
            flows = model(*inputs)["flow_preds"]
    return session.forwards[0], flows


def _output_shape(calls, name: str, call_index: int = 0):
    call = next(c for c in calls if c.key == (name, call_index))
    return call.outputs.shape


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    return zoo.create_model("gmflow").eval()


def test_default_parameter_counts(reference):
    assert _counts(reference) == DEFAULT_COUNTS
    assert sum(DEFAULT_COUNTS.values()) == 4_680_288  # the paper's 4.7M


@pytest.mark.parametrize("options, changes, counts", [
    # conv1 64·1·7·7 = 3,136 instead of 64·3·7·7 = 9,408: encoder 1,042,848.
    (dict(in_channels=1), {"backbone.conv1.weight": ((64, 3, 7, 7), (64, 1, 7, 7))},
     {"backbone": 1_042_848}),
    # conv1 64·3·5·5 = 4,800: encoder 1,049,120 - 4,608.
    (dict(first_kernel_size=5), {"backbone.conv1.weight": ((64, 3, 7, 7), (64, 3, 5, 5))},
     {"backbone": 1_044_512}),
    # Features at 1/4: upsampler.2 predicts 4²·9 = 144 weights: 256·144 + 144 = 37,008.
    (dict(upsample_factor=4), {"upsampler.2.weight": ((576, 256, 1, 1), (144, 256, 1, 1)),
                               "upsampler.2.bias": ((576,), (144,))},
     {"upsampler": 299_776 + 37_008}),
    # conv1 at stride 1 keeps the encoder at 1/4 with layer3 at stride 2: same parameters
    # as upsample_factor=4.
    (dict(first_stride=1, upsample_factor=4),
     {"upsampler.2.weight": ((576, 256, 1, 1), (144, 256, 1, 1)),
      "upsampler.2.bias": ((576,), (144,))}, {"upsampler": 336_784}),
    # 6 blocks of 8·128² + 6·2·128² + 768 = 328,448 (the FFN's two matrices shrink).
    (dict(ffn_dim_expansion=2),
     {**{f"transformer.layers.{i}.cross_attn_ffn.mlp.0.weight": ((1024, 256), (512, 256))
         for i in range(6)},
      **{f"transformer.layers.{i}.cross_attn_ffn.mlp.2.weight": ((128, 1024), (128, 512))
         for i in range(6)}},
     {"transformer": 1_970_688}),
])
def test_modification_changes_exactly(reference, options, changes, counts):
    model = zoo.create_model("gmflow", **options).eval()
    assert _shape_changes(model, reference) == changes
    assert _counts(model) == {**DEFAULT_COUNTS, **counts}
    inputs = model.example_inputs(1, SIZE)
    assert inputs[0].shape == (1, model.in_channels, *SIZE)
    calls, flows = _record(model, inputs)
    assert flows[0].shape == (1, 2, *SIZE)


def test_fewer_transformer_layers(reference):
    model = zoo.create_model("gmflow", num_transformer_layers=4).eval()
    changes = _shape_changes(model, reference)
    assert len(changes) == 2 * 16  # per block: 6 self_attn tensors, 10 cross_attn_ffn ones
    assert all(k.startswith(("transformer.layers.4.", "transformer.layers.5."))
               and new is None for k, (_, new) in changes.items())
    assert _counts(model) == {**DEFAULT_COUNTS, "transformer": 4 * 525_056}
    calls, _ = _record(model, model.example_inputs(1, SIZE))
    assert sum(c.name == "self_attn" for c in calls) == 4


def test_feature_channels(reference):
    model = zoo.create_model("gmflow", feature_channels=64).eval()
    # conv2 128·64 + 64; blocks of 8·64² + 6·4·64² + 6·64 = 131,456; 2·(64² + 64);
    # upsampler 66·256·9 + 256 + 147,456 + 576.
    assert _counts(model) == {"backbone": 1_049_120 - 16_512 + 8_256,
                              "transformer": 6 * 131_456, "feature_flow_attn": 8_320,
                              "upsampler": 152_320 + 148_032}
    changes = _shape_changes(model, reference)
    assert changes["backbone.conv2.weight"] == ((128, 128, 1, 1), (64, 128, 1, 1))
    assert not any(k.startswith("backbone.layer") for k in changes)
    calls, flows = _record(model, model.example_inputs(1, SIZE))
    assert _output_shape(calls, "self_attn") == (2, 96, 64)
    assert flows[0].shape == (1, 2, *SIZE)


@pytest.mark.parametrize("options", [dict(num_head=2), dict(attention_type="full"),
                                     dict(attn_splits_list=[1]), dict(position_encoding="none")])
def test_attention_options_keep_parameters_and_change_the_flow(reference, options):
    model = zoo.create_model("gmflow", **options).eval()
    assert _shape_changes(model, reference) == {}
    model.load_state_dict(reference.state_dict())
    inputs = model.example_inputs(1, SIZE)
    with torch.no_grad():
        flow = model(*inputs)["flow_preds"][0]
        expected = reference(*inputs)["flow_preds"][0]
    assert flow.shape == expected.shape
    assert (flow - expected).abs().mean() > 0.1


def test_relative_position_encoding(reference):
    model = zoo.create_model("gmflow", position_encoding="relative").eval()
    # one bias MLP per attention layer (6 blocks x 2): Linear(2, 512) 2·512 + 512, then
    # Linear(512, 1 head) without bias 512: 2,048 each, 24,576 in all.
    added = _shape_changes(model, reference)
    assert len(added) == 12 * 3 and all(old is None for old, _ in added.values())
    assert added["transformer.layers.0.self_attn.position_bias.mlp.2.weight"] == (None, (1, 512))
    assert _counts(model) == {**DEFAULT_COUNTS, "transformer": 3_150_336 + 24_576}
    assert "position_encoding" not in model.stage_names
    without = zoo.create_model("gmflow", position_encoding="none")
    assert "position_encoding" not in without.stage_names
    calls, flows = _record(model, model.example_inputs(1, SIZE))
    assert "position_encoding" not in {c.name for c in calls}
    assert flows[0].shape == (1, 2, *SIZE)
    with pytest.raises(RuntimeError, match="position_bias"):  # official weights need "sine"
        model.load_state_dict(reference.state_dict())


def test_relative_bias_depends_only_on_the_offset():
    from zoo.models.networks.gmflow.relative_position import RelativePositionBias
    torch.manual_seed(0)
    bias = RelativePositionBias(num_heads=2)(3, 4)  # a 3x4 window: 12 tokens, row-major
    assert bias.shape == (2, 12, 12)
    assert 0 < bias.min() and bias.max() < 16  # 16·sigmoid(...)
    # (row 0, col 0) -> (row 1, col 2) and (row 1, col 1) -> (row 2, col 3): offset (+1, +2)
    assert torch.equal(bias[:, 0, 6], bias[:, 5, 11])
    assert not torch.equal(bias[:, 0, 6], bias[:, 6, 0])  # (-1, -2) is another offset


@pytest.mark.parametrize("height, width", [(3, 4), (1, 5), (6, 1), (7, 9)])
def test_relative_bias_expansion_equals_indexing(height, width):
    from zoo.models.networks.gmflow.relative_position import _expand_offsets
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(2, 2 * height - 1, 2 * width - 1, generator=generator)
    rows = torch.arange(height).repeat_interleave(width)
    cols = torch.arange(width).repeat(height)
    indexed = table[:, rows[:, None] - rows[None, :] + height - 1,
                    cols[:, None] - cols[None, :] + width - 1]
    assert torch.equal(_expand_offsets(table, height, width), indexed)


def test_whole_map_attention_needs_only_the_feature_stride():
    model = zoo.create_model("gmflow", attn_splits_list=[1])
    assert model.size_divisor == 8
    assert model.check_input_size((72, 88)) == (72, 88)


def test_features_at_one_quarter():
    model = zoo.create_model("gmflow", first_stride=1, upsample_factor=4).eval()
    calls, _ = _record(model, model.example_inputs(1, SIZE))
    assert _output_shape(calls, "conv1") == (2, 64, 64, 96)
    assert _output_shape(calls, "layer3") == (2, 128, 16, 24)
    assert _output_shape(calls, "self_attn") == (2, 384, 128)
    assert model.size_divisor == 8


@pytest.mark.parametrize("position_encoding", ["sine", "relative"])
def test_sdpa_and_math_attention_agree(monkeypatch, position_encoding):
    # fused at 64x96
    monkeypatch.setattr("zoo.models.networks.gmflow.attention.FUSED_MIN_KEYS_CPU", 0)
    torch.manual_seed(1)
    sdpa = zoo.create_model("gmflow", position_encoding=position_encoding).eval()
    math_ = zoo.create_model("gmflow", attention_impl="math",
                             position_encoding=position_encoding).eval()
    math_.load_state_dict(sdpa.state_dict())
    inputs = sdpa.example_inputs(1, SIZE)
    with torch.no_grad():
        difference = sdpa(*inputs)["flow_preds"][0] - math_(*inputs)["flow_preds"][0]
    assert difference.abs().max() < 2e-3


# ---- gmflow_unet ----------------------------------------------------------------------------

# conv_more 128·512·9 + 2·512; blocks (conv + BN, twice): (512+128)·128·9 + 128·128·9 + 4·128,
# (128+96)·96·9 + 96·96·9 + 4·96, (96+64)·64·9 + 64·64·9 + 4·64, 64·16·9 + 16·16·9 + 4·16.
DECODER_PARAMS = 590_848 + 885_248 + 276_864 + 129_280 + 11_584


def test_unet_parameters_and_stages():
    model = zoo.create_model("gmflow_unet").eval()
    assert _counts(model) == {**DEFAULT_COUNTS, "decoder": DECODER_PARAMS,
                              "flow_head": 16 * 2 * 9 + 2}
    assert model.stage_names == type(model).stage_names
    assert model.stage_names[-6:] == ("decoder_conv_more", "decoder_block1", "decoder_block2",
                                      "decoder_block3", "decoder_block4", "flow_head")
    calls, flows = _record(model, model.example_inputs(1, SIZE))
    assert tuple(dict.fromkeys(c.name for c in calls)) == model.stage_names
    shapes = {name: _output_shape(calls, name) for name in model.stage_names[-6:]}
    assert shapes == {"decoder_conv_more": (1, 512, 8, 12), "decoder_block1": (1, 128, 8, 12),
                      "decoder_block2": (1, 96, 16, 24), "decoder_block3": (1, 64, 32, 48),
                      "decoder_block4": (1, 16, 64, 96), "flow_head": (1, 2, 64, 96)}
    skips = next(c for c in calls if c.name == "decoder_block3").inputs
    assert [leaf.shape for _, leaf in skips.items] == [(1, 96, 16, 24), (1, 64, 32, 48)]
    assert [f.shape for f in flows] == [(1, 2, *SIZE)] * 2


def test_unet_head_starts_as_gmflow(reference):
    model = zoo.create_model("gmflow_unet").eval()
    missing, unexpected = model.load_state_dict(reference.state_dict(), strict=False)
    assert not unexpected and all(k.startswith(("decoder.", "flow_head.")) for k in missing)
    inputs = model.example_inputs(1, SIZE)
    with torch.no_grad():
        gmflow_flow, refined = model(*inputs)["flow_preds"]
        expected = reference(*inputs)["flow_preds"][0]
        assert torch.allclose(gmflow_flow, expected, atol=1e-5)
        assert torch.equal(refined, gmflow_flow)  # the zero-initialised head adds nothing
        torch.nn.init.normal_(model.flow_head.weight)
        assert not torch.allclose(model(*inputs)["flow_preds"][1], gmflow_flow)


def test_unet_bidirectional_and_other_strides():
    model = zoo.create_model("gmflow_unet", pred_bidir_flow=True).eval()
    with torch.no_grad():
        flows = model(*model.example_inputs(1, SIZE))["flow_preds"]
    assert [f.shape for f in flows] == [(2, 2, *SIZE)] * 2
    model = zoo.create_model("gmflow_unet", first_stride=1, upsample_factor=4).eval()
    calls, flows = _record(model, model.example_inputs(1, SIZE))
    assert _output_shape(calls, "decoder_block1") == (1, 128, 16, 24)
    assert _output_shape(calls, "decoder_block4") == (1, 16, 64, 96)
    assert flows[-1].shape == (1, 2, *SIZE)


def test_unet_bad_decoder():
    with pytest.raises(ConfigError, match="decoder_channels=.128, 64, 16. needs 4 entries"):
        zoo.create_model("gmflow_unet", decoder_channels=[128, 64, 16])


def test_the_users_modifications_as_one_experiment():
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from zoo.tools.composition import store_declared_configs

    store_declared_configs()  # the declared options' defaults, for Hydra (alone it failed)
    config_dir = str(Path(__file__).resolve().parents[1] / "configs")
    with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
        config = compose("profile", overrides=["experiment=gmflow_gray_relative_unet"])
    model = instantiate(config.model).eval()
    # gmflow_unet's 6,574,402, minus conv1's 64·2·7·7 = 6,272 for one channel instead of three,
    # plus 12 relative-bias MLPs of 2,048
    assert sum(p.numel() for p in model.parameters()) == 6_574_402 - 6_272 + 24_576
    calls, flows = _record(model, model.example_inputs(1, SIZE))
    assert _output_shape(calls, "conv1") == (2, 64, 32, 48)
    assert "position_encoding" not in {c.name for c in calls}
    assert flows[-1].shape == (1, 2, *SIZE)
