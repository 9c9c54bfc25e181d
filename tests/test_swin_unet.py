"""swin_unet: output shapes, stages and payload, parameter counts, options, weights, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import timm
import torch
from hydra import compose, initialize_config_dir
from zoo.tools.composition import store_declared_configs
from hydra.utils import instantiate

import zoo
from profiling import Session
from profiling.stages.payload import iter_leaves

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
VARIANT = "swin_tiny_patch4_window7_224"


def conv_bn(cin: int, cout: int) -> int:
    """Parameters of a 3×3 conv without bias followed by a BatchNorm."""
    return 9 * cin * cout + 2 * cout


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return zoo.create_model("swin_unet").eval()


@pytest.mark.parametrize("size", [(64, 64), (96, 160)])
def test_output_shape(model, size):
    with torch.no_grad():
        logits = model(torch.randn(1, 3, *size))
    assert logits.shape == (1, 9, *size)


def test_parameter_counts(model):
    # Swin-T is 28,288,354 parameters with its final norm (2 × 768) and 1000-class head.
    encoder = 28_288_354 - 2 * 768 - (768 * 1000 + 1000)
    decoder = (conv_bn(768, 512)
               + conv_bn(512 + 384, 256) + conv_bn(256, 256)
               + conv_bn(256 + 192, 128) + conv_bn(128, 128)
               + conv_bn(128 + 96, 64) + conv_bn(64, 64)
               + conv_bn(64, 16) + conv_bn(16, 16))
    head = 9 * 16 * 9 + 9
    count = lambda module: sum(p.numel() for p in module.parameters())  # noqa: E731
    assert count(model.encoder) == encoder
    assert count(model.decoder) == decoder
    assert count(model) == encoder + decoder + head == 34_556_115


def test_stages_and_payload(model):
    with Session(record_payload=True) as session:
        with session.forward(), torch.no_grad():
            model(torch.randn(1, 3, 64, 96))
    calls = session.forwards[0]
    assert tuple(call.name for call in calls) == model.stage_names
    parents = {call.name: calls[call.parent].name if call.parent is not None else None
               for call in calls}
    assert [name for name, parent in parents.items() if parent is None] == [
        "encoder", "decoder", "head"]
    assert all(parents[name] == "encoder" for name in ("patch_embed", "stage1", "stage4"))
    assert all(parents[name] == "decoder" for name in ("conv_more", "block1", "block4"))

    def shapes(node):
        return [leaf.shape for _, leaf in iter_leaves(node)]

    by_name = {call.name: call for call in calls}
    assert shapes(by_name["patch_embed"].outputs) == [(1, 16, 24, 96)]  # timm's NHWC
    assert shapes(by_name["stage4"].outputs) == [(1, 2, 3, 768)]
    assert shapes(by_name["encoder"].outputs) == [(1, 96, 16, 24), (1, 192, 8, 12),
                                                  (1, 384, 4, 6), (1, 768, 2, 3)]
    assert shapes(by_name["decoder"].inputs) == [(1, 768, 2, 3), (1, 384, 4, 6),
                                                 (1, 192, 8, 12), (1, 96, 16, 24)]
    assert shapes(by_name["conv_more"].outputs) == [(1, 512, 2, 3)]
    assert shapes(by_name["block1"].inputs) == [(1, 512, 2, 3), (1, 384, 4, 6)]
    assert shapes(by_name["block3"].outputs) == [(1, 64, 16, 24)]
    assert shapes(by_name["block4"].inputs) == [(1, 64, 16, 24)]  # no skip: ×4 to full size
    assert shapes(by_name["block4"].outputs) == [(1, 16, 64, 96)]
    assert by_name["head"].outputs.nbytes == 9 * 64 * 96 * 4


def test_fewer_skips_and_more_blocks():
    torch.manual_seed(0)
    model = zoo.create_model("swin_unet", n_skip=1, num_classes=2, in_channels=1,
                             decoder_channels=[64, 32, 16, 16, 8]).eval()
    assert model.stage_names[-8:] == ("decoder", "conv_more", "block1", "block2", "block3",
                                 "block4", "block5", "head")
    assert model.decoder.blocks[0].conv1[0].in_channels == 512 + 384
    assert model.decoder.blocks[1].conv1[0].in_channels == 64  # no skip
    assert [block.scale_factor for block in model.decoder.blocks] == [2, 2, 2, 2, 2]
    with torch.no_grad():
        assert model(torch.randn(1, 1, 32, 64)).shape == (1, 2, 32, 64)


def test_bad_inputs_and_options(model):
    with pytest.raises(zoo.ConfigError, match=r"takes images \[B, 3, H, W\]"):
        model(torch.randn(1, 1, 64, 64))
    with pytest.raises(zoo.ConfigError, match="nearest valid sizes 96x96 or 128x128"):
        model.check_input_size((100, 100))
    with pytest.raises(zoo.ConfigError, match="nearest valid sizes 32x64,"):
        model.check_input_size((16, 64))
    assert model.check_input_size((100, 70), pad=True) == (128, 96)
    assert model.check_input_size((224, 320)) == (224, 320)
    with pytest.raises(zoo.ConfigError, match="n_skip=3 with 3 decoder blocks"):
        zoo.create_model("swin_unet", decoder_channels=[64, 32, 16])
    with pytest.raises(zoo.ConfigError, match="unknown Swin variant 'resnet50'"):
        zoo.create_model("swin_unet", variant="resnet50")


@pytest.mark.slow
def test_timm_weights_load_into_encoder(tmp_path):
    torch.manual_seed(1)
    reference = timm.create_model(VARIANT)
    path = tmp_path / "swin_t.pth"
    torch.save(reference.state_dict(), path)
    model = zoo.create_model("swin_unet", checkpoint=str(path))
    assert torch.equal(model.encoder.layers_2.blocks[5].mlp.fc1.weight,
                       reference.layers[2].blocks[5].mlp.fc1.weight)
    assert torch.equal(model.encoder.patch_embed.proj.weight, reference.patch_embed.proj.weight)

    partial = tmp_path / "partial.pth"
    torch.save({k: v for k, v in reference.state_dict().items() if "layers.3" not in k}, partial)
    with pytest.raises(zoo.ConfigError, match="Missing key.*layers.3"):
        zoo.create_model("swin_unet", checkpoint=str(partial))


def test_config_overrides_build():
    store_declared_configs()  # the declared options' defaults, for Hydra
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="profile",
                      overrides=["model=swin_unet", "model.num_classes=4", "model.n_skip=2",
                                 "model.decoder_channels=[128,64,32,16]", "model.in_channels=1"])
    with torch.device("meta"):
        model = instantiate(cfg.model)
    assert model.head.out_channels == 4
    assert model.decoder.n_skip == 2
    assert model.encoder.patch_embed.proj.in_channels == 1
    assert model.decoder.blocks[3].conv2[0].out_channels == 16
