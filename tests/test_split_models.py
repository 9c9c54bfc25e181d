"""Split analyses of zoo models: the bytes of the issue's worked examples."""

from __future__ import annotations

import pytest
import torch

from profiling.runner import analyse_cuts
from profiling.split import cut_table
from zoo.tools.job_inputs import prepare
from zoo.tools.composition import compose_config


def _table(overrides: list[str], device: str, **options):
    model, inputs, attach, _ = prepare(compose_config(overrides), torch.device(device))
    return cut_table(analyse_cuts(model, inputs, attach=attach, **options)).set_index("cut")


def test_resnet18_cuts_after_every_block_with_its_output_alone():
    table = _table(["model=torchvision", "model.arch=resnet18"], "meta", depth=2)
    blocks = [f"layer{i}.{j}" for i in range(1, 5) for j in range(2)]
    assert [c for c in table.index if c.startswith("layer") and "." in c] == blocks
    # each block's output alone: [1, 64 * 2^k, 56 / 2^k, 56 / 2^k] float32
    for i in range(1, 5):
        expected = 64 * 2 ** (i - 1) * (56 // 2 ** (i - 1)) ** 2 * 4
        for j in range(2):
            assert table.loc[f"layer{i}.{j}", "raw_bytes"] == expected
            assert table.loc[f"layer{i}.{j}", "tensors"] == 1
    assert table.loc["layer1.0", "raw_bytes"] == 802_816


def test_gmflow_flow_attention_cut_on_meta_at_1088x1920():
    table = _table(["model=gmflow", "input.size=[1088,1920]"], "meta", codecs=())
    # the flow [1, 2, 136, 240] and image 0's feature [1, 128, 136, 240], float32
    assert table.loc["feature_flow_attn", "raw_bytes"] == (2 + 128) * 136 * 240 * 4
    assert table.loc["feature_flow_attn", "raw_bytes"] == 16_972_800


@pytest.mark.slow
def test_gmflow_flow_attention_cut_on_the_cpu_at_256x384():
    # the CPU takes the fused attention, whose values are zero-padded from 2 to 128 channels
    table = _table(["model=gmflow", "input.size=[256,384]"], "cpu", codecs=())
    assert table.loc["feature_flow_attn", "raw_bytes"] == (2 + 128) * 32 * 48 * 4 == 798_720
