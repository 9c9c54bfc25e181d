"""Containers that a forward iterates rather than calls: their children are stages at the
container's depth; called containers (IntermediateLayerGetter, a ModuleDict subclass with a
forward) are stages themselves, also under ``model.stage_depth``."""

from __future__ import annotations

import torch
from torch import nn

from profiling import profile_model
from profiling.stages.attach import attach_stages, is_container
from zoo.tools.job_inputs import prepare
from zoo.tools.composition import compose_config


class Iterated(nn.Module):
    """A ViT-like toy: a linear stem, blocks in a ModuleList it loops over, a Sequential
    neck it also loops over, a Sequential head it calls."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 16, bias=False)
        self.blocks = nn.ModuleList(nn.Linear(16, 16, bias=False) for _ in range(3))
        self.neck = nn.Sequential(nn.Linear(16, 16, bias=False), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(16, 4, bias=False), nn.ReLU())

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = x + block(x)
        for layer in self.neck:
            x = layer(x)
        return self.head(x)


class CalledDict(nn.ModuleDict):
    """A ModuleDict subclass with a forward, like IntermediateLayerGetter."""

    def forward(self, x):
        for module in self.values():
            x = module(x)
        return x


def _stages(model, inputs, attach, collectors=("payload", "op_counts")):
    return profile_model(model, inputs, collectors=list(collectors), warmup=0, repeats=1,
                         attach=attach)


def test_iterated_children_stand_in_at_the_container_depth():
    model = Iterated().eval()
    attach = {name: name for name, _ in model.named_children()}
    result = _stages(model, (torch.rand(5, 8),), attach)
    stages = result.stages.set_index("stage")
    assert list(stages.index) == ["stem", "blocks.0", "blocks.1", "blocks.2", "neck.0",
                                  "neck.1", "head", "other"]
    assert set(stages["depth"]) == {0}
    # 5 rows x 16 outputs x 16 inputs per block; the called head keeps its children inside
    assert list(stages.loc[["blocks.0", "blocks.1", "blocks.2"], "macs"]) == [5 * 16 * 16] * 3
    assert stages.loc["head", "macs"] == 5 * 4 * 16
    assert stages["macs"].sum() == result.totals["macs"] == 5 * (8 * 16 + 4 * 16 * 16 + 16 * 4)


def test_called_container_nests_its_children_with_finer_stages():
    model = Iterated().eval()
    attach = {"head": "head", "head.0": "head.0"}
    stages = _stages(model, (torch.rand(2, 8),), attach).stages.set_index("stage")
    assert list(stages.index) == ["head", "head.0", "head/other", "other"]
    assert stages.loc["head.0", "parent"] == "head" and stages.loc["head.0", "depth"] == 1


def test_only_plain_containers_are_stood_in_for():
    assert is_container(nn.ModuleList()) and is_container(nn.Sequential())
    assert not is_container(CalledDict()) and not is_container(nn.Linear(1, 1))


def test_no_hook_is_left_on_the_children():
    model = Iterated()
    with attach_stages(model, {"blocks": "blocks"}):
        assert len(model.blocks[0]._forward_pre_hooks) == 1
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in model.modules())


def _zoo(overrides):
    cfg = compose_config([*overrides, "device=meta", "collectors=[payload,op_counts]"])
    model, inputs, attach, _ = prepare(cfg, torch.device("meta"))
    return _stages(model, inputs, attach, cfg.collectors)


def _top_flops_share(result) -> float:
    return result.coverage["flops"]


def test_a_timm_transformer_with_a_block_list_is_staged_block_by_block():
    # EVA-02 tiny loops over a ModuleList of 12 blocks, which were in no stage before
    result = _zoo(["model=timm", "model.arch=eva02_tiny_patch14_224"])
    top = result.stages[result.stages["depth"] == 0]["stage"].tolist()
    assert top[top.index("blocks.0"):top.index("blocks.11") + 1] == \
        [f"blocks.{i}" for i in range(12)]
    assert "blocks" not in top
    assert _top_flops_share(result) > 0.999


def test_a_video_transformer_with_a_block_list_is_staged_block_by_block():
    result = _zoo(["model=torchvision", "model.arch=mvit_v2_s"])
    top = result.stages[result.stages["depth"] == 0]["stage"].tolist()
    assert top == ["conv_proj", "pos_encoding", *[f"blocks.{i}" for i in range(16)], "norm",
                   "head", "other"]
    assert _top_flops_share(result) == 1.0


def test_stage_depth_stages_a_called_dict_backbone():
    # RetinaNet's backbone.body is an IntermediateLayerGetter (a ModuleDict with a forward)
    result = _zoo(["model=torchvision", "model.arch=retinanet_resnet50_fpn",
                   "model.stage_depth=2", "input.size=[64,64]"])
    rows = result.stages.set_index("stage")
    assert rows.loc["backbone.body", "parent"] == "backbone"
    assert rows.loc["backbone.fpn", "parent"] == "backbone"
    assert rows.loc["backbone.body", "macs"] + rows.loc["backbone.fpn", "macs"] == \
        rows.loc["backbone", "macs"]
