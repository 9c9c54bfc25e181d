"""model.stage_depth and model.stage_paths: finer stages for every registered model."""

from __future__ import annotations

import pytest
import torch

import zoo
from profiling.runner.passes import profile_model
from zoo.tools.job_inputs import prepare
from zoo.tools.composition import compose_config

#: ResNet-18 at 64x64: a basic block of layer1 is two 3x3 convolutions, 64 -> 64, at 16x16.
LAYER1_BLOCK_MACS = 2 * 16 * 16 * 64 * 64 * 3 * 3


def _profile(overrides: list[str]):
    cfg = compose_config([*overrides, "device=meta", "collectors=[payload,op_counts]"])
    model, inputs, attach, _ = prepare(cfg, torch.device("meta"))
    return model, profile_model(model, inputs, collectors=list(cfg.collectors), warmup=0,
                                repeats=1, attach=attach).stages


def test_stage_depth_two_nests_every_block_under_its_layer():
    model, stages = _profile(["model=torchvision", "model.arch=resnet18", "model.stage_depth=2",
                              "input.size=[64,64]"])
    blocks = [f"layer{i}.{j}" for i in range(1, 5) for j in range(2)]
    assert list(model.stage_paths())[10:] == blocks  # after the 10 top-level children
    rows = stages.set_index("stage")
    for block in blocks:
        assert rows.loc[block, "parent"] == block.split(".")[0]
        assert rows.loc[block, "depth"] == 1
    assert rows.loc["layer1.0", "macs"] == rows.loc["layer1.1", "macs"] == LAYER1_BLOCK_MACS
    assert rows.loc["layer1", "macs"] == 2 * LAYER1_BLOCK_MACS
    assert rows.loc["conv1", "depth"] == 0


def test_default_depth_adds_nothing_and_paths_add_to_the_own_stages():
    plain = zoo.create_model("torchvision", arch="resnet18")
    assert plain.stage_paths() == {name: name for name, _ in plain.named_children()}
    named = zoo.create_model("torchvision", arch="resnet18", stage_paths=["layer2.1.conv2"])
    assert list(named.stage_paths())[-1] == "layer2.1.conv2"
    assert len(named.stage_paths()) == len(plain.stage_paths()) + 1


def test_zoo_models_get_added_stages_under_their_hand_placed_ones():
    assert zoo.create_model("swiftnet").stage_paths() == {}
    model, stages = _profile(["model=swiftnet", "model.stage_depth=3", "input.size=[64,128]"])
    added = model.stage_paths()
    assert {"encoder.conv1", "encoder.layer1", "encoder.layer1.0"} <= set(added)
    assert all(1 <= path.count(".") <= 2 for path in added)
    rows = stages.set_index("stage")
    # encoder.conv1 runs inside the hand-placed stem, the blocks inside the hand-placed layer1;
    # SwiftNet iterates its layer1 Sequential rather than calling it, so that one never opens
    assert rows.loc["encoder.conv1", "parent"] == "stem"
    assert rows.loc["encoder.layer1.0", "parent"] == rows.loc["encoder.layer1.1", "parent"] \
        == "layer1"
    assert "encoder.layer1" not in rows.index


def test_module_lists_are_passed_through():
    model = zoo.create_model("gmflow", feature_channels=16, num_transformer_layers=2,
                             stage_depth=3)
    paths = model.stage_paths()
    assert "transformer.layers" not in paths  # a ModuleList is never called
    assert {"transformer.layers.0", "transformer.layers.1"} <= set(paths)


@pytest.mark.parametrize("options, message", [
    (dict(stage_paths=["layer1.3"]),
     "model.stage_paths: no module 'layer1.3' in ResNet; closest: layer1.1, layer1.0, layer3"),
    (dict(stage_paths=["nothing_like_it"]), "top-level modules: conv1, bn1, relu"),
    (dict(stage_depth=0), "model.stage_depth=0 is not accepted; accepted: an integer >= 1"),
    (dict(stage_depth=True), "model.stage_depth=True is not accepted"),
    (dict(stage_paths="layer1"), "model.stage_paths='layer1' is not accepted; accepted: a list"),
])
def test_bad_stage_options_are_one_line(options, message):
    with pytest.raises(zoo.ConfigError) as error:
        zoo.create_model("torchvision", arch="resnet18", **options)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_every_model_config_declares_the_stage_options():
    from zoo.tools.model_configs import model_configs

    for name, node in model_configs().items():
        assert (node["stage_depth"], node["stage_paths"]) == (1, None), name


def test_split_cuts_after_every_block_of_the_finer_stages():
    from profiling.runner import analyse_cuts

    cfg = compose_config(["model=torchvision", "model.arch=resnet18", "model.stage_depth=2",
                          "device=meta"])
    model, inputs, attach, _ = prepare(cfg, torch.device("meta"))
    cuts = {cut.name: cut for cut in analyse_cuts(model, inputs, attach=attach)}
    blocks = [f"layer{i}.{j}" for i in range(1, 5) for j in range(2)]
    assert set(blocks) <= set(cuts)
    # after a block only its output is alive: [1, 64, 56, 56] float32 after layer1.0
    assert cuts["layer1.0"].raw_bytes == 64 * 56 * 56 * 4 == 802_816
    assert cuts["layer4.1"].raw_bytes == 512 * 7 * 7 * 4
