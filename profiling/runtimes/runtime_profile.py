"""What a runtime run gives back, and the steps the whole-model and the parts paths share:
mapping a runtime's node names to stage paths, comparing outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd
import torch
from torch.utils._pytree import tree_flatten

from ..runner.passes import ProfileResult
from ..stages.markers import StageCall
from ..statistics.coverage import OTHER, with_other_calls
from .export import ExportedModel
from .graph import OnnxGraph, load_graph
from .stage_map import StageMap, enclosing_paths

__all__ = ["RuntimeProfile", "call_paths", "output_difference", "record_output_difference",
           "runtime_stage_map", "forward_calls", "precision_shares",
           "record_nodes", "judged_difference", "OUTPUT_SCALE_FLOOR", "node_breakdown"]

#: Below this many ms an ``other`` value is floating-point round-off of a difference.
_ROUND_OFF_MS = 1e-9


@dataclass
class RuntimeProfile:
    """A :class:`~profiling.runner.ProfileResult` measured in a runtime, and how it ran.

    Attributes:
        result: the stage table (``engine`` column: the runtime), payload, counts and times.
        deployment: runtime, version, execution provider, dtype, exported file, the share of
            the runtime's node time mapped to stages, and for int8 the output difference.
        exported: the exported model and its node-to-stage map (``None`` when the model ran
            in parts: see ``deployment["parts"]``).
        outputs: the runtime's outputs of the last timed inference, flattened.
        run_file: the file the runtime ran (the quantised one for ONNX Runtime in int8).
        files: every exported or quantised file the run used.
        quantised_model: NNCF's int8 ``openvino.Model`` (OpenVINO in int8; else ``None``).
        backend: the profiled runtime session (its raw profile: ONNX Runtime's
            ``profile_file``, OpenVINO's ``raw_means()``); ``None`` for a model in parts.
        stage_map: what placed its nodes in stages (``None`` for a model in parts).
    """

    result: ProfileResult
    deployment: dict[str, Any]
    exported: Optional[ExportedModel]
    outputs: list[np.ndarray] = field(default_factory=list)
    run_file: Optional[Path] = None
    files: list[Path] = field(default_factory=list)
    quantised_model: Any = None
    backend: Any = None
    stage_map: Optional[StageMap] = None


def forward_calls(calls: Sequence[StageCall], paths: Mapping[int, str],
                  times: Mapping[str, float], metric: str, total: float) -> list[StageCall]:
    """One forward's stage calls, each with its time ``times[path]`` (0 when absent) under
    ``metric``, and the ``other`` rows that make each level add up to ``total``; an
    ``other`` that is round-off of the difference (within :data:`_ROUND_OFF_MS` of 0) is
    written as 0."""
    copies = []
    for call in calls:
        if call.kind == "stage":
            copy = StageCall(call.name, call.kind, call.index, call.parent, call.depth,
                             call.call_index)
            copy.metrics[metric] = times.get(paths[call.index], 0.0)
            copies.append(copy)
    rows = with_other_calls(copies, {metric: total})
    for row in rows:
        if row.kind == OTHER and abs(row.metrics.get(metric, 1.0)) < _ROUND_OFF_MS:
            row.metrics[metric] = 0.0
    return rows


def precision_shares(per_run: Sequence[Mapping[str, float]], precisions: Mapping[str, str]
                     ) -> dict[str, float]:
    """The share of the runtime's node time executed in each precision (``per_run``: node
    times of each forward; ``precisions``: node -> precision, ``unknown`` where unsaid)."""
    totals: dict[str, float] = {}
    for times in per_run:
        for node, ms in times.items():
            kind = precisions.get(node, "unknown")
            totals[kind] = totals.get(kind, 0.0) + ms
    whole = sum(totals.values())
    return {kind: round(ms / whole, 4) for kind, ms in sorted(totals.items(),
                                                             key=lambda kv: -kv[1])} \
        if whole else {}


def other_parts(forward_ms: Sequence[float], spans: Optional[Sequence[float]],
                per_run: Sequence[tuple[Mapping[str, float], float]],
                node_runs: Sequence[Mapping[str, float]]) -> Optional[dict[str, float]]:
    """The ``other`` row of a runtime run taken apart, each part the median over the timed
    forwards (ms): ``unmapped_nodes``, node time that maps to no stage; ``between_nodes``, the
    runtime's run call less all its nodes' times (its executor's own work, the profiler's
    recording included); ``outside_run``, the forward's wall time less the run call (the
    binding: inputs in, outputs out). ``spans``: the run calls' lengths by the runtime's clock
    (``None`` where it does not say: then so does this); ``per_run``: each forward's stage
    times and unmapped node time; ``node_runs``: each forward's node times."""
    if not spans or len(spans) != len(forward_ms):
        return None
    parts = {"unmapped_nodes": [unmapped for _, unmapped in per_run],
             "between_nodes": [span - sum(nodes.values())
                               for span, nodes in zip(spans, node_runs)],
             "outside_run": [forward - span for forward, span in zip(forward_ms, spans)]}
    return {name: round(float(np.median(values)), 4) for name, values in parts.items()}


def record_nodes(deployment: dict[str, Any],
                 sessions: Sequence[tuple[Any, StageMap, Sequence[Mapping[str, float]]]]
                 ) -> None:
    """Put in ``deployment`` the precision each runtime node executed in
    (``node_precisions``), the share of node time in each (``executed_precision``) and the
    runtime nodes that span a stage boundary (``nodes_across_stages``: each counts to its
    main operator's stage) and how far one forward's node times, added up, can be off by the
    runtime's rounding (``node_time_rounding_ms``), from each session: a backend, its stage
    map and its node times per forward."""
    precisions: dict[str, str] = {}
    node_runs: list[Mapping[str, float]] = []
    across: list[str] = []
    for backend, stage_map, runs in sessions:
        precisions.update(backend.node_precisions())
        node_runs.extend(runs)
        across += stage_map.across_stages(sorted({node for times in runs for node in times}))
    deployment["node_precisions"] = precisions
    deployment["executed_precision"] = precision_shares(node_runs, precisions)
    deployment["nodes_across_stages"] = len(across)
    deployment["node_time_rounding_ms"] = round(sum(backend.rounding_bound_ms()
                                                    for backend, _, _ in sessions), 4)


def node_breakdown(calls: Sequence[StageCall], stage_map: StageMap,
                   node_runs: Sequence[Mapping[str, float]],
                   precisions: Mapping[str, str]) -> pd.DataFrame:
    """Each stage call's runtime nodes, one row per call and node (``stage``,
    ``call_index``, ``operator``: the node's name, with the precision it executed in where
    the runtime says, ``time_ms``: its median over ``node_runs``, 0 in a forward it did not
    run in), inclusive of the stages nested inside, as the call's time is."""
    where = {path: (call.name, call.call_index) for call, path in
             zip(calls, (call_paths(calls)[call.index] for call in calls))}
    nodes = sorted({node for times in node_runs for node in times})
    rows = []
    for node in nodes:
        path = stage_map.stage_of(node)
        if not path:
            continue
        median = float(np.median([times.get(node, 0.0) for times in node_runs]))
        shown = f"{node} ({precisions[node]})" if precisions.get(node) else node
        rows += [{"stage": where[enclosing][0], "call_index": where[enclosing][1],
                  "operator": shown, "time_ms": median}
                 for enclosing in enclosing_paths(path) if enclosing in where]
    return pd.DataFrame(rows, columns=["stage", "call_index", "operator", "time_ms"])


def call_paths(calls: Sequence[StageCall]) -> dict[int, str]:
    paths: dict[int, str] = {}
    for call in calls:
        own = f"{call.name}#{call.call_index}"
        paths[call.index] = own if call.parent is None else f"{paths[call.parent]}/{own}"
    return paths


def output_difference(reference: Any, outputs: Sequence[np.ndarray]) -> dict[str, float]:
    """How far the runtime's ``outputs`` (in flattened order) are from ``reference`` (the
    PyTorch float32 output), over its floating tensors: the max and mean absolute difference,
    the largest absolute value of the reference, and the max difference relative to it (an
    absolute difference means nothing without the outputs' scale: a network whose random
    weights make outputs of 1e-10 differs by 1e-11 whatever the runtime does). Integer outputs
    (labels, indices) and tensors whose shapes differ are left out."""
    pairs = []
    for expected, got in zip((leaf for leaf in tree_flatten(reference)[0]
                              if isinstance(leaf, torch.Tensor)), outputs):
        if expected.is_floating_point() and tuple(expected.shape) == np.shape(got) and \
                expected.numel():
            pairs.append((expected.detach().float().cpu().numpy(),
                          np.asarray(got, dtype=np.float32)))
    if not pairs:
        return {}
    differences = np.concatenate([np.abs(e - o).ravel() for e, o in pairs])
    scale = float(max(np.abs(e).max() for e, _ in pairs))
    figures = {"max_abs_difference": float(differences.max()),
               "mean_abs_difference": float(differences.mean()),
               "reference_max_abs": scale}
    if scale > 0:
        figures["relative_max_difference"] = float(differences.max()) / scale
    return figures


#: The smallest output scale a difference is judged against: a network whose outputs are all
#: near zero (random weights) differs from PyTorch by 1e-16, which is no disagreement.
OUTPUT_SCALE_FLOOR = 1e-3


def judged_difference(figures: Mapping[str, float]) -> float:
    """The max absolute difference of :func:`output_difference` over the output's scale,
    that scale never below :data:`OUTPUT_SCALE_FLOOR`."""
    return figures["max_abs_difference"] / max(figures.get("reference_max_abs", 0.0),
                                               OUTPUT_SCALE_FLOOR)


def record_output_difference(deployment: dict[str, Any], dtype: str, reference: Any,
                             outputs: Sequence[np.ndarray]) -> None:
    """Put :func:`output_difference` in ``deployment``: as ``int8_output`` for an int8 run,
    as ``output_difference`` for a float32 one (there it checks the export: anything above
    float32 round-off means the runtime computes something else than PyTorch)."""
    key = "int8_output" if dtype == "int8" else "output_difference"
    deployment[key] = output_difference(reference, outputs)


def runtime_stage_map(exported: ExportedModel, run_path: Path, backend: Any,
                      graph: Optional[OnnxGraph] = None) -> StageMap:
    """The :class:`StageMap` of the nodes ``backend`` runs from ``run_path`` (the exported
    file, or the quantiser's, whose nodes are placed by the values they make)."""
    graph = graph or load_graph(exported.path)
    readers = {name: graph.consumers[name][0] for name in exported.input_names
               if graph.consumers.get(name)}
    node_stages = exported.node_stages
    if run_path != exported.path:
        node_stages = StageMap(node_stages, graph.producers, input_readers=readers,
                               structure=graph).derive(load_graph(run_path).producers)
        graph = load_graph(run_path)
    return StageMap(node_stages, graph.producers, aliases=backend.aliases(),
                    input_readers=readers, neighbours=backend.neighbours(), structure=graph,
                    main_nodes=backend.main_nodes(), constituents=backend.constituents())
