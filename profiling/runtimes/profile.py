"""Profile a model as an inference runtime runs it, with the stage table of a torch run.

:func:`profile_runtime` runs the untimed PyTorch passes (payload, counts) as
:func:`~profiling.runner.profile_model` does, exports the model to ONNX with every node tagged
with its stages (:mod:`.export`), quantises it for ``dtype="int8"`` (by the executor's
quantiser), then times the warm-up and repeated inferences in the runtime with its own
profiler on. Each node's time goes to its stage call and every call around it
(:mod:`.stage_map`); the time that maps to no stage, the runtime's own work between nodes
included, is the ``other`` row, so the top-level stages plus ``other`` add up to the measured
forward.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import pandas as pd
import torch
from torch.utils._pytree import tree_flatten

from . import require_runtime
from ..runner.passes import ProfileResult, profile_model
from ..stages.markers import StageCall
from ..statistics.aggregate import aggregate_stages
from ..statistics.coverage import with_other_calls
from ..statistics.intervals import AutoRepeats
from .backends import make_backend, quantise, runtime_failure, time_session
from .cache import (BadEntry, CachedExport, discard_entry, entry_limit, expected_entry_bytes,
                    export_key, read_entry, stale_parts, usable_cache, write_entry)
from .cache_bound import DEFAULT_LIMIT_BYTES, mark_used, prune
from .cache_key import input_signature
from .export import ExportedModel, export_onnx
from .graph import OnnxGraph, load_graph
from .hybrid import profile_parts
from .int8_payload import quantise_call_payloads
from .paired_speed import paired_speeds
from .parts import (Captured, capture_module_calls, export_failure, exportable_parts,
                    part_attach, tensor_feeds)
from .quiet import quiet
from .workdir import make_workdir, raise_if_disk_full
from .registry import executor
from .runtime_profile import (RuntimeProfile, call_paths, forward_calls, node_breakdown,
                              other_parts, output_difference, record_output_difference,
                              record_nodes, runtime_stage_map)
from .stage_map import StageMap

__all__ = ["RuntimeProfile", "profile_runtime", "output_difference"]
#: The PyTorch passes a runtime run keeps: memory and module times would describe PyTorch.
_UNTIMED = ("payload", "op_counts", "liveness")


def exported_entry(model: torch.nn.Module, inputs: tuple, attach: Optional[Mapping[str, str]],
                   workdir: Path, cache_folder: Optional[Path],
                   identity: Optional[Mapping[str, Any]] = None,
                   cache_limit: int = DEFAULT_LIMIT_BYTES
                   ) -> tuple[CachedExport, str, Optional[str]]:
    """The model exported whole, or else its parts that export (:mod:`.parts`), from the
    cache when it holds a sound entry (:mod:`.cache`); ``"hit"``, ``"miss"`` or ``"off"``
    (no cache, or none usable); and a note on the cache (``None``: nothing to say)."""
    notes, state = [], "off"
    if cache_folder is not None:
        cache_folder, note = usable_cache(cache_folder, expected_entry_bytes(model))
        notes.append(note)
    if cache_folder is not None:
        state, folder = "miss", Path(cache_folder) / export_key(model, inputs, attach=attach,
                                                                identity=identity)
        entry, note = _from_cache(model, inputs, folder, workdir)
        if entry is not None:
            mark_used(folder)
            return entry, "hit", None
        notes.append(note)
    try:
        with quiet():
            whole = export_onnx(model, inputs, workdir / "model.onnx", attach=attach)
        whole.save_map()
        entry = CachedExport(whole=whole)
    except Exception as error:  # noqa: BLE001  (what does not export runs in PyTorch)
        entry = _exported_parts(model, inputs, attach, workdir, export_failure(error))
    if state == "miss":
        note = write_entry(folder, entry)
        notes.append(note or _pruned(folder, cache_limit))
    return entry, state, "; ".join(note for note in notes if note) or None


def _pruned(kept: Path, limit: int) -> Optional[str]:
    """Bring the cache that ``kept`` was just written into back under ``limit`` bytes
    (:mod:`.cache_bound`); the note saying what went, or ``None``."""
    removed = prune(kept.parent, limit, keep=kept)
    if not removed:
        return None
    return (f"export cache {kept.parent}: removed the {len(removed)} least recently used "
            f"entr{'y' if len(removed) == 1 else 'ies'} to stay under {limit / 1e9:g} GB")


def _from_cache(model: torch.nn.Module, inputs: tuple, folder: Path, workdir: Path
                ) -> tuple[Optional[CachedExport], Optional[str]]:
    """The sound entry in ``folder`` whose parts (if any) take this run's inputs, copied into
    ``workdir``; else ``None`` and, where an entry was there, the note on its removal."""
    try:
        entry = read_entry(folder, workdir / "cached", entry_limit(model))
        why = entry is not None and entry.whole is None and stale_parts(
            entry, _part_inputs(capture_module_calls(model, inputs)))
    except BadEntry as bad:
        why = str(bad)
    except OSError as error:  # copying it into the run's folder failed
        raise_if_disk_full(error)
        raise
    if not why:
        return entry, None
    shutil.rmtree(workdir / "cached", ignore_errors=True)
    return None, discard_entry(folder, why)


def _exported_parts(model: torch.nn.Module, inputs: tuple,
                    attach: Optional[Mapping[str, str]], workdir: Path,
                    reason: str) -> CachedExport:
    """The parts of ``model`` that export (:func:`~.parts.exportable_parts`); ``reason`` says
    why the whole model does not run."""
    captured = capture_module_calls(model, inputs)

    def export(path: str, call: Captured) -> ExportedModel:
        target = workdir / f"part{len(parts)}.onnx"
        with quiet():
            exported = export_onnx(model.get_submodule(path), call.args, target,
                                   kwargs=call.kwargs, attach=part_attach(attach, path))
        exported.save_map()
        parts[path] = exported
        return exported

    parts: dict[str, ExportedModel] = {}
    _, in_torch = exportable_parts(model, captured, export)
    signatures = _part_inputs(captured)
    return CachedExport(parts=parts, in_torch={"": reason, **in_torch},
                        part_inputs={path: signatures[path] for path in parts})


def _part_inputs(captured: Mapping[str, Captured]) -> dict[str, list[str]]:
    """Each captured module's input signature (the export cache's check of its parts)."""
    return {path: input_signature((call.args, call.kwargs)) for path, call in captured.items()}


def profile_runtime(model: torch.nn.Module, inputs: Any, *, runtime: str = "onnxruntime",
                    dtype: str = "float32", warmup: int = 1,
                    repeats: Union[int, AutoRepeats] = 5,
                    collectors: Sequence[str] = ("payload", "op_counts"),
                    attach: Optional[Mapping[str, str]] = None,
                    calibration: Optional[Sequence[Any]] = None,
                    workdir: Optional[Path] = None,
                    cache_folder: Optional[Path] = None,
                    cache_limit: int = DEFAULT_LIMIT_BYTES,
                    identity: Optional[Mapping[str, Any]] = None,
                    progress: Optional[Callable[[str, int, int], None]] = None
                    ) -> RuntimeProfile:
    """Profile ``model(*inputs)`` stage by stage as ``runtime`` runs it.

    Args:
        model: a module in eval mode whose forward is marked with stages or attached ones.
        inputs: its positional arguments.
        runtime: a registered executor's name (:mod:`.registry`: ``onnxruntime``, ...).
        dtype: one the executor runs (``dtypes``): ``float32``, or ``int8`` for static
            post-training quantisation by its quantiser (ONNX Runtime's QDQ, NNCF for OpenVINO).
        warmup, repeats: untimed and timed inferences, as in ``profile_model`` (untimed ones
            go on while the inferences get faster: the result's ``noise["warmup"]``).
        collectors: the untimed PyTorch passes (payload, counts); timers are the runtime's.
        attach: extra stages attached to submodules by path.
        calibration: inputs (each like ``inputs``) to calibrate int8 on; ``inputs`` if absent.
        workdir: where the exported and quantised models go (a temporary folder if absent).
        cache_folder, cache_limit: where exports are kept across runs (:mod:`.cache`;
            ``None``: export every time), and the bytes they may take (:mod:`.cache_bound`).
        identity: what else decides the export (plain values; the zoo's model options).
        progress: called as ``progress(phase, done, total)``.
    """
    executor(runtime, dtype)  # a one-line error for an unknown runtime or a dtype it lacks
    require_runtime(runtime, dtype)
    workdir = Path(workdir) if workdir is not None else make_workdir()
    workdir.mkdir(parents=True, exist_ok=True)
    device_type = next((t.device.type for t in tree_flatten(inputs)[0]
                        if isinstance(t, torch.Tensor)), "cpu")
    untimed = [c for c in collectors if c in _UNTIMED] or ["payload"]
    reference = profile_model(model, inputs, collectors=untimed, attach=attach, warmup=0,
                              repeats=1)  # eager first: models that cache per size fill them
    entry, cache_state, cache_note = exported_entry(model, tuple(inputs), attach, workdir,
                                                    cache_folder, identity, cache_limit)
    deployment: dict[str, Any] = {"dtype": dtype, "export_cache": cache_state}
    if cache_note:
        deployment["export_cache_note"] = cache_note
    in_parts = dict(runtime=runtime, dtype=dtype, warmup=warmup, repeats=repeats, attach=attach,
                    calibration=calibration, workdir=workdir, device_type=device_type,
                    progress=progress)
    if entry.whole is None:
        return profile_parts(model, tuple(inputs), reference, entry, deployment, **in_parts)
    feeds = tensor_feeds(inputs)
    try:
        whole = _open_whole(entry.whole, runtime, dtype, feeds, calibration, workdir,
                            device_type)
    except Exception as error:  # noqa: BLE001  (the runtime cannot run it whole: in parts)
        entry = _exported_parts(model, tuple(inputs), attach, workdir,
                                runtime_failure(runtime, error))
        return profile_parts(model, tuple(inputs), reference, entry, deployment, **in_parts)
    forward_ms, outputs, noise = time_session(whole.backend, feeds, warmup, repeats, progress)
    timed, calls, operators = _stage_times(whole, reference, forward_ms,
                                           noise.get("warmup", {}).get("made", warmup),
                                           device_type, deployment)  # settled: maybe more
    _unprofiled_figures(whole, deployment, runtime, dtype, feeds, forward_ms, workdir,
                        device_type)
    if dtype == "int8":
        quantise_call_payloads(calls, call_paths(calls), whole.exported.node_stages,
                               whole.graph, whole.graph.carried_quantised(whole.quantised))
    record_output_difference(deployment, dtype, reference.output, outputs)
    counter = reference.collectors.get("op_counts")
    stages = aggregate_stages(with_other_calls(calls, counter.total.as_dict() if counter
                                               else {}), timed)
    stages["engine"] = [runtime if kind != "probe" else "" for kind in stages["kind"]]
    result = ProfileResult(calls=calls, events=reference.events, timed=timed,
                           forward_ms=forward_ms, stages=stages, output=reference.output,
                           collectors=reference.collectors, notes=list(reference.notes),
                           noise=noise, operator_times=operators)
    return RuntimeProfile(result, deployment, whole.exported, outputs, whole.run_path,
                          files=list(dict.fromkeys([whole.exported.path, whole.run_path])),
                          quantised_model=whole.quantised_model, backend=whole.backend,
                          stage_map=whole.stage_map)


@dataclass
class _Whole:
    """The whole model opened in the runtime: the exported model and its graph, the file the
    runtime runs, the quantiser's model and the values it quantised (int8), the profiled
    session and the map of its nodes to stages."""

    exported: ExportedModel
    graph: OnnxGraph
    run_path: Path
    quantised_model: Any
    quantised: set[str]
    backend: Any
    stage_map: Optional[StageMap] = None


def _open_whole(exported: ExportedModel, runtime: str, dtype: str, feeds: list,
                calibration: Optional[Sequence[Any]], workdir: Path, device_type: str
                ) -> _Whole:
    """The profiled session of the whole exported model (quantised first for int8, on
    ``calibration`` or else the run's own ``feeds``)."""
    run_path, quantised_model, quantised = exported.path, None, set()
    if dtype == "int8":
        calibration_feeds = [tensor_feeds(item) for item in calibration] if calibration \
            else [feeds]
        with quiet():
            run_path, quantised_model, quantised = quantise(runtime, exported, workdir,
                                                             calibration_feeds)
    backend = make_backend(runtime, run_path, workdir, device_type, True, quantised_model,
                           dtype=dtype)
    return _Whole(exported, load_graph(exported.path), run_path, quantised_model, quantised,
                  backend)


def _stage_times(whole: _Whole, reference: ProfileResult, forward_ms: Sequence[float],
                 warmup: int, device_type: str, deployment: dict[str, Any]
                 ) -> tuple[list[list[StageCall]], list[StageCall], pd.DataFrame]:
    """Each timed forward's stage calls from the session's node times, the reference
    forward's calls and each call's nodes (:func:`~.runtime_profile.node_breakdown`); puts
    the deployment facts and the node figures in ``deployment``."""
    exported = whole.exported
    deployment["exported_file"] = str(exported.path)
    if whole.run_path != exported.path:
        deployment["quantised_file"] = str(whole.run_path)
    deployment.update(whole.backend.describe())
    whole.stage_map = runtime_stage_map(exported, whole.run_path, whole.backend, whole.graph)
    node_runs = whole.backend.node_times(warmup)
    per_run = [whole.stage_map.stage_times(times) for times in node_runs]
    record_nodes(deployment, [(whole.backend, whole.stage_map, node_runs)])
    calls = list(reference.calls)
    paths = call_paths(calls)
    metric = "cuda_time_ms" if device_type == "cuda" else "cpu_time_ms"
    timed = [forward_calls(calls, paths, times, metric, total)
             for (times, _), total in zip(per_run, forward_ms)]
    # top-level paths only: a nested stage's time is in its parent's as well
    mapped_ms = sum(v for times, _ in per_run for p, v in times.items() if "/" not in p)
    node_ms = mapped_ms + sum(unmapped for _, unmapped in per_run)
    deployment["mapped_share"] = round(mapped_ms / node_ms, 4) if node_ms else None
    split = other_parts(forward_ms, whole.backend.run_spans(warmup), per_run, node_runs)
    if split is not None:
        deployment["other_parts_ms"] = split
    operators = node_breakdown(calls, whole.stage_map, node_runs,
                               whole.backend.node_precisions())
    return timed, calls, operators


def _unprofiled_figures(whole: _Whole, deployment: dict[str, Any], runtime: str, dtype: str,
                        feeds: list, forward_ms: Sequence[float], workdir: Path,
                        device_type: str) -> None:
    """The runtime's profiler slows the forward (docs/runtimes.md measures by how much): profiled,
    unprofiled and float32 sessions timed in interleaved rounds say by how much, and are what
    int8 and float32 compare on (:func:`~.paired_speed.paired_speeds`)."""
    deployment.update(paired_speeds(runtime, whole.run_path, whole.exported.path, workdir,
                                    device_type, feeds, len(forward_ms), whole.quantised_model,
                                    dtype))
