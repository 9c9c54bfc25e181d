"""ONNX Runtime: a session with its profiler on, and per-node times read from its trace.

The profiler writes a Chrome-trace JSON: one ``model_run`` event per ``run()`` and one
``<node>_kernel_time`` event per node executed, in microseconds. Node names are those of the
optimised graph, which the session saves (``optimized_model_filepath``) so that a node whose
name leads nowhere is placed by the values it produces.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional, Sequence

from ..errors import ProfilingError
from .graph import load_graph
from .main_operator import MAIN_ONNX_OPS
from .registry import Executor, register_executor

if TYPE_CHECKING:  # numpy only for the annotations: discovering the executors stays light
    import numpy as np

__all__ = ["OnnxRuntimeExecutor", "OnnxRuntimeBackend", "cuda_provider_available",
           "default_provider", "quantize_onnxruntime", "MAIN_ORT_OPS"]

_KERNEL = "_kernel_time"
_CUDA = "CUDAExecutionProvider"
#: The operators of ONNX Runtime's optimised graph that run a convolution or matrix product:
#: ONNX's own and the fused and quantised ones of its contrib domain.
MAIN_ORT_OPS = MAIN_ONNX_OPS | {"FusedConv", "FusedMatMul", "FusedGemm", "NhwcConv", "QGemm",
                                "MatMulIntegerToFloat", "DynamicQuantizeMatMul"}
#: ONNX Runtime's log severities (0 verbose ... 4 fatal): fatal errors only, and its default.
_FATAL, _WARNING = 4, 2


@register_executor
class OnnxRuntimeExecutor(Executor):
    """ONNX Runtime on its CPU or CUDA execution provider; int8 by its QDQ quantiser."""

    name = "onnxruntime"
    packages = ("onnx", "onnxscript", "onnxruntime")
    devices = ("cpu", "cuda")
    dtypes = ("float32", "int8")
    quantiser = "ONNX Runtime's quantiser"
    #: Its idle intra-op threads spin after a run by default, into the forward of the session
    #: (or PyTorch model) that runs next on the same cores.
    interleaved_settings = {"session.intra_op.allow_spinning": "0"}
    #: Its layout and fusion passes (``relu_nchwc``, ``reorder_token_3``), its quantiser's QDQ
    #: values (``x_QuantizeLinear_Output``, ``head.bias_quantized``), its profile's events.
    node_name_suffixes = ("_nchwc", r"_token_\d+", "_QuantizeLinear(_Output)?",
                          "_DequantizeLinear(_Output)?", "_quantized", "_fused", "_kernel_time")

    @classmethod
    @contextlib.contextmanager
    def quiet_native_log(cls) -> Iterator[None]:
        """ONNX Runtime's default logger (its C++ code writes to the terminal itself) at fatal
        errors only, back at warnings afterwards; nothing where it is not loaded yet."""
        onnxruntime = sys.modules.get("onnxruntime")
        if onnxruntime is None:
            yield
            return
        onnxruntime.set_default_logger_severity(_FATAL)
        try:
            yield
        finally:
            onnxruntime.set_default_logger_severity(_WARNING)

    def check_device(self, device_type: str) -> None:
        """Refuse ``cuda`` where this ONNX Runtime lacks CUDA's provider
        (:func:`default_provider`)."""
        super().check_device(device_type)
        default_provider(device_type)

    def open(self, model_file: Path, workdir: Path, device_type: str, *, profile: bool = True,
             dtype: str = "float32", quantised: Any = None,
             interleaved: bool = False) -> "OnnxRuntimeBackend":
        """A session on ``device_type``'s provider; the file says the precision (float32, or
        the quantiser's QDQ operators for int8)."""
        return OnnxRuntimeBackend(model_file, workdir, provider=default_provider(device_type),
                                  profile=profile, settings=self.session_settings(interleaved))

    def quantise(self, model_file: Path, input_names: Sequence[str], workdir: Path,
                 calibration: Sequence[Sequence[np.ndarray]]) -> tuple[Path, Any, set[str]]:
        """The QDQ model written next to the others in ``workdir``."""
        target = workdir / f"{model_file.stem}.int8.onnx"
        return target, None, quantize_onnxruntime(model_file, target, input_names, calibration)


class _Feeds:
    """ONNX Runtime's ``CalibrationDataReader`` protocol over a list of feeds."""

    def __init__(self, names: Sequence[str], feeds: Sequence[Sequence[np.ndarray]]) -> None:
        self._items = iter([dict(zip(names, feed)) for feed in feeds])

    def get_next(self) -> Any:
        return next(self._items, None)


def quantize_onnxruntime(source: Path, target: Path, input_names: Sequence[str],
                         calibration: Sequence[Sequence[np.ndarray]]) -> set[str]:
    """Quantise ``source`` into ``target`` by static post-training quantisation (QDQ: int8
    weights per channel, uint8 activations, calibrated on the feeds of ``calibration``) and
    return the names of the values it quantises (those a ``QuantizeLinear`` reads): a stage
    boundary crosses in int8 only where its value is quantised."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    quantize_static(str(source), str(target), _Feeds(input_names, calibration),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    model = onnx.load(str(target), load_external_data=False)
    return {node.input[0] for node in model.graph.node if node.op_type == "QuantizeLinear"}


class OnnxRuntimeBackend:
    """An ONNX Runtime session of one model on one execution provider.

    Args:
        path: the ``.onnx`` file.
        workdir: where the profiler trace and the optimised graph go.
        provider: ``CPUExecutionProvider``, ``CUDAExecutionProvider``, ...
        profile: turn the runtime's profiler on.
        settings: session configuration entries over ONNX Runtime's defaults (the
            executor's ``interleaved_settings`` for sessions that take turns).
        fused: let ONNX Runtime optimise the graph (fuse nodes, its default); off, each
            exported node runs as it is.
        name: the executor's name, as :meth:`describe` gives it.
    """

    def __init__(self, path: Path, workdir: Path, *, provider: str = "CPUExecutionProvider",
                 profile: bool = True, settings: Optional[Mapping[str, str]] = None,
                 fused: bool = True,
                 name: str = "onnxruntime") -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = _FATAL  # an error reaches the caller as the exception
        if not fused:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self.name = name
        for key, value in (settings or {}).items():
            options.add_session_config_entry(key, value)
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
        self._trace: Optional[tuple[list[dict[str, Any]], list[tuple[float, float]]]] = None
        self._precisions: dict[str, str] = {}

    def run(self, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One inference; the outputs in the graph's order."""
        return self.session.run(None, dict(zip(self.input_names, feeds)))

    def record(self) -> None:
        """Nothing to read between runs: the profiler writes every run's node times."""

    def _profile(self) -> tuple[list[dict[str, Any]], list[tuple[float, float]]]:
        """Ends profiling and reads its file, both once (a trace of many runs weighs
        megabytes): the trace's events, and each ``run()``'s span (start and end, µs) as its
        ``model_run`` event gives it."""
        if self._trace is None:
            self.profile_file = Path(self.session.end_profiling())
            events = json.loads(self.profile_file.read_text())
            self._trace = (events, sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                                          if e.get("name") == "model_run"))
        return self._trace

    def run_spans(self, skip_runs: int) -> list[float]:
        """Ends profiling: how long (ms) ONNX Runtime spent inside each ``run()`` after the
        first ``skip_runs``, by its own clock (``model_run``)."""
        return [(stop - start) / 1e3 for start, stop in self._profile()[1][skip_runs:]]

    def node_times(self, skip_runs: int) -> list[dict[str, float]]:
        """Ends profiling: per-node times (ms) of each ``run()`` after the first ``skip_runs``."""
        events, runs = self._profile()
        per_run: list[dict[str, float]] = [{} for _ in runs]
        for event in events:
            name = event.get("name", "")
            if event.get("cat") != "Node" or not name.endswith(_KERNEL):
                continue
            index = next((i for i, (start, stop) in enumerate(runs)
                          if start <= event["ts"] <= stop), None)
            if index is not None:
                node = name[:-len(_KERNEL)]
                per_run[index][node] = per_run[index].get(node, 0.0) + event["dur"] / 1e3  # µs
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
                if op in MAIN_ORT_OPS}

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
