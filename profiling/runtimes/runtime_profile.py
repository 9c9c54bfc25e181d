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

__all__ = ["RuntimeProfile", "call_paths", "output_difference", "record_output_difference",
           "runtime_stage_map", "timed_runs"]


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


def record_output_difference(deployment: dict[str, Any], dtype: str, reference: Any,
                             outputs: Sequence[np.ndarray]) -> None:
    """Put :func:`output_difference` in ``deployment``: as ``int8_output`` for an int8 run,
    as ``output_difference`` for a float32 one (there it checks the export: anything above
    float32 round-off means the runtime computes something else than PyTorch)."""
    key = "int8_output" if dtype == "int8" else "output_difference"
    deployment[key] = output_difference(reference, outputs)


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
    stage_map.neighbours = backend.neighbours()
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
