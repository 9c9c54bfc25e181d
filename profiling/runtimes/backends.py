"""Making a runtime's session, quantising for it, and timing it with its profiler off."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .export import ExportedModel
from .parts import export_failure
from .workdir import raise_if_disk_full

__all__ = ["make_backend", "quantise", "plain_forward_ms", "QuantiseFailure", "runtime_failure"]

#: The quantiser of each runtime, as a failure names it.
QUANTISERS = {"onnxruntime": "ONNX Runtime's quantiser", "openvino": "NNCF"}


class QuantiseFailure(RuntimeError):
    """The quantiser, not the runtime, failed: the message says which and why."""


def runtime_failure(runtime: str, error: BaseException) -> str:
    """Why ``runtime`` cannot run a model, in one line: the quantiser's failure as it says,
    else ``<runtime> could not run it: <first line of the error>``; a full disk raises
    :class:`~.workdir.DiskFull`."""
    if isinstance(error, QuantiseFailure):
        raise_if_disk_full(error)
        return str(error)
    return f"{runtime} could not run it: {export_failure(error)}"


def make_backend(runtime: str, path: Path, workdir: Path, device_type: str, profile: bool,
                 quantised_model: Any = None, *, spinning: bool = True,
                 dtype: str = "float32"):
    """An :class:`~.onnxruntime_backend.OnnxRuntimeBackend` or
    :class:`~.openvino_backend.OpenVinoBackend` of the file at ``path`` (or of NNCF's
    ``quantised_model``), its profiler on when ``profile``; ``spinning=False`` keeps ONNX
    Runtime's idle threads from spinning (for sessions that take turns on the same cores).
    ``dtype`` is the run's: OpenVINO executes the floating operators in it (``int8``: the
    operators left in float in float32), never in its own default."""
    if runtime == "onnxruntime":
        from .onnxruntime_backend import OnnxRuntimeBackend, default_provider

        return OnnxRuntimeBackend(path, workdir, provider=default_provider(device_type),
                                  profile=profile, spinning=spinning)
    from .openvino_backend import OpenVinoBackend

    return OpenVinoBackend(quantised_model if quantised_model is not None else path,
                           profile=profile, precision=float_precision(dtype))


def float_precision(dtype: str) -> str:
    """The precision a run of ``dtype`` executes its floating operators in: ``int8`` keeps
    the operators it does not quantise in ``float32``."""
    return "float32" if dtype == "int8" else dtype


def quantise(runtime: str, exported: ExportedModel, workdir: Path,
             calibration: Sequence[Sequence[np.ndarray]]) -> tuple[Path, Any, set[str]]:
    """int8 for ``runtime``: the file to run (ONNX Runtime's QDQ model, written to
    ``workdir``), NNCF's ``openvino.Model`` for OpenVINO (else ``None``), and the values the
    quantiser quantises. A :class:`QuantiseFailure` names the quantiser when it fails."""
    try:
        return _quantise(runtime, exported, workdir, calibration)
    except Exception as error:  # noqa: BLE001  (said as the quantiser's failure)
        raise QuantiseFailure(f"{QUANTISERS[runtime]} could not quantise it: "
                              f"{export_failure(error)}") from error


def _quantise(runtime: str, exported: ExportedModel, workdir: Path,
              calibration: Sequence[Sequence[np.ndarray]]) -> tuple[Path, Any, set[str]]:
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
                     quantised_model: Any = None, dtype: str = "float32") -> list[float]:
    """Forward times (ms) of the model at ``path`` (or NNCF's ``quantised_model``) in
    ``runtime`` and ``dtype``, its profiler off."""
    backend = make_backend(runtime, path, workdir, device_type, False, quantised_model,
                           dtype=dtype)
    times = []
    for index in range(warmup + repeats):
        start = time.perf_counter_ns()
        backend.run(feeds)
        if index >= warmup:
            times.append((time.perf_counter_ns() - start) / 1e6)
    return times
