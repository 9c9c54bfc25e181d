"""Device ceilings, the roofline, the per-stage roofline columns, and zoo.calibrate."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from profiling.errors import ProfilingError
from profiling.statistics import time_column
from profiling.counting.roofline import (PRESETS, Ceilings, add_roofline_columns, attainable_flops,
                                bound, ceilings, load_ceilings, save_ceilings)


def test_presets_cover_the_common_gpus_per_dtype():
    for name in ("h100", "h200", "a100", "v100", "l4", "rtx4090"):
        device = ceilings(name)
        assert device.peak("float32") > 1e13 and device.memory_bandwidth_bytes_per_s > 1e11
        assert device.source
    assert ceilings("H100").peak("bfloat16") == pytest.approx(989.4e12)
    assert ceilings("h200").memory_bandwidth_bytes_per_s == pytest.approx(4.8e12)
    assert ceilings("A100").peak("tf32") == pytest.approx(156e12)
    assert set(PRESETS) >= {"h100_sxm", "h100_pcie", "h200", "a100", "v100", "l4", "rtx4090"}


def test_attainable_flops_and_bound():
    device = Ceilings("toy", {"float32": 100.0}, 10.0)
    assert device.ridge_point() == 10.0
    assert attainable_flops(2.0, device) == 20.0            # memory roof
    assert attainable_flops(50.0, device) == 100.0          # compute roof
    assert list(attainable_flops([1.0, 10.0, 20.0], device)) == [10.0, 100.0, 100.0]
    assert (bound(9.9, device), bound(10.0, device)) == ("memory", "compute")
    assert bound(math.nan, device) == ""


def test_stage_columns_with_a_measured_time():
    device = Ceilings("toy", {"float32": 1e9}, 1e8)
    stages = pd.DataFrame({"name": ["conv", "add", "view"], "flops": [5e8, 1e6, 0],
                           "bytes_read": [1e6, 8e6, 0], "bytes_written": [1e6, 4e6, 0],
                           "cpu_time_ms_median": [1000.0, 1.0, 0.0]})
    add_roofline_columns(stages, device, time_column="cpu_time_ms_median")
    assert list(stages["arithmetic_intensity"][:2]) == [250.0, 1e6 / 12e6]
    assert math.isnan(stages["arithmetic_intensity"][2])
    assert list(stages["bound"]) == ["compute", "memory", ""]
    assert stages["attainable_flops_per_s"][0] == 1e9
    assert stages["attainable_flops_per_s"][1] == pytest.approx(1e6 / 12e6 * 1e8)
    assert stages["achieved_flops_per_s"][0] == pytest.approx(5e8)
    assert stages["roofline_fraction"][0] == pytest.approx(0.5)
    assert math.isnan(stages["achieved_flops_per_s"][2])


def test_cuda_time_is_preferred_and_time_is_optional():
    device = ceilings("l4")
    stages = pd.DataFrame({"flops": [1e9], "bytes_read": [1e6], "bytes_written": [0.0],
                           "cpu_time_ms_median": [10.0], "cuda_time_ms_median": [1.0]})
    add_roofline_columns(stages, device, time_column=time_column(stages))
    assert stages["achieved_flops_per_s"][0] == pytest.approx(1e12)
    untimed = add_roofline_columns(stages[["flops", "bytes_read", "bytes_written"]].copy(),
                                   device)
    assert "achieved_flops_per_s" not in untimed.columns


def test_errors_name_what_is_accepted(tmp_path):
    with pytest.raises(ProfilingError, match="presets: h100_sxm"):
        ceilings("b200")
    with pytest.raises(ProfilingError, match="no float8 peak for v100"):
        ceilings("v100").peak("float8")
    with pytest.raises(ProfilingError, match="bytes_read"):
        add_roofline_columns(pd.DataFrame({"flops": [1.0]}), ceilings("h100"))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    with pytest.raises(ProfilingError, match="memory_bandwidth_bytes_per_s"):
        load_ceilings(bad)


def test_ceilings_yaml_round_trip(tmp_path):
    device = Ceilings("measured box", {"float32": 1.5e11, "bfloat16": 3e11}, 2e10, "test")
    path = save_ceilings(device, tmp_path / "box.yaml")
    assert load_ceilings(path) == device
    assert load_ceilings("h100") == ceilings("h100_sxm")


def test_calibrate_measures_this_machine(tmp_path, capsys):
    from zoo.tools.calibrate import main

    output = tmp_path / "here.yaml"
    device = main(["--device", "cpu", "--size", "64", "--megabytes", "1", "--seconds", "0.05",
                   "--output", str(output)])
    assert device.peak("float32") > 1e6 and device.memory_bandwidth_bytes_per_s > 1e6
    assert load_ceilings(output).peak("float32") == pytest.approx(device.peak("float32"))
    printed = capsys.readouterr().out
    assert "matmul float32:" in printed and "copy bandwidth:" in printed
