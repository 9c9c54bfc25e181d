"""The rule for a fused node: it takes the stage of its main operator.

A runtime fuses a convolution or matrix product with the operators that follow it (a batch
norm folded into its weights, an activation, a residual addition), and so does the exporter's
own optimiser (``FuseBatchNormIntoConv``). The fused node is named after, or carries the
metadata of, one of its parts, often the last: by that name alone, resnet's ``conv1`` would
show no time and ``bn1`` hold its time. The rule: a node that runs a convolution or matrix
product counts to the stage of that operator, found by walking back from the part its name
leads to through the operators that fuse into it (at most :data:`FUSE_HOPS` away). Its MACs
are that operator's, so time and MACs stay in the same stage. A node whose parts lie in
different stages counts once in ``deployment.nodes_across_stages``.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional

__all__ = ["MAIN_ONNX_OPS", "FUSED_ONNX_OPS", "FUSE_HOPS", "is_main_fx_target", "nearest_main"]

#: ONNX operators (float and quantised) that are a node's main operator; a runtime's own fused
#: operators are its executor's to name.
MAIN_ONNX_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum", "QLinearConv",
                           "QLinearMatMul", "ConvInteger", "MatMulInteger"})
#: Operators that runtimes fuse into a preceding convolution or matrix product.
FUSED_ONNX_OPS = frozenset({"BatchNormalization", "Relu", "Clip", "Sigmoid", "HardSigmoid",
                            "HardSwish", "LeakyRelu", "PRelu", "Tanh", "Elu", "Selu", "Gelu",
                            "Erf", "Softplus", "Mish", "Add", "Mul", "Sub", "Div",
                            "QuantizeLinear", "DequantizeLinear", "Identity"})
#: How far back (operators) a fused node's main operator may be found.
FUSE_HOPS = 4

#: Substrings of the aten operators that are a main operator.
_MAIN_ATEN = ("conv", "linear", ".mm.", "addmm", "bmm", "matmul", "einsum")


def is_main_fx_target(target: object) -> bool:
    """Whether an FX node's ``target`` is a convolution, linear layer or matrix product."""
    name = str(target)
    return any(part in name for part in _MAIN_ATEN) and "backward" not in name


def nearest_main(start: str, inputs_of: Callable[[str], Iterable[str]],
                 is_main: Callable[[str], bool], passes: Callable[[str], bool]
                 ) -> Optional[str]:
    """The main operator ``start`` was fused onto: ``start`` itself when ``is_main``, else
    the first main operator found breadth-first through the nodes that make its inputs
    (``inputs_of``), passing only nodes that ``passes`` (operators that fuse), at most
    :data:`FUSE_HOPS` away; ``None`` when there is none."""
    if is_main(start):
        return start
    seen, frontier = {start}, [start]
    for _ in range(FUSE_HOPS):
        following = []
        for node in frontier:
            if node != start and not passes(node):
                continue
            for maker in inputs_of(node):
                if maker in seen:
                    continue
                seen.add(maker)
                if is_main(maker):
                    return maker
                following.append(maker)
        frontier = following
    return None
