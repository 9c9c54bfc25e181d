"""Deterministic weights that the official code and ours regenerate from parameter names.

The compact references in ``tests/data`` hold only inputs and outputs. The weights that made
those outputs come from :func:`reference_value`: every tensor is a function of its official
name and shape, so ``tests/data/make_references.py`` (official model) and the equivalence
tests (our model, whose names map to the official ones) rebuild the same numbers without
storing them.

The recipe keeps the activations small, so a random network stays well conditioned and float32
round-off stays round-off instead of being amplified into pixels of flow. With unit-variance
weights and unit norm scales, GMFlow's six transformer layers add up features large enough to
make its matching softmax nearly an argmax: a relative change of 1e-6 in one input moved the
refined flow by 0.07 px. With the values below it moves it by 2e-5 px, and the flows still
span several pixels (GMFlow 64x96: up to 8 px, standard deviation 4 px):

=====================================  ====================================================
entry                                  value (``u`` uniform in [-1, 1), seeded by the name)
=====================================  ====================================================
weights with 2+ dimensions             ``u / sqrt(fan_in)``: variance ``1 / (3 fan_in)``
1-D ``*weight`` (norm scales)          ``0.25 + 0.025 u``
``*running_var``                       ``1 + 0.5 u``
other 1-D and 0-D (biases, means)      ``0.1 u``
=====================================  ====================================================

The seed of an entry is ``zlib.crc32`` of its name, which is the same on every platform and
Python version; ``torch.rand`` with a seeded CPU generator is too.
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path
from typing import Any, Callable, Sequence

import torch
from torch import nn

__all__ = ["reference_value", "fill_reference_weights_", "load_reference", "official_names",
           "fingerprint", "fingerprint_mismatch", "WEIGHT_TOLERANCE_EPS"]

#: the compact references, made by ``tests/data/make_references.py``.
DATA_DIR = Path(__file__).resolve().parent / "data"

#: buffers that the recipe fills besides the parameters; other buffers keep their values.
RUNNING_STATISTICS = ("running_mean", "running_var")


def reference_value(name: str, shape: Sequence[int]) -> torch.Tensor:
    """The float32 tensor of ``shape`` that the recipe gives the entry called ``name``."""
    generator = torch.Generator().manual_seed(zlib.crc32(name.encode("utf-8")))
    uniform = torch.rand(tuple(shape), generator=generator, dtype=torch.float64) * 2 - 1
    if len(shape) >= 2:
        fan_in = math.prod(shape[1:])
        value = uniform / math.sqrt(fan_in)
    elif name.endswith("running_var"):
        value = 1 + 0.5 * uniform
    elif name.endswith("weight"):
        value = 0.25 + 0.025 * uniform
    else:
        value = 0.1 * uniform
    return value.to(torch.float32)


def fill_reference_weights_(model: nn.Module,
                            official_name: Callable[[str], str] = lambda name: name) -> None:
    """Overwrite, in place, every parameter and BatchNorm running statistic of ``model`` with
    :func:`reference_value` of its name; ``official_name`` maps our name to the official one
    (identity where they agree). Other buffers (e.g. normalisation constants) are kept."""
    entries = dict(model.named_parameters())
    entries.update((name, buffer) for name, buffer in model.named_buffers()
                   if name.endswith(RUNNING_STATISTICS))
    with torch.no_grad():
        for name, tensor in entries.items():
            tensor.copy_(reference_value(official_name(name), tensor.shape))


def load_reference(file_name: str) -> dict:
    """A reference of ``tests/data``: inputs, official outputs, official names and shapes."""
    return torch.load(DATA_DIR / file_name, map_location="cpu", weights_only=True)


def official_names(reference: dict, key_map: Callable[[str], str]) -> dict[str, str]:
    """Our name -> the official name, for every official ``state_dict`` entry of
    ``reference``, through ``key_map`` (official name -> ours, as checkpoints load)."""
    return {key_map(name): name for name in reference["official_entries"]}


#: Values a golden extract keeps of each weight, evenly spaced through it.
FINGERPRINT_VALUES = 64
#: How far, in float32 eps of a tensor's largest magnitude, a weight rebuilt from the golden
#: seed may be from the golden one. The initialisers' random fills are vectorised in ATen's
#: AVX2 and AVX-512 kernels, which rebuild the golden weights bit for bit; its scalar kernels
#: (ATEN_CPU_CAPABILITY=default, a CPU without those builds) compute ``normal_`` and a scaled
#: ``uniform_`` with another rounding: up to 4.2 eps measured (AMD EPYC, torch 2.14). A
#: changed initialisation (another order, distribution or scale) moves them by far more.
WEIGHT_TOLERANCE_EPS = 16


def fingerprint(tensor: torch.Tensor) -> dict[str, Any]:
    """What a golden extract keeps of a weight: its shape, :data:`FINGERPRINT_VALUES` evenly
    spaced values, and the largest magnitude and the sum of magnitudes (in float64)."""
    flat = tensor.detach().cpu().reshape(-1)
    step = max(1, flat.numel() // FINGERPRINT_VALUES)
    magnitudes = flat.double().abs()
    return {"shape": list(tensor.shape), "values": flat[::step][:FINGERPRINT_VALUES].clone(),
            "abs_max": float(magnitudes.max()) if flat.numel() else 0.0,
            "abs_sum": float(magnitudes.sum())}


def fingerprint_mismatch(tensor: torch.Tensor, expected: dict[str, Any]) -> str:
    """Why ``tensor`` is not the weight whose :func:`fingerprint` is ``expected`` (``""``
    when it is, within :data:`WEIGHT_TOLERANCE_EPS` for floating tensors, exactly for others)."""
    ours = fingerprint(tensor)
    if ours["shape"] != expected["shape"] or tensor.dtype != expected["values"].dtype:
        return f"{tensor.dtype} {list(tensor.shape)} is not the golden weight's type or size"
    tolerance = 0.0
    if tensor.is_floating_point():
        tolerance = WEIGHT_TOLERANCE_EPS * torch.finfo(tensor.dtype).eps * expected["abs_max"]
    values = float((ours["values"].double() - expected["values"].double()).abs().max()) \
        if tensor.numel() else 0.0
    total = abs(ours["abs_sum"] - expected["abs_sum"])
    if values > tolerance or total > tolerance * max(tensor.numel(), 1):
        return (f"values differ by up to {values:.3g} and their magnitudes' sum by {total:.3g} "
                f"(allowed: {tolerance:.3g} per value)")
    return ""
