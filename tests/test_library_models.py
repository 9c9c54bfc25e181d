"""torchvision and timm models behind the zoo's calling convention."""

from __future__ import annotations

from pathlib import Path

import pytest
import timm
import torch
import torchvision
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

import zoo
from profiling import Session, attach_stages
from profiling.collectors.op_counts import OpCounts
from zoo.models import ZooModel
from zoo.tools.composition import store_declared_configs

CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
RESNET18_CHILDREN = ("conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4",
                     "avgpool", "fc")


def test_torchvision_model_keeps_the_library_class_and_keys():
    model = zoo.create_model("torchvision", arch="resnet18", num_classes=10)
    reference = torchvision.models.resnet18(num_classes=10)
    assert isinstance(model, torchvision.models.ResNet) and isinstance(model, ZooModel)
    assert type(model).__name__ == "ResNet"
    assert list(model.state_dict()) == list(reference.state_dict())
    assert model.stage_names == RESNET18_CHILDREN
    assert model.stage_paths() == {name: name for name in RESNET18_CHILDREN}
    assert (model.default_input_size, model.in_channels) == ((224, 224), 3)
    assert sum(p.numel() for p in model.parameters()) == 11_181_642


def test_library_checkpoint_loads_also_for_one_channel(tmp_path):
    reference = torchvision.models.resnet18(num_classes=10)
    path = tmp_path / "resnet18.pth"
    torch.save(reference.state_dict(), path)
    same = zoo.create_model("torchvision", arch="resnet18", num_classes=10, checkpoint=str(path))
    assert torch.equal(same.fc.weight, reference.fc.weight)
    gray = zoo.create_model("torchvision", arch="resnet18", num_classes=10, in_channels=1,
                            checkpoint=str(path))
    assert gray.conv1.weight.shape == (64, 1, 7, 7)
    assert torch.allclose(gray.conv1.weight, reference.conv1.weight.sum(1, keepdim=True))


def test_forward_with_stages_and_counts():
    model = zoo.create_model("torchvision", arch="resnet18", in_channels=4).eval()
    inputs = model.example_inputs(1, (64, 64), generator=torch.Generator().manual_seed(0))
    assert inputs[0].shape == (1, 4, 64, 64)
    collector = OpCounts(model)
    with Session([collector]) as session, attach_stages(model, model.stage_paths()), \
            torch.no_grad():
        with session.forward():
            logits = model(*inputs)
    assert logits.shape == (1, 1000)
    calls = {call.name: call.metrics for call in session.forwards[-1]}
    assert list(calls) == list(RESNET18_CHILDREN)
    assert calls["conv1"]["macs"] == 32 * 32 * 64 * 4 * 7 * 7
    assert sum(m["macs"] for m in calls.values()) == collector.total.macs


def test_timm_model_with_in_channels():
    model = zoo.create_model("timm", arch="resnet18", in_channels=1, num_classes=3)
    reference = timm.create_model("resnet18", in_chans=1, num_classes=3)
    assert isinstance(model, timm.models.ResNet) and isinstance(model, ZooModel)
    assert list(model.state_dict()) == list(reference.state_dict())
    assert model.conv1.in_channels == 1 and model.in_channels == 1
    assert "fc" in model.stage_paths() and model.default_input_size == (224, 224)
    with torch.no_grad():
        assert model(*model.example_inputs(2, (32, 32))).shape == (2, 3)


def test_timm_child_named_stages_stays_the_librarys():
    model = zoo.create_model("timm", arch="convnext_atto").eval()
    assert isinstance(model.stages, torch.nn.Sequential)
    assert model.stage_names == ("stem", "stages", "norm_pre", "head")
    assert list(model.stage_paths()) == ["stem", "stages", "norm_pre", "head"]
    with torch.no_grad():
        assert model(*model.example_inputs(1, (32, 32))).shape == (1, 1000)


def test_fixed_size_models_check_the_size():
    model = zoo.create_model("timm", arch="vit_tiny_patch16_224",
                             arch_options={"img_size": 32})
    assert model.default_input_size == (32, 32)
    assert model.check_input_size((32, 32)) == (32, 32)
    assert model.check_input_size((20, 30), pad=True) == (32, 32)
    with pytest.raises(zoo.ConfigError, match="takes only 32x32 inputs, got 64x64"):
        model.check_input_size((64, 64))
    vit = zoo.create_model("torchvision", arch="vit_b_16", arch_options={"image_size": 32})
    assert vit.default_input_size == (32, 32)
    with pytest.raises(zoo.ConfigError, match="takes only 32x32"):
        vit.check_input_size((224, 224))


@pytest.mark.parametrize("size, fitted", [((128, 128), None), ((520, 960), None),
                                          ((64, 64), (128, 128)), ((130, 128), (136, 128)),
                                          ((128, 1), (128, 128)), ((129, 255), (136, 256))])
def test_raft_takes_multiples_of_8_from_128_or_pads_up(size, fitted):
    """RAFT's encoders downsample by 8 and its correlation pyramid needs 16 cells at 1/8: a
    size that does not meet that was a ValueError in the forward (exit 1), now refused up
    front with the nearest valid size (exit 2), or padded up with input.pad=true."""
    raft = zoo.create_model("torchvision", arch="raft_small")
    if fitted is None:
        assert raft.check_input_size(size) == size
        return
    assert raft.check_input_size(size, pad=True) == fitted
    with pytest.raises(zoo.ConfigError, match=rf"input size {size[0]}x{size[1]} does not fit "
                       rf"RAFT: .* multiples of 8 and at least 128; nearest valid size above: "
                       rf"{fitted[0]}x{fitted[1]}"):
        raft.check_input_size(size)


def test_unknown_arch_names_close_matches():
    with pytest.raises(zoo.ConfigError, match="unknown torchvision arch 'resnet5'; closest: "
                                              "resnet50"):
        zoo.create_model("torchvision", arch="resnet5")
    with pytest.raises(zoo.ConfigError, match="closest: convnext_atto"):
        zoo.create_model("timm", arch="convnext_atoo")
    with pytest.raises(zoo.ConfigError, match="does not take these options"):
        zoo.create_model("torchvision", arch="resnet18", arch_options={"depth": 3})


@pytest.mark.parametrize("name, arch", [("torchvision", "mobilenet_v3_small"),
                                        ("timm", "mobilenetv3_small_050")])
def test_configs_instantiate(name, arch):
    store_declared_configs()  # the declared options' defaults, for Hydra
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        config = compose("profile", overrides=[f"model={name}", f"model.arch={arch}",
                                               "model.num_classes=7"])
    model = instantiate(config.model).eval()
    assert type(model).__module__.startswith(name)
    with torch.no_grad():
        assert model(*model.example_inputs(1, (64, 64))).shape == (1, 7)
