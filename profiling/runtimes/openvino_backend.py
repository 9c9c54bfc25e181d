"""OpenVINO: a compiled model with performance counters, read after each inference.

``get_profiling_info()`` names the ONNX nodes; the reorders and other nodes the plugin adds are
placed through the runtime model's ``originalLayersNames``.

The CPU plugin's counters are no per-inference times: each node keeps the sum of its whole
microseconds since the model was compiled and reports the integer mean (``total // count``).
A stage time read from them falls at every repeat towards the mean of all inferences so far.
:meth:`OpenVinoBackend.node_times` turns consecutive readings back into the time of each
inference, ``k * mean_k - (k - 1) * mean_(k-1)`` for the ``k``-th inference since compiling,
within ``k`` microseconds per node (the integer division; the midpoint of that range is
taken). The counters are read by :meth:`OpenVinoBackend.record`, outside the timed forward.

The precision it executes is a setting (``INFERENCE_PRECISION_HINT``) whose default is
bfloat16 on CPUs with AVX-512 bf16 or AMX: ``float32`` asks for ``f32`` explicitly, and the
precision each node ran in (``runtimePrecision``) is read back.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from .registry import Executor, register_executor

if TYPE_CHECKING:  # numpy only for the annotations: discovering the executors stays light
    import numpy as np

__all__ = ["OpenVinoExecutor", "OpenVinoBackend", "PRECISION_HINTS", "per_inference_times",
           "quantize_nncf", "MAIN_OPENVINO_TYPES"]

#: The dtype a run names -> OpenVINO's ``INFERENCE_PRECISION_HINT``.
PRECISION_HINTS = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
#: The CPU plugin's layer types that run a convolution or a matrix product (the main operator
#: of a fused node, :mod:`.main_operator`).
MAIN_OPENVINO_TYPES = frozenset({"Convolution", "GroupConvolution", "Deconvolution",
                                 "FullyConnected", "MatMul", "Gemm"})
#: OpenVINO's element type names -> the names the run folder uses.
_PRECISION_NAMES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "i8": "int8",
                    "u8": "int8", "i32": "int32", "i64": "int64", "u1": "bool"}


def precision_name(openvino_name: str) -> str:
    """``bf16`` -> ``bfloat16`` (OpenVINO's element type as the run folder names it)."""
    return _PRECISION_NAMES.get(openvino_name, openvino_name)


def per_inference_times(readings: Sequence[tuple[int, dict[str, float]]]
                        ) -> list[dict[str, float]]:
    """Per-node times (ms) of each inference from cumulative readings ``(k, means)``: the
    node means in microseconds after the ``k``-th inference since compiling. The ``k``-th
    total lies in ``[k * mean, k * mean + k - 1]`` (the counters divide whole microseconds);
    the midpoint is taken, and a difference below zero (that rounding) is read as 0."""
    def total(count: int, mean: float) -> float:
        return count * mean + (count - 1) / 2 if mean > 0 else 0.0

    times, previous = [], (0, {})
    for count, means in readings:
        runs = max(count - previous[0], 1)
        before = previous[1]
        times.append({node: max(total(count, mean) - total(previous[0], before.get(node, 0.0)),
                                0.0) / runs / 1e3
                      for node, mean in means.items()})
        previous = (count, means)
    return times


@register_executor
class OpenVinoExecutor(Executor):
    """OpenVINO's CPU plugin, told the precision of its floating operators; int8 by NNCF."""

    name = "openvino"
    packages = ("onnx", "onnxscript", "openvino")
    int8_packages = ("nncf",)
    devices = ("cpu",)
    dtypes = ("float32", "bfloat16", "int8")
    quantiser = "NNCF"
    #: NNCF's fake-quantise outputs (``node_relu_1/fq_output_0``) and the plugin's reorders.
    node_name_suffixes = (r"_output_\d+", r"_\d+_reorder")

    def open(self, model_file: Path, workdir: Path, device_type: str, *, profile: bool = True,
             dtype: str = "float32", quantised: Any = None,
             interleaved: bool = False) -> "OpenVinoBackend":
        """A compiled model on the CPU plugin, its floating operators in ``dtype`` (int8
        keeps those it does not quantise in float32), never in OpenVINO's default."""
        return OpenVinoBackend(quantised if quantised is not None else model_file,
                               profile=profile, precision="float32" if dtype == "int8" else dtype)

    def quantise(self, model_file: Path, input_names: Sequence[str], workdir: Path,
                 calibration: Sequence[Sequence[np.ndarray]]) -> tuple[Path, Any, set[str]]:
        """NNCF's ``openvino.Model``, which :meth:`open` takes in place of the file."""
        model, quantised = quantize_nncf(model_file, calibration)
        return model_file, model, quantised


@functools.lru_cache(maxsize=None)
def openvino_core() -> Any:
    """The process's one ``openvino.Core``, kept for the process's life. Compiling a model
    points the calling thread's alternate signal stack at memory of the Core that compiled it;
    with a Core per session, freeing them left that stack pointing at freed memory, and the
    next signal the process handled (Ctrl-C, SIGTERM) was a segmentation fault instead of the
    tool's clean exit. One Core per process is also what OpenVINO recommends."""
    import openvino as ov

    return ov.Core()


def quantize_nncf(source: Path, calibration: Sequence[Sequence[np.ndarray]]
                  ) -> tuple[Any, set[str]]:
    """NNCF's int8 ``openvino.Model`` of ``source`` (static post-training quantisation
    calibrated on the feeds of ``calibration``), and the names of the values it quantises
    (the inputs of its ``FakeQuantize`` nodes, named as in the ONNX graph): a stage boundary
    crosses in int8 only where its value is quantised."""
    import nncf

    model = openvino_core().read_model(str(source))
    dataset = nncf.Dataset([dict(enumerate(feed)) for feed in calibration])
    # every calibration item given and no more (NNCF's default asks for 300)
    quantised_model = nncf.quantize(model, dataset, subset_size=len(calibration))
    quantised = set()
    for op in quantised_model.get_ordered_ops():
        if op.get_type_name() != "FakeQuantize":
            continue
        value = op.input_value(0)
        if value.get_node().get_type_name() != "Constant":  # a weight crosses no stage
            quantised.update(value.get_names())
    return quantised_model, quantised


class OpenVinoBackend:
    """An OpenVINO compiled model (from an ONNX file or an ``ov.Model``) on one device.

    Args:
        model: the ``.onnx`` file, or an ``openvino.Model`` (NNCF's int8 model).
        device: OpenVINO's device name (``CPU``).
        profile: turn the performance counters on.
        precision: the precision of the floating operators (``float32``, ``bfloat16``,
            ``float16``); ``None`` leaves OpenVINO's default (bfloat16 on CPUs with AVX-512
            bf16 or AMX), which :meth:`describe` then names.
    """

    name = "openvino"

    def __init__(self, model: Union[Path, Any], *, device: str = "CPU", profile: bool = True,
                 precision: Optional[str] = "float32") -> None:
        import openvino as ov

        core = openvino_core()
        network = core.read_model(str(model)) if isinstance(model, Path) else model
        config = {"PERF_COUNT": "YES" if profile else "NO"}
        if precision is not None:
            config["INFERENCE_PRECISION_HINT"] = PRECISION_HINTS[precision]
        self.compiled = core.compile_model(network, device, config)
        self.request = self.compiled.create_infer_request()
        self.device = device
        self.version = ov.get_version()
        self.profile = profile
        self._inferences = 0
        self._readings: list[tuple[int, dict[str, float]]] = []
        self._latencies: list[float] = []

    def run(self, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One inference; the outputs in the graph's order."""
        self.request.infer(dict(enumerate(feeds)))
        self._inferences += 1
        # copied: the request's output memory is overwritten by its next inference
        return [self.request.get_output_tensor(i).data.copy()
                for i in range(len(self.compiled.outputs))]

    def record(self) -> None:
        """Read the performance counters after an inference (outside its timed span)."""
        if not self.profile:
            return
        means: dict[str, float] = {}
        for info in self.request.get_profiling_info():
            microseconds = info.real_time.total_seconds() * 1e6
            if microseconds > 0:  # whole microseconds, as the counters keep them
                means[info.node_name] = means.get(info.node_name, 0.0) + round(microseconds)
        self._readings.append((self._inferences, means))
        self._latencies.append(float(self.request.latency))

    def node_times(self, skip_runs: int) -> list[dict[str, float]]:
        """Per-node times (ms) of each recorded inference after the first ``skip_runs``."""
        return per_inference_times(self._readings)[skip_runs:]

    def run_spans(self, skip_runs: int) -> list[float]:
        """How long (ms) each recorded ``infer()`` after the first ``skip_runs`` took inside
        OpenVINO, by its own clock (the request's ``latency``: from handing the inference to
        the plugin to its end; setting the inputs and copying the outputs are outside)."""
        return self._latencies[skip_runs:]

    def rounding_bound_ms(self) -> float:
        """How far the node times of one inference, added up, can be from the truth at
        most: each node's is within ``k`` microseconds of it (``k``: the inferences read so
        far), taken from the middle of that range, so half of it per node."""
        count, means = self.raw_means()
        return len(means) * count / 2 / 1e3

    def raw_means(self, reading: int = -1) -> tuple[int, dict[str, float]]:
        """A reading (the last by default; ``k``: the one after the ``k+1``-th inference) as
        OpenVINO gives it: the inferences since compiling and each node's mean time in
        microseconds over them (what a test re-sums independently)."""
        return self._readings[reading] if self._readings else (0, {})

    def node_precisions(self) -> dict[str, str]:
        """Each runtime node's name -> the precision it executes in (``runtimePrecision``)."""
        precisions = {}
        for op in self.compiled.get_runtime_model().get_ordered_ops():
            info = op.get_rt_info()
            if "runtimePrecision" in info and str(info["layerType"].astype(str)) not in (
                    "Const", "Input", "Output"):
                precisions[op.get_friendly_name()] = precision_name(
                    str(info["runtimePrecision"].astype(str)))
        return precisions

    def main_nodes(self) -> set[str]:
        """The runtime nodes that run a convolution or matrix product (their layer type)."""
        return {op.get_friendly_name() for op in self.compiled.get_runtime_model().get_ordered_ops()
                if str(op.get_rt_info()["layerType"].astype(str)) in MAIN_OPENVINO_TYPES}

    def constituents(self) -> dict[str, list[str]]:
        """Each runtime node's name -> the original layers fused into it."""
        return self.aliases()

    def aliases(self) -> dict[str, list[str]]:
        """Each runtime node's name -> the original layers it was made from."""
        names: dict[str, list[str]] = {}
        for op in self.compiled.get_runtime_model().get_ordered_ops():
            info = op.get_rt_info()
            if "originalLayersNames" in info:
                original = str(info["originalLayersNames"].astype(str))
                names[op.get_friendly_name()] = [n for n in original.split(",") if n]
        return names

    def neighbours(self) -> dict[str, list[str]]:
        """Each runtime node's name -> the nodes that read its outputs, then the nodes that
        make its inputs (where a node named after nothing exported is placed from)."""
        names: dict[str, list[str]] = {}
        for op in self.compiled.get_runtime_model().get_ordered_ops():
            readers = [target.get_node().get_friendly_name() for output in op.outputs()
                       for target in output.get_target_inputs()]
            makers = [value.get_node().get_friendly_name() for value in op.input_values()]
            names[op.get_friendly_name()] = readers + makers
        return names

    def describe(self) -> dict[str, Any]:
        """The runtime, its version and device, and the precision its floating operators
        execute in (``meta.json``)."""
        hint = str(self.compiled.get_property("INFERENCE_PRECISION_HINT"))
        return {"runtime": self.name, "version": self.version,
                "execution_provider": f"{self.device} plugin",
                "inference_precision": precision_name(_element_name(hint))}


def _element_name(hint: str) -> str:
    """``<Type: 'bfloat16'>`` or ``bf16`` -> ``bf16``."""
    inner = hint.split("'")[1] if "'" in hint else hint
    return {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}.get(inner, inner)
