"""A model that did not export whole: its exported parts in the runtime, the rest in PyTorch.

The forward runs in PyTorch with each exported part's ``forward`` replaced by a call into the
runtime (:func:`~.parts.runtime_parts`), under :func:`~profiling.runner.profile_model`'s wall
clock timer. A stage that PyTorch still enters (outside the parts, or around one) takes that
time; a stage inside a part takes the runtime profiler's node times, mapped as for a whole
model and placed under the stage path open where the part was called. The stage table's
``engine`` column says which ran each stage: the runtime, ``torch``, or both joined by ``+``
for a stage with parts and PyTorch code inside.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import torch

from ..errors import ProfilingError
from ..runner.passes import ProfileResult, profile_model
from ..stages.markers import StageCall
from ..statistics.aggregate import aggregate_stages
from ..statistics.coverage import OTHER, with_other_calls
from ..statistics.intervals import AutoRepeats
from .backends import make_backend, quantise, runtime_failure
from .cache import CachedExport
from .parts import Part, capture_module_calls, runtime_parts, tensor_feeds
from .graph import load_graph
from .int8_payload import quantise_call_payloads
from .quiet import quiet
from .runtime_profile import (RuntimeProfile, call_paths, forward_calls,
                              record_output_difference, record_nodes, runtime_stage_map)
from .stage_map import enclosing_paths, part_path

__all__ = ["profile_parts"]

_TORCH = "torch"


def _calibration_feeds(model: torch.nn.Module, part: Part,
                       calibration: Optional[Sequence[Any]]) -> list[list[Any]]:
    if not calibration:
        return [tensor_feeds((part.captured.args, part.captured.kwargs))]
    feeds = []
    for item in calibration:
        call = capture_module_calls(model, tuple(item))[part.path]
        feeds.append(tensor_feeds((call.args, call.kwargs)))
    return feeds


def _part_backend(model: torch.nn.Module, part: Part, runtime: str, dtype: str,
                  calibration: Optional[Sequence[Any]], workdir: Path, device_type: str):
    """The runtime's session of ``part`` (quantised first for int8), the file it runs and the
    values the quantiser quantised."""
    run_path, quantised_model, values = part.exported.path, None, set()
    if dtype == "int8":
        with quiet():
            run_path, quantised_model, values = quantise(
                runtime, part.exported, workdir, _calibration_feeds(model, part, calibration))
    backend = make_backend(runtime, run_path, workdir, device_type, True, quantised_model,
                           dtype=dtype)
    return backend, run_path, values


def _nothing_runs(model: torch.nn.Module, runtime: str, in_torch: Mapping[str, str]) -> str:
    """The one line of a model of which no part exports and runs in ``runtime``: why the
    whole model does not, and why its first modules do not."""
    whole = in_torch.get("", "")
    others = [f"{path}: {why}" for path, why in in_torch.items() if path][:2]
    return (f"{runtime} runs no part of {type(model).__name__}: the whole model: {whole}"
            + (f"; on their own: {'; '.join(others)}" if others else
               "; no submodule exports on its own")
            + "; profile it in PyTorch")


def _engines(calls: Sequence[StageCall], paths: Mapping[int, str], inside: set[str],
             part_roots: set[str], runtime: str) -> list[str]:
    """The engine of each call of ``calls`` (stages, ``other`` rows, probes)."""
    children: dict[Optional[int], list[StageCall]] = {}
    for call in calls:
        children.setdefault(call.parent, []).append(call)
    found: dict[int, set[str]] = {}

    def engines(call: StageCall) -> set[str]:
        if call.index in found:
            return found[call.index]
        path = paths.get(call.index)
        if path in inside:
            result = {runtime}
        else:
            kids = set().union(*[engines(c) for c in children.get(call.index, ())
                                 if c.kind == "stage"])
            result = kids | ({runtime} if path in part_roots else set()) or {_TORCH}
        found[call.index] = result
        return result

    everything = {_TORCH, runtime} if part_roots else {_TORCH}
    labels = []
    for call in calls:
        if call.kind == "probe":
            labels.append("")
            continue
        if call.kind == OTHER:
            parent = next((c for c in calls if c.index == call.parent), None)
            chosen = engines(parent) if parent is not None else everything
        else:
            chosen = engines(call)
        labels.append("+".join(sorted(chosen, key=lambda e: e != _TORCH)))
    return labels


def profile_parts(model: torch.nn.Module, inputs: tuple, reference: ProfileResult,
                  entry: CachedExport, deployment: dict[str, Any], *, runtime: str,
                  dtype: str, warmup: int, repeats: Union[int, AutoRepeats],
                  attach: Optional[Mapping[str, str]], calibration: Optional[Sequence[Any]],
                  workdir: Path, device_type: str,
                  progress: Optional[Callable[[str, int, int], None]] = None):
    """Profile ``model`` with its exported parts (``entry.parts``) in ``runtime`` and the
    rest in PyTorch; a :class:`~.profile.RuntimeProfile` as for a whole model."""
    captured = capture_module_calls(model, inputs, attach)
    parts = [Part(path, exported, captured[path]) for path, exported in entry.parts.items()
             if path in captured]
    in_torch = dict(entry.in_torch)
    running, backends, maps, files, quantised = [], [], [], [], []
    for part in parts:
        try:
            backend, run_path, values = _part_backend(model, part, runtime, dtype, calibration,
                                              workdir, device_type)
        except Exception as error:  # noqa: BLE001  (a part the runtime cannot run: PyTorch)
            in_torch[part.path] = runtime_failure(runtime, error)
            continue
        running.append(part)
        quantised.append(values)
        backends.append(backend)
        maps.append(runtime_stage_map(part.exported, run_path, backend))
        files.extend(dict.fromkeys([part.exported.path, run_path]))
    parts = running
    if not parts:
        raise ProfilingError(_nothing_runs(model, runtime, in_torch))
    timer = "cuda_time" if device_type == "cuda" else "cpu_time"
    metric = f"{timer}_ms"

    def after_forward(phase: str, done: int, total: int) -> None:
        """Called after each forward, outside its timed span: the counters are read here."""
        for backend in backends:
            backend.record()
        if progress:
            progress(phase, done, total)

    with runtime_parts(model, parts, [backend.run for backend in backends]):
        hybrid = profile_model(model, inputs, collectors=[timer], warmup=warmup,
                               repeats=repeats, attach=attach, progress=after_forward)
    count = len(hybrid.timed)
    inner_runs = []  # per part: per timed forward, full stage path -> ms
    inside: set[str] = set()
    part_paths: list[dict[str, str]] = []  # per part: full stage path -> path in the part
    mapped_ms = node_ms = 0.0
    sessions = []  # per part: its backend, stage map and node times per forward
    for part, backend, stage_map in zip(parts, backends, maps):
        prefixes = part.prefixes[-count:]
        before = part.captured.calls_before
        runs = []
        node_runs = backend.node_times(0)[-count:]
        sessions.append((backend, stage_map, node_runs))
        for prefix, node_times in zip(prefixes, node_runs):
            times, unmapped = stage_map.stage_times(node_times)
            runs.append({part_path(prefix, p, before): ms for p, ms in times.items()})
            top = sum(ms for p, ms in times.items() if "/" not in p)
            if prefix:  # a node outside the part's own stages is in the stage around it
                top, unmapped = top + unmapped, 0.0
            mapped_ms, node_ms = mapped_ms + top, node_ms + top + unmapped
        inner_runs.append(runs)
        prefix = prefixes[-1] if prefixes else ""
        own = {part_path(prefix, p, before): p for tag in set(
            part.exported.node_stages.values()) for p in enclosing_paths(tag)}
        part_paths.append(own)
        inside.update(own)
    calls = list(reference.calls)
    paths = call_paths(calls)
    if dtype == "int8":  # the payload inside each part, as its quantiser left it
        for part, own, values in zip(parts, part_paths, quantised):
            graph = load_graph(part.exported.path)
            quantise_call_payloads(calls, {c.index: own[paths[c.index]] for c in calls
                                           if paths.get(c.index) in own},
                                   part.exported.node_stages, graph,
                                   graph.carried_quantised(values))
    timed = []
    for index, (forward, total) in enumerate(zip(hybrid.timed, hybrid.forward_ms)):
        stages = [c for c in forward if c.kind == "stage"]
        measured = {path: c.metrics.get(metric, 0.0)
                    for c, path in zip(stages, call_paths(stages).values())}
        for runs in inner_runs:
            measured.update({p: ms for p, ms in runs[index].items() if p not in measured})
        timed.append(forward_calls(calls, paths, measured, metric, total))
    counter = reference.collectors.get("op_counts")
    rows = with_other_calls(calls, counter.total.as_dict() if counter else {})
    stages = aggregate_stages(rows, timed)
    part_roots = {p.prefixes[-1] for p in parts if p.prefixes}
    stages["engine"] = _engines(rows, call_paths(rows), inside, part_roots, runtime)
    deployment.update(backends[0].describe() if backends else {"runtime": runtime})
    record_nodes(deployment, sessions)
    deployment["parts"] = {part.path: str(part.exported.path) for part in parts}
    deployment["in_torch"] = in_torch
    deployment["mapped_share"] = round(mapped_ms / node_ms, 4) if node_ms else None
    outputs = tensor_feeds(hybrid.output)
    record_output_difference(deployment, dtype, reference.output, outputs)
    result = ProfileResult(calls=calls, events=reference.events, timed=timed,
                           forward_ms=list(hybrid.forward_ms), stages=stages,
                           output=reference.output, collectors=reference.collectors,
                           notes=list(reference.notes), noise=hybrid.noise)
    return RuntimeProfile(result, deployment, None, outputs, None, files=files)
