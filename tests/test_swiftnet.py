"""SwiftNet: the users' torchstat table, the official golden logits, stages, options, errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import zoo
from profiling import Session
from profiling.stages.payload import iter_leaves
from reference_weights import fill_reference_weights_, load_reference, official_names
from zoo.models.base import sum_input_channels
from zoo.models.networks.swiftnet import official_key
from zoo.tools.composition import store_declared_configs

#: the users' seed logs the tests compare with, copied from ../shared/seeds
SEEDS_DIR = Path(__file__).resolve().parent / "data" / "seeds"
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
GOLDEN = "swiftnet_rn18_official_128x256.pt"
#: the compact reference of the official code (tests/data/README.md), in every clone.
REFERENCE = "swiftnet_64x128.pt"
#: max |logits - official| / max |official| against it: float32 round-off (5e-7 measured
#: with 2 threads, 0 with 1).
REFERENCE_TOLERANCE = 1e-5
SEED_OPTIONS = dict(in_channels=4, num_classes=3, batch_norm=False, conv_bias=True)

# index, module name, input C H W, output C H W, params (torchstat prints 8192.0 or 36,928.0)
_SEED_ROW = re.compile(r"^\s*\d+\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+"
                       r"([\d,]+)\.0\s")


def leaf_rows(model: torch.nn.Module, image: torch.Tensor) -> list[tuple]:
    """torchstat's rows: every called module without children, in order of first call, with
    its input and output shape (batch dropped) and its parameter count."""
    rows: dict[str, tuple] = {}

    def record(name):
        def hook(module, inputs, output):
            if name not in rows:
                rows[name] = (name, tuple(inputs[0].shape[1:]), tuple(output.shape[1:]),
                              sum(p.numel() for p in module.parameters()))
        return hook

    handles = [module.register_forward_hook(record(name))
               for name, module in model.named_modules() if not list(module.children())]
    try:
        with torch.no_grad():
            model(image)
    finally:
        for handle in handles:
            handle.remove()
    return list(rows.values())


@pytest.fixture(scope="module")
def seed_rows() -> list[tuple]:
    """The rows of the 4-channel model at 1024×1024, computed on the meta device."""
    with torch.device("meta"):
        model = zoo.create_model("swiftnet", **SEED_OPTIONS)
        return leaf_rows(model, torch.empty(1, 4, 1024, 1024))


def test_seed_configuration_key_numbers(seed_rows):
    assert len(seed_rows) == 54
    assert sum(row[3] for row in seed_rows) == 11_789_377
    by_name = {row[0]: row for row in seed_rows}
    assert by_name["encoder.conv1"] == ("encoder.conv1", (4, 1024, 1024), (64, 512, 512),
                                        64 * 4 * 7 * 7 + 64)
    assert by_name["encoder.layer3.0.downsample.0"][3] == 128 * 256  # no bias
    assert by_name["spp.spp.spp1.conv"] == ("spp.spp.spp1.conv", (128, 4, 4), (42, 4, 4),
                                            128 * 42 + 42)
    assert by_name["spp.spp.spp_fuse.conv"][1:] == ((254, 32, 32), (128, 32, 32), 254 * 128 + 128)
    assert seed_rows[-1] == ("post.conv", (128, 256, 256), (3, 256, 256), 128 * 3 + 3)
    assert [row[0] for row in seed_rows[9:13]] == [
        "encoder.layer2.0.conv1", "encoder.layer2.0.relu", "encoder.layer2.0.conv2",
        "encoder.layer2.0.downsample.0"]


def test_seed_table_rows_match(seed_rows):
    paths = sorted(SEEDS_DIR.glob("000_*.txt"))
    assert len(paths) == 1, f"the torchstat seed table belongs in {SEEDS_DIR}"
    expected = []
    for line in paths[0].read_text().splitlines():
        match = _SEED_ROW.match(line)
        if match:
            numbers = [int(g) for g in match.groups()[1:7]]
            expected.append((match[1], tuple(numbers[:3]), tuple(numbers[3:]),
                             int(match[8].replace(",", ""))))
    assert len(expected) == 54
    assert seed_rows == expected


def test_official_golden_logits(golden, tmp_path):
    reference = golden(GOLDEN)
    path = tmp_path / "official.pt"
    torch.save(reference["state_dict"], path)
    model = zoo.create_model("swiftnet", num_classes=19, checkpoint=str(path)).eval()
    image = reference["image"].clone()
    with torch.no_grad():
        logits = model(image)
    expected = reference["logits"]
    assert torch.equal(image, reference["image"])  # normalised out of place
    assert logits.shape == (1, 19, 128, 256)
    assert ((logits - expected).abs().max() / expected.abs().max()).item() < 1e-4

    # The paper's unrectified skips are a different network from what the official code runs.
    paper = zoo.create_model("swiftnet", preact_skip=True).eval()
    paper.load_state_dict(model.state_dict())
    with torch.no_grad():
        relative = (paper(image) - expected).abs().max() / expected.abs().max()
    assert relative.item() > 1e-3


def _reference_model(**options) -> tuple[torch.nn.Module, dict, dict[str, str]]:
    """Our SwiftNet with the reference weights of the official names, the reference, and our
    name -> official name for every entry."""
    data = load_reference(REFERENCE)
    names = official_names(data, official_key)
    model = zoo.create_model("swiftnet", **data["model_kwargs"], **options).eval()
    fill_reference_weights_(model, names.__getitem__)
    return model, data, names


def _relative_error(logits: torch.Tensor, expected: torch.Tensor) -> float:
    return ((logits - expected).abs().max() / expected.abs().max()).item()


def test_matches_official_reference():
    model, data, names = _reference_model()
    assert data["official_commit"].startswith("2b88990")
    assert set(names) == set(model.state_dict())  # the key map covers every official entry
    assert {name: list(value.shape) for name, value in model.state_dict().items()} == {
        ours: data["official_entries"][official] for ours, official in names.items()}
    image = data["image"].clone()
    with torch.no_grad():
        logits = model(image)
    assert torch.equal(image, data["image"])  # normalised out of place
    assert logits.shape == (1, 19, 64, 128)
    assert _relative_error(logits, data["logits"]) <= REFERENCE_TOLERANCE

    paper, *_ = _reference_model(preact_skip=True)  # the paper's unrectified skips
    with torch.no_grad():
        assert _relative_error(paper(image), data["logits"]) > 10 * REFERENCE_TOLERANCE


def test_official_key_mapping():
    assert official_key("backbone.img_mean") == "img_mean"
    assert official_key("backbone.bn1.running_var") == "encoder.bn1.running_var"
    assert official_key("backbone.layer4.1.conv2.weight") == "encoder.layer4.1.conv2.weight"
    assert official_key("backbone.spp.spp.spp_fuse.norm.weight") == "spp.spp.spp_fuse.norm.weight"
    assert official_key("backbone.upsample.0.bottleneck.conv.weight") == \
        "decoder.up1.skip_conv.conv.weight"
    assert official_key("module.backbone.upsample.2.blend_conv.norm.bias") == \
        "decoder.up3.blend_conv.norm.bias"
    assert official_key("logits.conv.bias") == "post.conv.bias"
    assert official_key("decoder.up2.skip_conv.conv.weight") == "decoder.up2.skip_conv.conv.weight"


def test_official_checkpoint_adapts_to_one_channel(tmp_path):
    model, _, names = _reference_model()
    state_dict = {names[name]: value for name, value in model.state_dict().items()}
    path = tmp_path / "official.pt"
    torch.save(state_dict, path)
    model = zoo.create_model("swiftnet", in_channels=1, checkpoint=str(path))
    weight = state_dict["backbone.conv1.weight"]
    assert torch.equal(model.encoder.conv1.weight, sum_input_channels(weight, 1))
    assert model.img_mean.shape == (1, 1, 1, 1)
    assert model.img_mean.item() == pytest.approx(state_dict["backbone.img_mean"].mean().item())


def test_stages_and_payload():
    model = zoo.create_model("swiftnet").eval()
    with Session(record_payload=True) as session:
        with session.forward(), torch.no_grad():
            model(torch.rand(1, 3, 64, 96) * 255)
    calls = session.forwards[0]
    assert tuple(call.name for call in calls) == model.stage_names
    parents = {call.name: calls[call.parent].name if call.parent is not None else None
               for call in calls}
    assert parents == {"encoder": None, "stem": "encoder", "layer1": "encoder",
                       "layer2": "encoder", "layer3": "encoder", "layer4": "encoder",
                       "spp": None, "decoder": None, "up1": "decoder", "up2": "decoder",
                       "up3": "decoder", "post": None}

    def shapes(node):
        return [leaf.shape for _, leaf in iter_leaves(node)]

    by_name = {call.name: call for call in calls}
    assert shapes(by_name["encoder"].outputs) == [(1, 64, 16, 24), (1, 128, 8, 12),
                                                  (1, 256, 4, 6), (1, 512, 2, 3)]
    assert shapes(by_name["stem"].outputs) == [(1, 64, 16, 24)]
    assert shapes(by_name["spp"].outputs) == [(1, 128, 2, 3)]
    assert shapes(by_name["decoder"].inputs) == [(1, 128, 2, 3), (1, 64, 16, 24),
                                                 (1, 128, 8, 12), (1, 256, 4, 6)]
    assert shapes(by_name["up1"].outputs) == [(1, 128, 4, 6)]
    assert shapes(by_name["post"].outputs) == [(1, 19, 64, 96)]
    assert by_name["post"].outputs.nbytes == 19 * 64 * 96 * 4


def test_bad_inputs():
    model = zoo.create_model("swiftnet", batch_norm=False)
    with pytest.raises(zoo.ConfigError, match=r"takes images \[B, 3, H, W\].*\[1, 4, 64, 64\]"):
        model(torch.zeros(1, 4, 64, 64))
    with pytest.raises(zoo.ConfigError, match="nearest valid size 32x100"):
        model.check_input_size((16, 100))
    assert model.check_input_size((16, 100), pad=True) == (32, 100)
    assert model.check_input_size((720, 960)) == (720, 960)
    with pytest.raises(zoo.ConfigError, match="img_mean has 3 values for in_channels=4"):
        zoo.create_model("swiftnet", in_channels=4, img_mean=[1.0, 2.0, 3.0])


def test_odd_size_output_matches_input():
    model = zoo.create_model("swiftnet", num_classes=2, spp_grids=[4, 2]).eval()
    with torch.no_grad():
        logits = model(torch.rand(2, 3, 45, 70) * 255)
    assert logits.shape == (2, 2, 45, 70)
    assert model.spp.spp.spp0.conv.out_channels == 64  # num_features // 2 levels


def test_config_overrides_build():
    store_declared_configs()  # the declared options' defaults, for Hydra
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="profile", overrides=["experiment=swiftnet_4ch"])
        plain = compose(config_name="profile",
                        overrides=["model=swiftnet", "model.num_classes=7",
                                   "model.spp_grids=[6,3]", "model.num_features=96"])
    assert list(cfg.input.size) == [1024, 1024]
    with torch.device("meta"):
        model = instantiate(cfg.model)
        other = instantiate(plain.model)
    assert sum(p.numel() for p in model.parameters()) == 11_789_377
    assert model.in_channels == 4 and model.post.conv.out_channels == 3
    assert other.post.conv.out_channels == 7
    assert other.spp.grids == (6, 3)
    assert other.spp.spp.spp0.conv.out_channels == 48
