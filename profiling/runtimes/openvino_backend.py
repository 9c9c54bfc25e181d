"""OpenVINO: a compiled model with performance counters, read after each inference.

``get_profiling_info()`` names the ONNX nodes; the reorders and other nodes the plugin adds are
placed through the runtime model's ``originalLayersNames``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence, Union

import numpy as np

__all__ = ["OpenVinoBackend"]


class OpenVinoBackend:
    """An OpenVINO compiled model (from an ONNX file or an ``ov.Model``) on one device.

    Args:
        model: the ``.onnx`` file, or an ``openvino.Model`` (NNCF's int8 model).
        device: OpenVINO's device name (``CPU``).
        profile: turn the performance counters on.
    """

    name = "openvino"

    def __init__(self, model: Union[Path, Any], *, device: str = "CPU", profile: bool = True
                 ) -> None:
        import openvino as ov

        core = ov.Core()
        network = core.read_model(str(model)) if isinstance(model, Path) else model
        config = {"PERF_COUNT": "YES" if profile else "NO"}
        self.compiled = core.compile_model(network, device, config)
        self.request = self.compiled.create_infer_request()
        self.device = device
        self.version = ov.get_version()
        self.profile = profile
        self._times: list[dict[str, float]] = []

    def run(self, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One inference; the outputs in the graph's order. Per-node times are kept."""
        self.request.infer(dict(enumerate(feeds)))
        if self.profile:
            times: dict[str, float] = {}
            for info in self.request.get_profiling_info():
                ms = info.real_time.total_seconds() * 1e3
                if ms > 0:
                    times[info.node_name] = times.get(info.node_name, 0.0) + ms
            self._times.append(times)
        return [self.request.get_output_tensor(i).data.copy()
                for i in range(len(self.compiled.outputs))]

    def node_times(self, skip_runs: int) -> list[dict[str, float]]:
        """Per-node times (ms) of each inference after the first ``skip_runs``."""
        return self._times[skip_runs:]

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
        """The runtime, its version and device (``meta.json``)."""
        return {"runtime": self.name, "version": self.version,
                "execution_provider": f"{self.device} plugin"}
