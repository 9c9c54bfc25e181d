"""What the profiler needs to know about an ONNX graph: who produces each value, and the values
that cross each stage call's boundary."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

__all__ = ["OnnxGraph", "Boundary", "load_graph"]

#: Operators whose output is in int8 when their (first) input is.
_CARRIES_INT8 = {"MaxPool", "Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Slice",
                 "Split", "Concat", "Pad", "Identity", "DepthToSpace", "SpaceToDepth", "Gather"}


@dataclass(frozen=True)
class Boundary:
    """A value that crosses a stage call's boundary: its name and shape (``None``: unknown)."""

    value: str
    shape: Optional[tuple[int, ...]]


@dataclass
class OnnxGraph:
    """Producers, consumers and shapes of an ONNX graph's values.

    Attributes:
        producers: value name -> the node that produces it (graph inputs are absent).
        consumers: value name -> the nodes that read it.
        shapes: value name -> static shape, where shape inference knows it.
        op_types: node name -> operator type.
        outputs: the graph's output values.
        node_inputs: node name -> the values it reads, in order.
    """

    producers: dict[str, str]
    consumers: dict[str, list[str]]
    shapes: dict[str, tuple[int, ...]]
    op_types: dict[str, str]
    outputs: list[str]
    node_inputs: dict[str, list[str]] = field(default_factory=dict)

    def makers(self, node: str) -> list[str]:
        """The nodes that make ``node``'s inputs, in the order it reads them."""
        return [self.producers[value] for value in self.node_inputs.get(node, ())
                if value in self.producers]

    def carried_quantised(self, quantised: set[str]) -> set[str]:
        """``quantised`` and the values that operators which only move or select elements
        (pooling by maximum, reshapes, transposes, ...) make from quantised values: a runtime
        runs these on the int8 tensor."""
        carried = set(quantised)
        readers = {node: [] for node in self.op_types}
        for value, nodes in self.consumers.items():
            for node in nodes:
                readers[node].append(value)
        changed = True
        while changed:
            changed = False
            for value, node in self.producers.items():
                # the data it reads: initializers (weights, constants) are neither made nor
                # shaped here; the first of them is the tensor an operator moves
                inputs = [v for v in readers.get(node, ()) if v in self.shapes or
                          v in self.producers]
                if value not in carried and self.op_types.get(node) in _CARRIES_INT8 and \
                        inputs and all(v in carried for v in inputs[:1]):
                    carried.add(value)
                    changed = True
        return carried

    def boundaries(self, node_stages: Mapping[str, str], path: str
                   ) -> tuple[list[Boundary], list[Boundary]]:
        """The values going into the stage call ``path`` (read inside, made outside or a graph
        input) and coming out of it (made inside, read outside or a graph output)."""
        def inside(node: Optional[str]) -> bool:
            stage = node_stages.get(node, "") if node else ""
            return stage == path or stage.startswith(path + "/")

        incoming, outgoing = [], []
        for value, readers in self.consumers.items():
            if any(inside(n) for n in readers) and not inside(self.producers.get(value)) \
                    and (value in self.producers or value in self.shapes):
                incoming.append(Boundary(value, self.shapes.get(value)))
        for value, producer in self.producers.items():
            if inside(producer) and (value in self.outputs or any(
                    not inside(n) for n in self.consumers.get(value, ()))):
                outgoing.append(Boundary(value, self.shapes.get(value)))
        return incoming, outgoing


def _shape(value_info) -> Optional[tuple[int, ...]]:
    tensor = value_info.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
    return tuple(dims) if all(d >= 0 for d in dims) else None


def load_graph(path: Path) -> OnnxGraph:
    """The :class:`OnnxGraph` of the ONNX file at ``path`` (shapes inferred where missing)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)  # the structure only: no weights
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001  (a contrib operator: keep the shapes the file has)
        pass
    graph = model.graph
    producers, consumers, op_types, node_inputs = {}, {}, {}, {}
    for node in graph.node:
        op_types[node.name] = node.op_type
        # an empty name stands for an optional input left out
        node_inputs[node.name] = [value for value in node.input if value]
        for value in node.output:
            producers[value] = node.name
        for value in node.input:
            if value:
                consumers.setdefault(value, []).append(node.name)
    initializers = {t.name for t in graph.initializer}
    shapes = {}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        shape = _shape(info)
        if shape is not None and info.name not in initializers:
            shapes[info.name] = shape
    return OnnxGraph(producers, consumers, shapes, op_types, [v.name for v in graph.output],
                     node_inputs)
