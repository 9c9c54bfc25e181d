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

from dataclasses import dataclass, field
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
from .stage_map import StageMap, enclosing_paths, part_path

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


@dataclass
class _RunningPart:
    """A part open in the runtime: its profiled session, the file it runs, the map of the
    session's nodes to the part's stages, and the values its quantiser quantised (int8)."""

    part: Part
    backend: Any
    run_path: Path
    stage_map: StageMap
    quantised: set[str]


def _open_parts(model: torch.nn.Module, parts: Sequence[Part], runtime: str, dtype: str,
                calibration: Optional[Sequence[Any]], workdir: Path, device_type: str,
                in_torch: dict[str, str]) -> list[_RunningPart]:
    """The parts the runtime opens; each it cannot run stays in PyTorch, with its reason in
    ``in_torch``."""
    running = []
    for part in parts:
        try:
            backend, run_path, values = _part_backend(model, part, runtime, dtype, calibration,
                                                      workdir, device_type)
        except Exception as error:  # noqa: BLE001  (a part the runtime cannot run: PyTorch)
            in_torch[part.path] = runtime_failure(runtime, error)
            continue
        running.append(_RunningPart(part, backend, run_path,
                                    runtime_stage_map(part.exported, run_path, backend), values))
    return running


@dataclass
class _InnerTimes:
    """The runtime's side of the timed forwards: per part, each forward's stage times by full
    stage path (``runs``) and its stage paths -> the paths inside the part (``own``); every
    stage path inside a part (``inside``); the node time that maps to stages and all of it
    (ms, for ``mapped_share``); and per part its session, stage map and node times."""

    runs: list[list[dict[str, float]]] = field(default_factory=list)
    own: list[dict[str, str]] = field(default_factory=list)
    inside: set[str] = field(default_factory=set)
    mapped_ms: float = 0.0
    node_ms: float = 0.0
    sessions: list[tuple[Any, StageMap, list[dict[str, float]]]] = field(default_factory=list)


def _inner_times(running: Sequence[_RunningPart], count: int) -> _InnerTimes:
    """The stage times of the last ``count`` calls of each part, placed under the stage path
    open where the part was called, from its session's node times."""
    inner = _InnerTimes()
    for opened in running:
        part, before = opened.part, opened.part.captured.calls_before
        prefixes = part.prefixes[-count:]
        node_runs = opened.backend.node_times(0)[-count:]
        inner.sessions.append((opened.backend, opened.stage_map, node_runs))
        runs = []
        for prefix, node_times in zip(prefixes, node_runs):
            times, unmapped = opened.stage_map.stage_times(node_times)
            runs.append({part_path(prefix, p, before): ms for p, ms in times.items()})
            top = sum(ms for p, ms in times.items() if "/" not in p)
            if prefix:  # a node outside the part's own stages is in the stage around it
                top, unmapped = top + unmapped, 0.0
            inner.mapped_ms, inner.node_ms = inner.mapped_ms + top, inner.node_ms + top + unmapped
        inner.runs.append(runs)
        prefix = prefixes[-1] if prefixes else ""
        own = {part_path(prefix, p, before): p for tag in set(
            part.exported.node_stages.values()) for p in enclosing_paths(tag)}
        inner.own.append(own)
        inner.inside.update(own)
    return inner


def _quantised_part_payloads(calls: Sequence[StageCall], paths: Mapping[int, str],
                             running: Sequence[_RunningPart], inner: _InnerTimes) -> None:
    """int8: the payload of each stage call inside a part, as its quantiser left it."""
    for opened, own in zip(running, inner.own):
        exported = opened.part.exported
        graph = load_graph(exported.path)
        quantise_call_payloads(calls, {c.index: own[paths[c.index]] for c in calls
                                       if paths.get(c.index) in own},
                               exported.node_stages, graph,
                               graph.carried_quantised(opened.quantised))


def _timed_calls(hybrid: ProfileResult, calls: Sequence[StageCall], paths: Mapping[int, str],
                 inner: _InnerTimes, metric: str) -> list[list[StageCall]]:
    """Each timed forward's stage calls: PyTorch's wall time for a stage it entered, else the
    runtime's node times of the part it is in."""
    timed = []
    for index, (forward, total) in enumerate(zip(hybrid.timed, hybrid.forward_ms)):
        stages = [c for c in forward if c.kind == "stage"]
        measured = {path: c.metrics.get(metric, 0.0)
                    for c, path in zip(stages, call_paths(stages).values())}
        for runs in inner.runs:
            measured.update({p: ms for p, ms in runs[index].items() if p not in measured})
        timed.append(forward_calls(calls, paths, measured, metric, total))
    return timed


def profile_parts(model: torch.nn.Module, inputs: tuple, reference: ProfileResult,
                  entry: CachedExport, deployment: dict[str, Any], *, runtime: str,
                  dtype: str, warmup: int, repeats: Union[int, AutoRepeats],
                  attach: Optional[Mapping[str, str]], calibration: Optional[Sequence[Any]],
                  workdir: Path, device_type: str,
                  progress: Optional[Callable[[str, int, int], None]] = None):
    """Profile ``model`` with its exported parts (``entry.parts``) in ``runtime`` and the
    rest in PyTorch; a :class:`~.profile.RuntimeProfile` as for a whole model."""
    captured = capture_module_calls(model, inputs, attach)
    in_torch = dict(entry.in_torch)
    running = _open_parts(model, [Part(path, exported, captured[path]) for path, exported
                                  in entry.parts.items() if path in captured],
                          runtime, dtype, calibration, workdir, device_type, in_torch)
    if not running:
        raise ProfilingError(_nothing_runs(model, runtime, in_torch))
    timer = "cuda_time" if device_type == "cuda" else "cpu_time"

    def after_forward(phase: str, done: int, total: int) -> None:
        """Called after each forward, outside its timed span: the counters are read here."""
        for opened in running:
            opened.backend.record()
        if progress:
            progress(phase, done, total)

    with runtime_parts(model, [r.part for r in running], [r.backend.run for r in running]):
        hybrid = profile_model(model, inputs, collectors=[timer], warmup=warmup,
                               repeats=repeats, attach=attach, progress=after_forward)
    inner = _inner_times(running, len(hybrid.timed))
    calls = list(reference.calls)
    paths = call_paths(calls)
    if dtype == "int8":
        _quantised_part_payloads(calls, paths, running, inner)
    timed = _timed_calls(hybrid, calls, paths, inner, f"{timer}_ms")
    counter = reference.collectors.get("op_counts")
    rows = with_other_calls(calls, counter.total.as_dict() if counter else {})
    stages = aggregate_stages(rows, timed)
    part_roots = {r.part.prefixes[-1] for r in running if r.part.prefixes}
    stages["engine"] = _engines(rows, call_paths(rows), inner.inside, part_roots, runtime)
    deployment.update(running[0].backend.describe())
    record_nodes(deployment, inner.sessions)
    deployment["parts"] = {r.part.path: str(r.part.exported.path) for r in running}
    deployment["in_torch"] = in_torch
    deployment["mapped_share"] = round(inner.mapped_ms / inner.node_ms, 4) if inner.node_ms \
        else None
    outputs = tensor_feeds(hybrid.output)
    record_output_difference(deployment, dtype, reference.output, outputs)
    result = ProfileResult(calls=calls, events=reference.events, timed=timed,
                           forward_ms=list(hybrid.forward_ms), stages=stages,
                           output=reference.output, collectors=reference.collectors,
                           notes=list(reference.notes), noise=hybrid.noise)
    files = list(dict.fromkeys(f for r in running for f in (r.part.exported.path, r.run_path)))
    return RuntimeProfile(result, deployment, None, outputs, None, files=files)
