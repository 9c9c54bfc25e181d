"""The roofline model: device ceilings, attainable FLOP/s, and where each stage sits.

A device has a peak arithmetic rate per data type and a peak memory bandwidth. A piece of work
with arithmetic intensity ``I = flops / (bytes_read + bytes_written)`` can reach at most
``min(peak_flops, I * bandwidth)`` FLOP/s: below the ridge point ``peak_flops / bandwidth`` it
is memory-bound, above it compute-bound. FLOPs here are this package's ``flops`` (2 per
multiply-accumulate), the convention of the vendors' peak figures.

The presets are the vendors' dense (no sparsity) peaks for the SXM/PCIe boards named, from
their data sheets:

- H100 SXM5 80 GB and H100 PCIe 80 GB: NVIDIA H100 Tensor Core GPU data sheet (2023).
- H200 SXM 141 GB: NVIDIA H200 Tensor Core GPU data sheet (2024).
- A100 SXM4 80 GB: NVIDIA A100 Tensor Core GPU data sheet (2021).
- V100 SXM2: NVIDIA Tesla V100 GPU data sheet (2020).
- L4: NVIDIA L4 Tensor Core GPU data sheet (2023).
- RTX 4090: NVIDIA Ada Lovelace GPU architecture whitepaper v2.1, appendix table (FP16/BF16
  tensor figures with FP32 accumulation, which is what PyTorch uses).

Edge devices (dense figures; the vendors quote INT8 "sparse" TOPS at twice the dense rate):

- ``jetson_orin_nano``: NVIDIA Jetson Orin Nano Series data sheet (DS-11105-001), Orin Nano
  8GB: 1024 CUDA cores and 32 tensor cores at 625 MHz, "up to 40 (sparse) INT8 TOPs and 20
  (dense)", 8 GB 128-bit LPDDR5 at 68 GB/s. FP32 = 1024 cores x 2 FLOPs x 625 MHz = 1.28
  TFLOP/s; FP16/BF16 tensor = half the dense INT8 rate (Ampere tensor cores) = 10 TFLOP/s.
- ``jetson_orin_nano_super``: NVIDIA Jetson Orin Nano Super Developer Kit data sheet (Dec
  2024): the same module at 1020 MHz, 67 sparse INT8 TOPS (33.5 dense), 102 GB/s; FP32 2.09
  TFLOP/s, FP16 16.7 TFLOP/s by the same rules.
- ``jetson_orin_nx``: NVIDIA Jetson Orin NX Series data sheet (DS-10712-001 v1.1), Orin NX
  16GB: 1024 CUDA cores and 32 tensor cores at 918 MHz, 16 GB 128-bit LPDDR5 at 102.4 GB/s.
  FP32 = 1024 x 2 x 918 MHz = 1.88 TFLOP/s; the tensor rates scale the Orin Nano's (same GPU
  configuration) by the clock: 30.1 dense INT8 TOPS, 15 FP16 TFLOP/s.
- ``jetson_agx_orin``: NVIDIA Jetson AGX Orin Series technical brief (v1.2) and data sheet
  (DS-10662-001), AGX Orin 64GB: 2048 CUDA cores and 64 tensor cores at 1.3 GHz, "5.3 FP32
  TFLOPs", 170 sparse INT8 TOPS on the GPU (85 dense), 64 GB 256-bit LPDDR5 at 204.8 GB/s;
  FP16 = 42.5 TFLOP/s.
- ``raspberry_pi5``: the CPU of the Raspberry Pi 5 (Raspberry Pi 5 product brief: Broadcom
  BCM2712, four Arm Cortex-A76 cores at 2.4 GHz, LPDDR4X-4267 SDRAM on a 32-bit bus, so 4267
  MT/s x 4 B = 17.1 GB/s). Arm Cortex-A76 Software Optimization Guide: two 128-bit ASIMD
  pipes that each issue one fused multiply-add per cycle, so 2 x 4 lanes x 2 FLOPs = 16 FP32
  FLOPs per cycle and core: 4 x 2.4 GHz x 16 = 153.6 GFLOP/s; FP16 (8 lanes) 307.2 GFLOP/s.

NPUs (int8 only: they run quantised networks; use ``roofline.dtype=int8``, which a run with
``run.dtype=int8`` takes by default). The bandwidth is what feeds the NPU: the SoC's DRAM, or,
for an accelerator that keeps the weights on chip, its link to the host:

- ``hi3519av100``: HiSilicon Hi3519A V100 (the seed notes' NPU): its NNIE engine's 1.7 TOPS
  int8 (HiSilicon Hi3519A V100 product brief). Memory: a 32-bit DDR4 interface; at 2400 MT/s,
  9.6 GB/s (the bus rate is this preset's assumption: check the board's).
- ``rk3588``: Rockchip RK3588 data sheet: a three-core NPU of 6 TOPS int8 in all; LPDDR4X at
  up to 4224 MT/s on four 16-bit channels (64 bits), 33.8 GB/s.
- ``hailo8``: Hailo-8 AI processor product brief: 26 TOPS int8, weights and activations in
  on-chip memory (no external DRAM); the host link of the M.2 module is PCIe Gen3 x4, 8 GT/s x
  4 lanes x 128/130 = 3.94 GB/s.
- ``coral_edge_tpu``: Coral M.2 Accelerator (Edge TPU) data sheet: 4 TOPS int8, 8 MB of
  on-chip SRAM for the parameters; host link PCIe Gen2 x1, 0.5 GB/s (the USB Accelerator's
  USB 3.0 is no faster in practice).

Data types: ``float64`` is the FP64 tensor-core rate where the board has one (the CUDA-core
rate on V100), ``float32`` the CUDA-core rate (PyTorch's default for matmuls), ``tf32``,
``float16``, ``bfloat16``, ``float8`` and ``int8`` (operations per second) the tensor cores'.
Measure your own machine with ``python -m zoo.calibrate``; :func:`load_ceilings` reads what it
writes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np
import pandas as pd

from ..errors import ProfilingError
from ..files.reading import read_yaml
from ..files.writing import write_file

__all__ = ["Ceilings", "PRESETS", "attainable_flops", "bound", "ceilings", "ceilings_for_device",
           "load_ceilings", "roofline_seconds", "stage_points",
           "save_ceilings", "add_roofline_columns"]

TERA = 1e12


@dataclass(frozen=True)
class Ceilings:
    """A device's peak arithmetic rates and memory bandwidth.

    Attributes:
        name: the device.
        peak_flops_per_s: peak FLOP/s per data type name (``float32``, ``bfloat16``, ...).
        memory_bandwidth_bytes_per_s: peak memory bandwidth.
        source: where the figures come from.
    """

    name: str
    peak_flops_per_s: Mapping[str, float]
    memory_bandwidth_bytes_per_s: float
    source: str = ""
    aliases: tuple[str, ...] = field(default=(), compare=False)

    def peak(self, dtype: str = "float32") -> float:
        """The peak FLOP/s for ``dtype``."""
        try:
            return self.peak_flops_per_s[dtype]
        except KeyError:
            raise ProfilingError(f"no {dtype} peak for {self.name}; it has: "
                                 f"{', '.join(self.peak_flops_per_s)}") from None

    def ridge_point(self, dtype: str = "float32") -> float:
        """The arithmetic intensity (FLOP/byte) where memory-bound turns compute-bound."""
        return self.peak(dtype) / self.memory_bandwidth_bytes_per_s


def _tflops(**per_dtype: float) -> dict[str, float]:
    return {dtype: value * TERA for dtype, value in per_dtype.items()}


PRESETS: dict[str, Ceilings] = {c.name: c for c in [
    Ceilings("h100_sxm", _tflops(float64=67, float32=67, tf32=494.7, float16=989.4,
                                 bfloat16=989.4, float8=1978.9, int8=1978.9),
             3.35e12, "NVIDIA H100 data sheet, SXM5 80 GB, dense", ("h100",)),
    Ceilings("h100_pcie", _tflops(float64=51, float32=51, tf32=378, float16=756,
                                  bfloat16=756, float8=1513, int8=1513),
             2.0e12, "NVIDIA H100 data sheet, PCIe 80 GB, dense"),
    Ceilings("h200", _tflops(float64=67, float32=67, tf32=494.7, float16=989.4,
                             bfloat16=989.4, float8=1978.9, int8=1978.9),
             4.8e12, "NVIDIA H200 data sheet, SXM 141 GB, dense", ("h200_sxm",)),
    Ceilings("a100", _tflops(float64=19.5, float32=19.5, tf32=156, float16=312, bfloat16=312,
                             int8=624),
             2.039e12, "NVIDIA A100 data sheet, SXM4 80 GB, dense", ("a100_sxm",)),
    Ceilings("v100", _tflops(float64=7.8, float32=15.7, float16=125),
             0.9e12, "NVIDIA V100 data sheet, SXM2", ("v100_sxm",)),
    Ceilings("l4", _tflops(float32=30.3, tf32=60, float16=121, bfloat16=121, float8=242.5,
                           int8=242.5),
             0.3e12, "NVIDIA L4 data sheet, dense"),
    Ceilings("rtx4090", _tflops(float32=82.6, tf32=82.6, float16=165.2, bfloat16=165.2,
                                float8=330.3, int8=660.6),
             1.008e12, "NVIDIA Ada whitepaper v2.1, FP32 accumulation, dense", ("rtx_4090",)),
    Ceilings("jetson_orin_nano", _tflops(float32=1.28, float16=10.0, bfloat16=10.0, int8=20.0),
             68e9, "NVIDIA Jetson Orin Nano data sheet DS-11105-001, 8GB module, dense",
             ("orin_nano",)),
    Ceilings("jetson_orin_nano_super", _tflops(float32=2.09, float16=16.7, bfloat16=16.7,
                                               int8=33.5),
             102e9, "NVIDIA Jetson Orin Nano Super Developer Kit data sheet, dense",
             ("orin_nano_super",)),
    Ceilings("jetson_orin_nx", _tflops(float32=1.88, float16=15.0, bfloat16=15.0, int8=30.1),
             102.4e9, "NVIDIA Jetson Orin NX data sheet DS-10712-001, 16GB module, dense",
             ("orin_nx",)),
    Ceilings("jetson_agx_orin", _tflops(float32=5.3, float16=42.5, bfloat16=42.5, int8=85.0),
             204.8e9, "NVIDIA Jetson AGX Orin technical brief v1.2, 64GB module, dense",
             ("agx_orin",)),
    Ceilings("hi3519av100", _tflops(int8=1.7), 9.6e9,
             "HiSilicon Hi3519A V100 product brief (NNIE 1.7 TOPS int8); 32-bit DDR4 at an "
             "assumed 2400 MT/s", ("hi3519a", "hi3519a_v100")),
    Ceilings("rk3588", _tflops(int8=6.0), 33.8e9,
             "Rockchip RK3588 data sheet: NPU 6 TOPS int8, 64-bit LPDDR4X-4224"),
    Ceilings("hailo8", _tflops(int8=26.0), 3.94e9,
             "Hailo-8 product brief: 26 TOPS int8, on-chip memory; M.2 host link PCIe Gen3 x4",
             ("hailo_8",)),
    Ceilings("coral_edge_tpu", _tflops(int8=4.0), 0.5e9,
             "Coral M.2 Accelerator data sheet: Edge TPU 4 TOPS int8, 8 MB SRAM; PCIe Gen2 x1",
             ("edge_tpu", "coral")),
    Ceilings("raspberry_pi5", {"float32": 153.6e9, "float16": 307.2e9},
             17.1e9, "Raspberry Pi 5 product brief; Arm Cortex-A76 optimization guide",
             ("rpi5", "raspberry_pi_5")),
]}


def ceilings(name: str) -> Ceilings:
    """The preset named ``name`` (case-insensitive; ``h100`` is the SXM board)."""
    key = name.lower().replace("-", "_").replace(" ", "_")
    for preset in PRESETS.values():
        if key == preset.name or key in preset.aliases:
            return preset
    raise ProfilingError(f"no device ceilings named '{name}'; presets: {', '.join(PRESETS)}, "
                         f"or a YAML file written by python -m zoo.calibrate")


def ceilings_for_device(device_name: str) -> Optional[Ceilings]:
    """The preset whose name appears in a device name such as ``NVIDIA H100 80GB HBM3``."""
    text = device_name.lower().replace(" ", "").replace("-", "").replace("_", "")
    # the longest names first: "H100 PCIe" is h100_pcie before the alias "h100" matches it
    for preset in sorted(PRESETS.values(), key=lambda c: -len(c.name)):
        names = (preset.name,) + tuple(preset.aliases)
        if any(n.replace("_", "") in text for n in names):
            return preset
    return None


def _is_number(value: Any) -> bool:
    """A number, or a text that is one (YAML 1.1 reads ``1.0e9`` as a text)."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_ceilings(name_or_path: Union[str, Path]) -> Ceilings:
    """A preset by name, or the ceilings in a YAML file (as ``python -m zoo.calibrate`` writes)."""
    path = Path(name_or_path)
    if path.suffix.lower() not in (".yaml", ".yml"):
        return ceilings(str(name_or_path))
    if not path.is_file():
        raise ProfilingError(f"ceilings file not found: {path}")
    data = read_yaml(path)
    needs = ("it needs name, peak_flops_per_s ({dtype: FLOP/s}) and "
             "memory_bandwidth_bytes_per_s")
    if not isinstance(data, dict) or not {"name", "peak_flops_per_s",
                                          "memory_bandwidth_bytes_per_s"} <= set(data):
        raise ProfilingError(f"{path} is not a ceilings file: {needs}")
    peaks = data["peak_flops_per_s"]
    if not isinstance(peaks, dict):
        raise ProfilingError(f"{path}: peak_flops_per_s must be a mapping {{dtype: FLOP/s}}, "
                             f"got {type(peaks).__name__}")
    rates = {"memory_bandwidth_bytes_per_s": data["memory_bandwidth_bytes_per_s"],
             **{f"peak_flops_per_s.{k}": v for k, v in peaks.items()}}
    wrong = next((k for k, v in rates.items() if not _is_number(v)), None)
    if wrong is not None:
        raise ProfilingError(f"{path}: {wrong} must be a number, got "
                             f"{type(rates[wrong]).__name__} {rates[wrong]!r:.40}")
    device = Ceilings(str(data["name"]), {str(k): float(v) for k, v in peaks.items()},
                      float(data["memory_bandwidth_bytes_per_s"]), str(data.get("source", "")))
    rates = {"memory_bandwidth_bytes_per_s": device.memory_bandwidth_bytes_per_s,
             **{f"peak_flops_per_s.{k}": v for k, v in device.peak_flops_per_s.items()}}
    bad = next((k for k, v in rates.items() if not math.isfinite(v) or v <= 0), None)
    if bad is not None or not device.peak_flops_per_s:
        raise ProfilingError(f"{path}: {bad or 'peak_flops_per_s'} must hold finite values "
                             f"above 0, got {rates.get(bad, 'nothing')}")
    return device


def save_ceilings(device: Ceilings, path: Union[str, Path]) -> Path:
    """Write ``device`` as YAML (the format :func:`load_ceilings` reads)."""
    import yaml

    data = {"name": device.name, "source": device.source,
            "peak_flops_per_s": {k: float(v) for k, v in device.peak_flops_per_s.items()},
            "memory_bandwidth_bytes_per_s": float(device.memory_bandwidth_bytes_per_s)}
    path = Path(path)
    write_file(path, yaml.safe_dump(data, sort_keys=False))
    return path


def attainable_flops(intensity, device: Ceilings, dtype: str = "float32"):
    """The roofline: ``min(peak, intensity * bandwidth)`` FLOP/s (scalar or array)."""
    result = np.minimum(device.peak(dtype), np.asarray(intensity, dtype=float)
                        * device.memory_bandwidth_bytes_per_s)
    return float(result) if np.ndim(result) == 0 else result


def roofline_seconds(flops, traffic_bytes, device: Ceilings, dtype: str = "float32"):
    """The roofline's lower bound on the time of some work: ``max(flops / peak, bytes /
    bandwidth)`` seconds (scalars or arrays, element by element). A bound, not a prediction:
    real kernels reach a fraction of either ceiling."""
    seconds = np.maximum(np.asarray(flops, dtype=float) / device.peak(dtype),
                         np.asarray(traffic_bytes, dtype=float)
                         / device.memory_bandwidth_bytes_per_s)
    return float(seconds) if np.ndim(seconds) == 0 else seconds


def bound(intensity: float, device: Ceilings, dtype: str = "float32") -> str:
    """``"compute"`` at or above the ridge point, ``"memory"`` below it."""
    if intensity is None or (isinstance(intensity, float) and math.isnan(intensity)):
        return ""
    return "compute" if intensity >= device.ridge_point(dtype) else "memory"


def stage_points(stages: pd.DataFrame, time_column: str) -> tuple[pd.Series, pd.Series]:
    """Where each stage row sits on the roofline: its arithmetic intensity (FLOP per byte read
    or written) and its achieved FLOP/s over ``time_column`` (ms); NaN where a stage moves no
    bytes or took no time."""
    traffic = (stages["bytes_read"] + stages["bytes_written"]).astype(float)
    flops = stages["flops"].astype(float)
    seconds = stages[time_column].astype(float) / 1e3
    return flops / traffic.where(traffic > 0), flops / seconds.where(seconds > 0)


def add_roofline_columns(stages: pd.DataFrame, device: Ceilings, dtype: str = "float32",
                         time_column: Optional[str] = None) -> pd.DataFrame:
    """Add the roofline columns to a per-stage table (in place; also returned).

    Needs the columns ``flops``, ``bytes_read`` and ``bytes_written``; adds
    ``arithmetic_intensity`` (FLOP/byte; empty for a stage that moves no bytes),
    ``attainable_flops_per_s`` and ``bound`` (``compute`` or ``memory``). Given the table's
    time column in ms (``time_column``, e.g. ``cuda_time_ms_median``: see
    :func:`profiling.statistics.time_column`), it also adds ``achieved_flops_per_s`` and
    ``roofline_fraction`` (achieved / attainable).
    """
    missing = [c for c in ("flops", "bytes_read", "bytes_written") if c not in stages.columns]
    if missing:
        raise ProfilingError(f"the roofline needs the columns {', '.join(missing)} "
                             f"(run the op_counts collector)")
    flops = stages["flops"].astype(float)
    traffic = (stages["bytes_read"] + stages["bytes_written"]).astype(float)
    intensity = flops / traffic.where(traffic > 0)
    stages["arithmetic_intensity"] = intensity
    stages["attainable_flops_per_s"] = attainable_flops(intensity.to_numpy(), device, dtype)
    stages["bound"] = [bound(i, device, dtype) for i in intensity]
    if time_column is not None and time_column in stages.columns:
        seconds = stages[time_column].astype(float) / 1e3
        stages["achieved_flops_per_s"] = flops / seconds.where(seconds > 0)
        stages["roofline_fraction"] = (stages["achieved_flops_per_s"]
                                       / stages["attainable_flops_per_s"])
    return stages
