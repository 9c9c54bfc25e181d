"""The analytical int8 view (device=meta run.dtype=int8): one byte per floating element,
biases int32, counts unchanged (seed 002's memory-access formula)."""

from __future__ import annotations

import torch
from torch import nn

from profiling import profile_model
from profiling.stages import element_bytes, int8_view

ATTACH = {"conv": "0", "head": "2"}


def _model() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 1)).eval()


def test_floating_tensors_count_one_byte_and_biases_four_only_inside_the_view():
    model = _model()
    weight, bias = model[0].weight, model[0].bias
    with int8_view(model):
        assert (element_bytes(weight), element_bytes(bias)) == (1, 4)
        assert element_bytes(torch.zeros(2, dtype=torch.int64)) == 8  # integers keep theirs
    assert (element_bytes(weight), element_bytes(bias)) == (4, 4)


def test_meta_profile_in_the_int8_view_counts_bytes_by_hand():
    model, x = _model().to("meta"), torch.randn(1, 3, 16, 16, device="meta")
    plain = profile_model(model, (x,), collectors=["payload", "op_counts"], attach=ATTACH)
    with int8_view(model):
        view = profile_model(model, (x,), collectors=["payload", "op_counts"], attach=ATTACH)
    rows, plain_rows = view.stages.set_index("stage"), plain.stages.set_index("stage")
    # conv: input 3*16*16 + weight 8*3*3*3 at one byte, bias 8 at four; output 8*16*16
    assert rows.loc["conv", "bytes_read"] == 768 + 216 + 32
    assert plain_rows.loc["conv", "bytes_read"] == 4 * (768 + 216 + 8)
    assert rows.loc["conv", "bytes_written"] == 8 * 16 * 16
    assert (rows.loc["head", "in_bytes"], rows.loc["head", "out_bytes"]) == (2048, 1024)
    assert rows.loc["conv", "flops"] == plain_rows.loc["conv", "flops"]  # counts unchanged
    assert rows.loc["head", "macs"] == 8 * 4 * 16 * 16


def test_device_meta_int8_run_gives_the_view_and_torch_int8_elsewhere_is_refused(tmp_path):
    import pytest

    from zoo import ConfigError
    from zoo.tools.cli import compose_config
    from zoo.tools.job import run_profile

    base = ["model=swiftnet", "input.size=[64,64]", "summary=false"]
    float32 = run_profile(compose_config([*base, "device=meta"]), tmp_path / "f").result
    int8 = run_profile(compose_config([*base, "device=meta", "run.dtype=int8"]),
                       tmp_path / "i").result
    one, four = int8.stages.set_index("stage"), float32.stages.set_index("stage")
    assert one.loc["encoder", "in_bytes"] * 4 == four.loc["encoder", "in_bytes"] == 3 * 64 * 64 * 4
    assert one.loc["encoder", "macs"] == four.loc["encoder", "macs"]
    with pytest.raises(ConfigError, match="device=meta for the analytical int8 view"):
        run_profile(compose_config([*base, "device=cpu", "run.dtype=int8"]), tmp_path / "c")
