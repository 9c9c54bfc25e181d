"""What a runtime run gives back, and the steps the whole-model and the parts paths share:
timing repeated inferences, mapping a runtime's node names to stage paths, comparing outputs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np
import torch
from torch.utils._pytree import tree_flatten

from ..runner.passes import ProfileResult
from ..stages.markers import StageCall
from ..statistics.intervals import AutoRepeats
from .export import ExportedModel
from .graph import OnnxGraph, load_graph
from .stage_map import StageMap

__all__ = ["RuntimeProfile", "call_paths", "output_difference", "runtime_stage_map",
           "timed_runs"]


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
    """

    result: ProfileResult
    deployment: dict[str, Any]
    exported: Optional[ExportedModel]
    outputs: list[np.ndarray] = field(default_factory=list)
    run_file: Optional[Path] = None
    files: list[Path] = field(default_factory=list)
    quantised_model: Any = None


def call_paths(calls: Sequence[StageCall]) -> dict[int, str]:
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


def _more(done: int, warmup: int, repeats: Union[int, AutoRepeats], forward_ms: list[float],
          started: float) -> bool:
    if done < warmup:
        return True
    if isinstance(repeats, AutoRepeats):
        return not repeats.stop_reason(forward_ms, time.perf_counter() - started)
    return done < warmup + int(repeats)


def runtime_stage_map(exported: ExportedModel, run_path: Path, backend: Any,
                      graph: Optional[OnnxGraph] = None) -> StageMap:
    """The :class:`StageMap` of the nodes ``backend`` runs from ``run_path`` (the exported
    file, or the quantiser's, whose nodes are placed by the values they make)."""
    graph = graph or load_graph(exported.path)
    readers = {name: graph.consumers[name][0] for name in exported.input_names
               if graph.consumers.get(name)}
    stage_map = StageMap(exported.node_stages, graph.producers, input_readers=readers)
    if run_path != exported.path:
        run_graph = load_graph(run_path)
        stage_map = StageMap(stage_map.derive(run_graph.producers), run_graph.producers,
                             input_readers=readers)
    stage_map.aliases = backend.aliases()
    return stage_map


def timed_runs(run: Callable[[], Any], warmup: int, repeats: Union[int, AutoRepeats],
               progress: Optional[Callable[[str, int, int], None]] = None
               ) -> tuple[list[float], Any]:
    """Call ``run`` ``warmup`` times, then until ``repeats`` says stop: the timed calls' wall
    times in ms, and the last call's result."""
    forward_ms, outputs, done, started = [], None, 0, time.perf_counter()
    while _more(done, warmup, repeats, forward_ms, started):
        start = time.perf_counter_ns()
        outputs = run()
        stop = time.perf_counter_ns()
        if done >= warmup:
            forward_ms.append((stop - start) / 1e6)
        else:
            started = time.perf_counter()
        done += 1
        if progress:
            progress("repeats" if done > warmup else "warmup", done, done)
    return forward_ms, outputs
