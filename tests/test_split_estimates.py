"""Edge-device roofline estimates, stage times apportioned inside a stage, and zoo.split's
argument errors, checked against numbers computed by hand."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

from profiling import stage
from profiling.counting.roofline import PRESETS, Ceilings, ceilings, roofline_seconds
from profiling.runner import analyse_cuts
from profiling.split import cut_table, split_latency

X = torch.tensor([[1.0, -2.0, 3.0, 4.0]])


class OneStage(nn.Module):
    """One stage around two linear layers: 4 -> 8 -> 2."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = nn.Linear(8, 2)

    def forward(self, x):
        with stage("all", x) as s:
            return s.output(self.b(self.a(x)))


TOY = Ceilings("toy", {"float32": 100.0}, 1000.0)  # 100 FLOP/s, 1000 B/s


@pytest.fixture(scope="module")
def table():
    return cut_table(analyse_cuts(OneStage().eval(), (X,), codecs=(), depth=1), TOY)


def test_edge_presets_carry_the_data_sheet_figures():
    expected = {"jetson_orin_nano": (1.28e12, 68e9), "jetson_orin_nx": (1.88e12, 102.4e9),
                "jetson_agx_orin": (5.3e12, 204.8e9), "raspberry_pi5": (153.6e9, 17.1e9)}
    for name, (peak, bandwidth) in expected.items():
        assert PRESETS[name].peak("float32") == pytest.approx(peak)
        assert PRESETS[name].memory_bandwidth_bytes_per_s == pytest.approx(bandwidth)
        assert PRESETS[name].source
    assert ceilings("Orin-Nano") is PRESETS["jetson_orin_nano"]
    assert ceilings("rpi5") is PRESETS["raspberry_pi5"]


def test_roofline_seconds_is_the_larger_of_the_two_bounds():
    nano = PRESETS["jetson_orin_nano"]
    assert roofline_seconds(1e9, 1e6, nano) == pytest.approx(1e9 / 1.28e12)   # compute-bound
    assert roofline_seconds(1e6, 1e9, nano) == pytest.approx(1e9 / 68e9)      # memory-bound
    assert list(roofline_seconds([100, 10], [10, 1000], TOY)) == [1.0, 1.0]


def test_device_estimate_per_operator_by_hand(table):
    assert list(table["cut"]) == ["input", "a", "b", "all", "output"]
    # a: addmm 2*4*8 + 8 = 72 FLOPs; reads x 16 + W 128 + bias 32, writes 32: 208 B
    # b: addmm 2*8*2 + 2 = 34 FLOPs; reads 32 + 64 + 8, writes 8: 112 B
    assert list(table["device_flops"]) == [0, 72, 106, 106, 106]
    assert list(table["device_bytes"]) == [0, 208, 320, 320, 320]
    # max(72 / 100, 208 / 1000) s = 720 ms; then + max(34 / 100, 112 / 1000) s = 340 ms
    assert list(table["device_estimate_ms"]) == pytest.approx([0, 720, 1060, 1060, 1060])


def _stages(milliseconds: float) -> pd.DataFrame:
    return pd.DataFrame({"stage": ["all"], "kind": "stage", "depth": 0, "call_index": 0,
                         "cpu_time_ms_median": [milliseconds]})


def test_a_cut_inside_a_stage_splits_its_time_by_flops(table):
    latency = split_latency(table, _stages(10.0), _stages(106.0), [8.0], rtt_ms=5.0)
    raw = latency[latency["encoding"] == "raw"].set_index("cut")
    assert raw.loc["a", "device_ms"] == pytest.approx(10.0 * 72 / 106)
    assert raw.loc["a", "server_ms"] == pytest.approx(106.0 * 34 / 106)
    # 32 B of a's output at 8 Mbit/s: 32 * 8 / 8e6 s = 0.032 ms
    assert raw.loc["a", "latency_ms"] == pytest.approx(10 * 72 / 106 + 5 + 0.032 + 34)
    assert raw.loc["input", "server_ms"] == pytest.approx(106.0)
    assert raw.loc["output", "device_ms"] == pytest.approx(10.0)
    assert set(latency["device_side"]) == {"measured"}


def test_without_a_device_run_the_roofline_bound_is_the_device_side(table):
    latency = split_latency(table, None, _stages(106.0), [8.0], rtt_ms=0.0)
    raw = latency[latency["encoding"] == "raw"].set_index("cut")
    assert raw.loc["a", "device_ms"] == pytest.approx(720.0)
    assert raw.loc["a", "latency_ms"] == pytest.approx(720 + 0.032 + 34)
    assert set(latency["device_side"]) == {"roofline bound"}


@pytest.mark.parametrize("arguments, message", [
    (["--rtt", "nan"], "RTT"),
    (["--rtt", "-1"], "RTT"),
    (["--bandwidth", "10", "-5"], "bandwidths"),
    (["--bandwidth", "inf"], "bandwidths"),
    (["--depth", "-1"], "--depth"),
    (["--depth", "two"], "--depth"),
    (["--codec", "gzip"], "unknown codec 'gzip'"),
    (["--device-ceilings", "jetson_nope", "--server-run", "."], "no device ceilings named"),
    (["--device-ceilings", "jetson_orin_nano"], "--server-run"),
    (["--server-run", "."], "--device-run or --device-ceilings"),
])
def test_argument_errors_are_one_line_and_exit_2(arguments, message, capsys):
    from zoo.tools.split import main

    with pytest.raises(SystemExit) as exit_info:
        main(["model=swiftnet", *arguments] if "--server-run" not in arguments else arguments)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and error.count("\n") == 1
    assert message in error
