"""The analytical int8 view (device=meta run.dtype=int8): one byte per floating element,
biases int32, counts unchanged (seed 002's memory-access formula)."""

from __future__ import annotations

import pytest
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
    from zoo.tools.composition import compose_config
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


def test_npu_presets_give_int8_ceilings_with_their_data_sheet():
    from profiling.counting import PRESETS, ceilings

    expected = {"hi3519av100": (1.7e12, 9.6e9), "rk3588": (6e12, 33.8e9),
                "hailo8": (26e12, 3.94e9), "coral_edge_tpu": (4e12, 0.5e9)}
    for name, (peak, bandwidth) in expected.items():
        preset = PRESETS[name]
        assert (preset.peak("int8"), preset.memory_bandwidth_bytes_per_s) == (peak, bandwidth)
        assert "int8" in preset.source
    assert ceilings("Hi3519A") is PRESETS["hi3519av100"]
    assert PRESETS["jetson_orin_nano"].peak("int8") == 20e12  # the Jetsons have theirs


def test_split_estimate_on_an_npu_uses_the_int8_peak_and_one_byte_per_element():
    from profiling.counting import PRESETS
    from profiling.runner import analyse_cuts
    from profiling.split import cut_table

    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2)).eval()
    x = torch.randn(1, 4)
    with int8_view(model):
        analysis = analyse_cuts(model, (x,), codecs=(), attach={"a": "0", "b": "1"})
    table = cut_table(analysis, PRESETS["hi3519av100"], "int8").set_index("cut")
    # a: addmm 2*4*8 + 8 = 72 ops; reads x 4 + W 32 at one byte, bias 8 at four: 68 B;
    # writes 8 B. Memory-bound on the Hi3519AV100: 76 B / 9.6 GB/s
    assert table.loc["a", "device_bytes"] == 68 + 8
    assert table.loc["a", "device_estimate_ms"] == pytest.approx(76 / 9.6e9 * 1e3)
