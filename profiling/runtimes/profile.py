"""Profile a model as an inference runtime runs it, with the stage table of a torch run.

:func:`profile_runtime` runs the untimed PyTorch passes (payload, counts) as
:func:`~profiling.runner.profile_model` does, exports the model to ONNX with every node tagged
with its stages (:mod:`.export`), quantises it for ``dtype="int8"`` (:mod:`.quantize`), then
times the warm-up and repeated inferences in the runtime with its own profiler on. Each node's
time goes to its stage call and every call around it (:mod:`.stage_map`); the time that maps to
no stage, the runtime's own work between nodes included, is the ``other`` row, so the top-level
stages plus ``other`` add up to the measured forward.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np
import torch
from torch.utils._pytree import tree_flatten

from ..errors import ProfilingError
from ..runner.passes import ProfileResult, profile_model
from ..stages.markers import StageCall
from ..statistics.aggregate import aggregate_stages
from ..statistics.coverage import with_other_calls
from ..statistics.intervals import AutoRepeats
from .export import ExportedModel, export_onnx
from .graph import load_graph
from .int8_payload import quantised_payload, quantised_shapes
from .quiet import quiet
from .stage_map import StageMap

__all__ = ["RuntimeProfile", "profile_runtime", "output_difference"]
#: The PyTorch passes a runtime run keeps: memory and module times would describe PyTorch.
_UNTIMED = ("payload", "op_counts", "liveness")


@dataclass
class RuntimeProfile:
    """A :class:`~profiling.runner.ProfileResult` measured in a runtime, and how it ran.

    Attributes:
        result: the stage table (``engine`` column: the runtime), payload, counts and times.
        deployment: runtime, version, execution provider, dtype, exported file, the share of
            the runtime's node time mapped to stages, and for int8 the output difference.
        exported: the exported model and its node-to-stage map.
        outputs: the runtime's outputs of the last timed inference, flattened.
        run_file: the file the runtime ran (the quantised one for ONNX Runtime in int8).
    """

    result: ProfileResult
    deployment: dict[str, Any]
    exported: ExportedModel
    outputs: list[np.ndarray] = field(default_factory=list)
    run_file: Optional[Path] = None


def _feeds(inputs: Any) -> list[np.ndarray]:
    leaves, _ = tree_flatten(inputs)
    return [leaf.detach().cpu().numpy() for leaf in leaves if isinstance(leaf, torch.Tensor)]


def _call_paths(calls: Sequence[StageCall]) -> dict[int, str]:
    paths: dict[int, str] = {}
    for call in calls:
        own = f"{call.name}#{call.call_index}"
        paths[call.index] = own if call.parent is None else f"{paths[call.parent]}/{own}"
    return paths


def output_difference(reference: Any, outputs: Sequence[np.ndarray]) -> dict[str, float]:
    """Max and mean absolute difference between the floating tensors of ``reference`` (the
    float32 output) and the runtime's ``outputs`` (in flattened order)."""
    expected = [t.detach().float().cpu().numpy() for t in tree_flatten(reference)[0]
                if isinstance(t, torch.Tensor)]
    pairs = [(e, np.asarray(o, dtype=np.float32)) for e, o in zip(expected, outputs)
             if e.shape == np.shape(o) and e.size]
    if not pairs:
        return {}
    differences = np.concatenate([np.abs(e - o).ravel() for e, o in pairs])
    return {"max_abs_difference": float(differences.max()),
            "mean_abs_difference": float(differences.mean())}


def _make_backend(runtime: str, path: Path, workdir: Path, device_type: str, profile: bool,
                  quantised_model: Any = None):
    if runtime == "onnxruntime":
        from .onnxruntime_backend import OnnxRuntimeBackend, default_provider

        return OnnxRuntimeBackend(path, workdir, provider=default_provider(device_type),
                                  profile=profile)
    from .openvino_backend import OpenVinoBackend

    return OpenVinoBackend(quantised_model if quantised_model is not None else path,
                           profile=profile)


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


def _more(done: int, warmup: int, repeats: Union[int, AutoRepeats], forward_ms: list[float],
          started: float) -> bool:
    if done < warmup:
        return True
    if isinstance(repeats, AutoRepeats):
        return not repeats.stop_reason(forward_ms, time.perf_counter() - started)
    return done < warmup + int(repeats)


def profile_runtime(model: torch.nn.Module, inputs: Any, *, runtime: str = "onnxruntime",
                    dtype: str = "float32", warmup: int = 1,
                    repeats: Union[int, AutoRepeats] = 5,
                    collectors: Sequence[str] = ("payload", "op_counts"),
                    attach: Optional[Mapping[str, str]] = None,
                    calibration: Optional[Sequence[Any]] = None,
                    workdir: Optional[Path] = None,
                    progress: Optional[Callable[[str, int, int], None]] = None
                    ) -> RuntimeProfile:
    """Profile ``model(*inputs)`` stage by stage as ``runtime`` runs it.

    Args:
        model: a module in eval mode whose forward is marked with stages or attached ones.
        inputs: its positional arguments.
        runtime: ``onnxruntime`` or ``openvino``.
        dtype: ``float32``, or ``int8`` for static post-training quantisation (ONNX Runtime's
            QDQ quantiser, NNCF for OpenVINO).
        warmup, repeats: untimed and timed inferences, as in ``profile_model``.
        collectors: the untimed PyTorch passes (payload, counts); timers are the runtime's.
        attach: extra stages attached to submodules by path.
        calibration: inputs (each like ``inputs``) to calibrate int8 on; ``inputs`` if absent.
        workdir: where the exported and quantised models go (a temporary folder if absent).
        progress: called as ``progress(phase, done, total)``.
    """
    if runtime not in ("onnxruntime", "openvino"):
        raise ProfilingError(f"unknown runtime '{runtime}'; accepted: onnxruntime, openvino")
    if dtype not in ("float32", "int8"):
        raise ProfilingError(f"dtype '{dtype}' is not run by {runtime}; accepted: float32, int8")
    workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="stagezoo-"))
    device_type = next((t.device.type for t in tree_flatten(inputs)[0]
                        if isinstance(t, torch.Tensor)), "cpu")
    untimed = [c for c in collectors if c in _UNTIMED] or ["payload"]
    reference = profile_model(model, inputs, collectors=untimed, attach=attach, warmup=0,
                              repeats=1)
    with quiet():
        exported = export_onnx(model, tuple(inputs), workdir / "model.onnx", attach=attach)
    graph = load_graph(exported.path)
    feeds = _feeds(inputs)
    deployment: dict[str, Any] = {"dtype": dtype, "exported_file": str(exported.path)}
    run_path, quantised_model, quantised = exported.path, None, set()
    if dtype == "int8":
        calibration_feeds = [_feeds(item) for item in calibration] if calibration else [feeds]
        with quiet():
            run_path, quantised_model, quantised = _quantise(runtime, exported, workdir,
                                                             calibration_feeds)
        if run_path != exported.path:
            deployment["quantised_file"] = str(run_path)
    backend = _make_backend(runtime, run_path, workdir, device_type, True, quantised_model)
    deployment.update(backend.describe())
    forward_ms, outputs, done, started = [], None, 0, time.perf_counter()
    while _more(done, warmup, repeats, forward_ms, started):
        start = time.perf_counter_ns()
        outputs = backend.run(feeds)
        stop = time.perf_counter_ns()
        if done >= warmup:
            forward_ms.append((stop - start) / 1e6)
        else:
            started = time.perf_counter()
        done += 1
        if progress:
            progress("repeats" if done > warmup else "warmup", done, done)
    readers = {name: graph.consumers[name][0] for name in exported.input_names
               if graph.consumers.get(name)}
    stage_map = StageMap(exported.node_stages, graph.producers, input_readers=readers)
    if run_path != exported.path:  # the quantiser's graph: its nodes placed by what they make
        run_graph = load_graph(run_path)
        stage_map = StageMap(stage_map.derive(run_graph.producers), run_graph.producers,
                             input_readers=readers)
    stage_map.aliases = backend.aliases()
    per_run = [stage_map.stage_times(times) for times in backend.node_times(warmup)]
    calls = list(reference.calls)
    paths = _call_paths(calls)
    timed: list[list[StageCall]] = []
    metric = "cuda_time_ms" if device_type == "cuda" else "cpu_time_ms"
    mapped_ms, node_ms = 0.0, 0.0
    for (times, unmapped), total in zip(per_run, forward_ms):
        forward_calls = []
        for call in calls:
            if call.kind != "stage":
                continue
            copy = StageCall(call.name, call.kind, call.index, call.parent, call.depth,
                             call.call_index)
            copy.metrics[metric] = times.get(paths[call.index], 0.0)
            forward_calls.append(copy)
        timed.append(with_other_calls(forward_calls, {metric: total}))
        mapped_ms += sum(v for p, v in times.items() if "/" not in p)
        node_ms += sum(v for p, v in times.items() if "/" not in p) + unmapped
    deployment["mapped_share"] = round(mapped_ms / node_ms, 4) if node_ms else None
    if dtype == "int8":
        float_ms = _plain_forward_ms(runtime, exported.path, workdir, device_type, feeds,
                                     warmup, max(len(forward_ms), 1))
        deployment["float32_forward_ms_median"] = float(np.median(float_ms))
        deployment["int8_speedup"] = round(float(np.median(float_ms) / np.median(forward_ms)),
                                           3)
        _quantise_payload(calls, paths, exported, graph, graph.carried_quantised(quantised))
        deployment["int8_output"] = output_difference(reference.output, outputs or [])
    counter = reference.collectors.get("op_counts")
    stages = aggregate_stages(with_other_calls(calls, counter.total.as_dict() if counter
                                               else {}), timed)
    stages["engine"] = [runtime if kind != "probe" else "" for kind in stages["kind"]]
    result = ProfileResult(calls=calls, events=reference.events, timed=timed,
                           forward_ms=forward_ms, stages=stages, output=reference.output,
                           collectors=reference.collectors, notes=list(reference.notes),
                           noise={})
    return RuntimeProfile(result, deployment, exported, list(outputs or []), run_path)


def _plain_forward_ms(runtime: str, path: Path, workdir: Path, device_type: str,
                      feeds: Sequence[np.ndarray], warmup: int, repeats: int) -> list[float]:
    """Forward times (ms) of the float32 model in the same runtime, its profiler off."""
    backend = _make_backend(runtime, path, workdir, device_type, False)
    times = []
    for index in range(warmup + repeats):
        start = time.perf_counter_ns()
        backend.run(feeds)
        if index >= warmup:
            times.append((time.perf_counter_ns() - start) / 1e6)
    return times


def _quantise_payload(calls: Sequence[StageCall], paths: Mapping[int, str],
                      exported: ExportedModel, graph: Any, quantised: set[str]) -> None:
    """Rewrite each stage call's payload with the int8 bytes of its quantised boundaries."""
    def is_quantised(value: str) -> bool:
        return value in quantised

    for call in calls:
        if call.kind != "stage":
            continue
        incoming, outgoing = graph.boundaries(exported.node_stages, paths[call.index])
        call.inputs = quantised_payload(call.inputs, quantised_shapes(incoming, is_quantised)[0])
        call.outputs = quantised_payload(call.outputs,
                                         quantised_shapes(outgoing, is_quantised)[0])
