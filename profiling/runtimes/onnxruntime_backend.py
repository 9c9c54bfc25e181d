"""ONNX Runtime: a session with its profiler on, and per-node times read from its trace.

The profiler writes a Chrome-trace JSON: one ``model_run`` event per ``run()`` and one
``<node>_kernel_time`` event per node executed, in microseconds. Node names are those of the
optimised graph, which the session saves (``optimized_model_filepath``) so that a node whose
name leads nowhere is placed by the values it produces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ..errors import ProfilingError
from .graph import load_graph
from .main_operator import MAIN_ONNX_OPS
from .registry import Executor, register_executor

if TYPE_CHECKING:  # numpy only for the annotations: discovering the executors stays light
    import numpy as np

__all__ = ["OnnxRuntimeExecutor", "OnnxRuntimeBackend", "cuda_provider_available",
           "default_provider"]

_KERNEL = "_kernel_time"
_CUDA = "CUDAExecutionProvider"
#: ONNX Runtime's log severity that prints only fatal errors (0 verbose ... 4 fatal).
_FATAL = 4


@register_executor
class OnnxRuntimeExecutor(Executor):
    """ONNX Runtime on its CPU or CUDA execution provider; int8 by its QDQ quantiser."""

    name = "onnxruntime"
    packages = ("onnx", "onnxscript", "onnxruntime")
    devices = ("cpu", "cuda")
    dtypes = ("float32", "int8")
    quantiser = "ONNX Runtime's quantiser"

    def check_device(self, device_type: str) -> None:
        """Refuse ``cuda`` where this ONNX Runtime lacks CUDA's provider
        (:func:`default_provider`)."""
        super().check_device(device_type)
        default_provider(device_type)

    def open(self, model_file: Path, workdir: Path, device_type: str, *, profile: bool = True,
             dtype: str = "float32", quantised: Any = None,
             spinning: bool = True) -> "OnnxRuntimeBackend":
        """A session on ``device_type``'s provider; the file says the precision (float32, or
        the quantiser's QDQ operators for int8)."""
        return OnnxRuntimeBackend(model_file, workdir, provider=default_provider(device_type),
                                  profile=profile, spinning=spinning)

    def quantise(self, model_file: Path, input_names: Sequence[str], workdir: Path,
                 calibration: Sequence[Sequence[np.ndarray]]) -> tuple[Path, Any, set[str]]:
        """The QDQ model written next to the others in ``workdir``."""
        from .quantize import quantize_onnxruntime

        target = workdir / f"{model_file.stem}.int8.onnx"
        return target, None, quantize_onnxruntime(model_file, target, input_names, calibration)


class OnnxRuntimeBackend:
    """An ONNX Runtime session of one model on one execution provider.

    Args:
        path: the ``.onnx`` file.
        workdir: where the profiler trace and the optimised graph go.
        provider: ``CPUExecutionProvider``, ``CUDAExecutionProvider``, ...
        profile: turn the runtime's profiler on.
        spinning: let the intra-op threads spin between runs (ONNX Runtime's default, the
            lowest latency for one session alone); off where two sessions, or a session and
            PyTorch, take turns on the same cores, so that one's spinning threads do not slow
            the other.
        fused: let ONNX Runtime optimise the graph (fuse nodes, its default); off, each
            exported node runs as it is.
        name: the executor's name, as :meth:`describe` gives it.
    """

    def __init__(self, path: Path, workdir: Path, *, provider: str = "CPUExecutionProvider",
                 profile: bool = True, spinning: bool = True, fused: bool = True,
                 name: str = "onnxruntime") -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = _FATAL  # an error reaches the caller as the exception
        if not fused:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self.name = name
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if profile:
            options.enable_profiling = True
            options.profile_file_prefix = str(workdir / f"{path.stem}.ort_profile")
            options.optimized_model_filepath = str(workdir / f"{path.stem}.ort_optimized.onnx")
        self.provider = provider
        self.session = ort.InferenceSession(str(path), options, providers=[provider])
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.optimized_path = Path(options.optimized_model_filepath) if profile else None
        self.version = ort.__version__
        self.profile_file: Optional[Path] = None
        self._precisions: dict[str, str] = {}

    def run(self, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One inference; the outputs in the graph's order."""
        return self.session.run(None, dict(zip(self.input_names, feeds)))

    def record(self) -> None:
        """Nothing to read between runs: the profiler writes every run's node times."""

    def node_times(self, skip_runs: int) -> list[dict[str, float]]:
        """Ends profiling: per-node times (ms) of each ``run()`` after the first ``skip_runs``."""
        if self.profile_file is None:
            self.profile_file = Path(self.session.end_profiling())
        events = json.loads(self.profile_file.read_text())
        runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                      if e.get("name") == "model_run")
        per_run: list[dict[str, float]] = [{} for _ in runs]
        for event in events:
            name = event.get("name", "")
            if event.get("cat") != "Node" or not name.endswith(_KERNEL):
                continue
            index = next((i for i, (start, stop) in enumerate(runs)
                          if start <= event["ts"] <= stop), None)
            if index is not None:
                node = name[:-len(_KERNEL)]
                per_run[index][node] = per_run[index].get(node, 0.0) + event["dur"] / 1e3
                self._precisions[node] = _input_precision(event.get("args", {}))
        return per_run[skip_runs:]

    def rounding_bound_ms(self) -> float:
        """How far the node times of one run, added up, can be from the profiler's at most:
        its events are whole microseconds, half of one per node."""
        return len(self._precisions) * 0.5 / 1e3

    def node_precisions(self) -> dict[str, str]:
        """Each profiled node's name -> the element type of its first input (``float32``,
        ``int8`` for a quantised operator's ``uint8``/``int8``), read from the profile by
        :meth:`node_times`."""
        return dict(self._precisions)

    def main_nodes(self) -> set[str]:
        """The optimised graph's nodes that run a convolution or matrix product."""
        if self.optimized_path is None or not self.optimized_path.is_file():
            return set()
        return {node for node, op in load_graph(self.optimized_path).op_types.items()
                if op in MAIN_ONNX_OPS}

    def constituents(self) -> dict[str, list[str]]:
        """Nothing: the optimised graph does not say which nodes a fused one was made of
        (the main operator is found from the exported graph instead)."""
        return {}

    def aliases(self) -> dict[str, list[str]]:
        """Each optimised node's name -> the values it reads and writes (where a name that
        leads nowhere is placed from)."""
        if self.optimized_path is None or not self.optimized_path.is_file():
            return {}
        graph = load_graph(self.optimized_path)
        names: dict[str, list[str]] = {}
        for value, node in graph.producers.items():
            names.setdefault(node, []).append(value)
        for value, readers in graph.consumers.items():
            for node in readers:
                names.setdefault(node, []).append(value)
        return names

    def neighbours(self) -> dict[str, list[str]]:
        """Each optimised node's name -> the nodes that read its outputs, then the nodes that
        make its inputs (where a node named after nothing exported is placed from)."""
        if self.optimized_path is None or not self.optimized_path.is_file():
            return {}
        graph = load_graph(self.optimized_path)
        after: dict[str, list[str]] = {}
        before: dict[str, list[str]] = {}
        for value, node in graph.producers.items():
            for reader in graph.consumers.get(value, ()):
                after.setdefault(node, []).append(reader)
                before.setdefault(reader, []).append(node)
        return {node: after.get(node, []) + before.get(node, [])
                for node in {*after, *before}}

    def describe(self) -> dict[str, Any]:
        """The runtime, its version and execution provider (``meta.json``)."""
        return {"runtime": self.name, "version": self.version,
                "execution_provider": self.provider, "inference_precision": "float32"}


#: ONNX Runtime's element type names (the profile's ``input_type_shape``) -> the run folder's.
_TYPE_NAMES = {"float": "float32", "float16": "float16", "bfloat16": "bfloat16",
               "uint8": "int8", "int8": "int8", "int32": "int32", "int64": "int64",
               "double": "float64", "bool": "bool"}


def _input_precision(args: dict[str, Any]) -> str:
    """The element type of a profiled node's first input (``unknown`` when not recorded)."""
    for entry in args.get("input_type_shape") or ():
        for type_name in entry:
            return _TYPE_NAMES.get(type_name, type_name)
    return "unknown"


def cuda_provider_available() -> bool:
    """Whether this ONNX Runtime has the CUDA execution provider (``onnxruntime-gpu`` has it,
    ``onnxruntime`` does not)."""
    import onnxruntime as ort

    return _CUDA in ort.get_available_providers()


def default_provider(device_type: str) -> str:
    """The execution provider for a ``device`` type: CUDA's for ``cuda``, else the CPU's.

    Raises :class:`~profiling.ProfilingError` for ``cuda`` when this ONNX Runtime lacks the
    CUDA provider: asked for it anyway, ONNX Runtime warns and runs on the CPU, and its
    times would be reported as GPU times.
    """
    if device_type != "cuda":
        return "CPUExecutionProvider"
    if not cuda_provider_available():
        raise ProfilingError("ONNX Runtime on a CUDA device needs its CUDAExecutionProvider, "
                             "which the installed onnxruntime does not have; install "
                             "onnxruntime-gpu in place of onnxruntime, or run on the CPU")
    return _CUDA
