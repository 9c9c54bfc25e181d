"""Static post-training int8 quantisation: ONNX Runtime's QDQ quantiser, NNCF for OpenVINO.

Both calibrate on a list of input feeds and return, besides the quantised model, the exported
nodes whose outputs are quantised: a stage boundary crosses in int8 only where the value that
crosses it is, and stays float32 where the quantiser leaves it in float (a resize, an unfused
normalisation).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["quantize_onnxruntime", "quantize_nncf"]


class _Feeds:
    """ONNX Runtime's ``CalibrationDataReader`` protocol over a list of feeds."""

    def __init__(self, names: Sequence[str], feeds: Sequence[Sequence[np.ndarray]]) -> None:
        self._items = iter([dict(zip(names, feed)) for feed in feeds])

    def get_next(self) -> Any:
        return next(self._items, None)


def quantize_onnxruntime(source: Path, target: Path, input_names: Sequence[str],
                         calibration: Sequence[Sequence[np.ndarray]]) -> set[str]:
    """Quantise ``source`` into ``target`` (QDQ: int8 weights per channel, uint8 activations)
    and return the names of the values it quantises (those a ``QuantizeLinear`` reads)."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    quantize_static(str(source), str(target), _Feeds(input_names, calibration),
                    quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    model = onnx.load(str(target), load_external_data=False)
    return {node.input[0] for node in model.graph.node if node.op_type == "QuantizeLinear"}


def quantize_nncf(source: Path, calibration: Sequence[Sequence[np.ndarray]]
                  ) -> tuple[Any, set[str]]:
    """NNCF's int8 ``openvino.Model`` of ``source``, and the names of the values it quantises
    (the inputs of its ``FakeQuantize`` nodes, named as in the ONNX graph)."""
    import nncf
    import openvino as ov

    model = ov.Core().read_model(str(source))
    dataset = nncf.Dataset([dict(enumerate(feed)) for feed in calibration])
    # every calibration item and no more (NNCF's default asks for 300)
    quantised_model = nncf.quantize(model, dataset, subset_size=len(calibration))
    quantised = set()
    for op in quantised_model.get_ordered_ops():
        if op.get_type_name() != "FakeQuantize":
            continue
        value = op.input_value(0)
        if value.get_node().get_type_name() != "Constant":  # a weight's: it crosses no stage
            quantised.update(value.get_names())
    return quantised_model, quantised
