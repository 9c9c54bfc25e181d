"""Making a runtime's session, quantising for it, and timing it with its profiler off."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .export import ExportedModel

__all__ = ["make_backend", "quantise", "plain_forward_ms"]


def make_backend(runtime: str, path: Path, workdir: Path, device_type: str, profile: bool,
                 quantised_model: Any = None, *, spinning: bool = True):
    """An :class:`~.onnxruntime_backend.OnnxRuntimeBackend` or
    :class:`~.openvino_backend.OpenVinoBackend` of the file at ``path`` (or of NNCF's
    ``quantised_model``), its profiler on when ``profile``; ``spinning=False`` keeps ONNX
    Runtime's idle threads from spinning (for sessions that take turns on the same cores)."""
    if runtime == "onnxruntime":
        from .onnxruntime_backend import OnnxRuntimeBackend, default_provider

        return OnnxRuntimeBackend(path, workdir, provider=default_provider(device_type),
                                  profile=profile, spinning=spinning)
    from .openvino_backend import OpenVinoBackend

    return OpenVinoBackend(quantised_model if quantised_model is not None else path,
                           profile=profile)


def quantise(runtime: str, exported: ExportedModel, workdir: Path,
             calibration: Sequence[Sequence[np.ndarray]]) -> tuple[Path, Any, set[str]]:
    """int8 for ``runtime``: the file to run (ONNX Runtime's QDQ model, written to
    ``workdir``), NNCF's ``openvino.Model`` for OpenVINO (else ``None``), and the values the
    quantiser quantises."""
    if runtime == "onnxruntime":
        from .quantize import quantize_onnxruntime

        target = workdir / f"{exported.path.stem}.int8.onnx"
        return target, None, quantize_onnxruntime(exported.path, target, exported.input_names,
                                                  calibration)
    from .quantize import quantize_nncf

    model, quantised = quantize_nncf(exported.path, calibration)
    return exported.path, model, quantised


def plain_forward_ms(runtime: str, path: Path, workdir: Path, device_type: str,
                     feeds: Sequence[np.ndarray], warmup: int, repeats: int,
                     quantised_model: Any = None) -> list[float]:
    """Forward times (ms) of the model at ``path`` (or NNCF's ``quantised_model``) in
    ``runtime``, its profiler off."""
    backend = make_backend(runtime, path, workdir, device_type, False, quantised_model)
    times = []
    for index in range(warmup + repeats):
        start = time.perf_counter_ns()
        backend.run(feeds)
        if index >= warmup:
            times.append((time.perf_counter_ns() - start) / 1e6)
    return times
