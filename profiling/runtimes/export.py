"""Export a staged model to ONNX, each node tagged with the stages open when it was traced.

While the exporter traces the forward, a :class:`TaggingSession` stands in for a profiling
session: every stage marker and every attached module enters
``torch.fx.traceback.annotate({"stage": path})``, where ``path`` is the stack of open stage
calls, ``outer#0/inner#2`` (``name#call_index``). Code stages (``with stage(...)`` around code,
not a module) are tagged the same way as module stages. The exporter does not copy the tag into
ONNX, so each ONNX node is looked up in the exported program by the last entry of its
``pkg.torch.onnx.name_scopes`` (the FX node it came from) and the tag is read there.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch
import torch.fx.traceback as fx_traceback
from torch.utils._pytree import tree_flatten

from ..stages.attach import attach_stages
from ..stages.markers import StageCall
from ..stages.session import Session
from .main_operator import MAIN_ONNX_OPS, is_main_fx_target, nearest_main

__all__ = ["TaggingSession", "ExportedModel", "export_onnx", "stage_path", "STAGE_KEY",
           "TAGGING_RULES"]

#: The version of the rules that tag the exported nodes: a cached export's node map is only
#: valid for the rules that wrote it, so the export cache's key must include this (2: a
#: convolution the exporter folded a norm into keeps the convolution's stage).
TAGGING_RULES = 2
#: The key of the tag in an FX node's ``meta["custom"]``.
STAGE_KEY = "stagezoo_stage"
_NAME_SCOPES = "pkg.torch.onnx.name_scopes"


def stage_path(stack: Sequence[StageCall]) -> str:
    """``outer#0/inner#2``: the open stage calls, outermost first, with their call index."""
    return "/".join(f"{call.name}#{call.call_index}" for call in stack)


class TaggingSession(Session):
    """A session without collectors whose open stages annotate the nodes being traced."""

    def __init__(self) -> None:
        super().__init__()
        self._annotations: dict[int, AbstractContextManager] = {}

    def enter_stage(self, name: str, inputs: Any) -> StageCall:
        call = super().enter_stage(name, inputs)
        annotation = fx_traceback.annotate({STAGE_KEY: stage_path(self._stack)})
        annotation.__enter__()
        self._annotations[call.index] = annotation
        return call

    def exit_stage(self, call: StageCall) -> None:
        before = list(self._stack)
        super().exit_stage(call)
        # the session also closes the stages left open inside ``call``, innermost first
        for closed in reversed(before[len(self._stack):]):
            self._annotations.pop(closed.index).__exit__(None, None, None)


@dataclass
class ExportedModel:
    """An ONNX file and what each of its nodes belongs to.

    Attributes:
        path: the ``.onnx`` file.
        node_stages: ONNX node name -> stage path (``""``: no stage open).
        input_names, output_names: the graph's inputs and outputs, in the order of the
            flattened model inputs and outputs.
    """

    path: Path
    node_stages: dict[str, str]
    input_names: list[str]
    output_names: list[str]

    def save_map(self) -> Path:
        """Write ``node_stages`` and the input and output names beside the model
        (``<name>.stages.json``) and return its path; :meth:`load` reads them back."""
        target = self.path.with_suffix(".stages.json")
        target.write_text(json.dumps({"node_stages": self.node_stages,
                                      "input_names": self.input_names,
                                      "output_names": self.output_names}, sort_keys=True))
        return target

    @classmethod
    def load(cls, path: Path) -> "ExportedModel":
        """The exported model at ``path`` whose map :meth:`save_map` wrote."""
        saved = json.loads(path.with_suffix(".stages.json").read_text())
        return cls(path, saved["node_stages"], saved["input_names"], saved["output_names"])


def export_onnx(model: torch.nn.Module, inputs: Any, path: Path, *,
                kwargs: Mapping[str, Any] | None = None,
                attach: Mapping[str, str] | None = None, opset: int = 18) -> ExportedModel:
    """Export ``model(*inputs, **kwargs)`` (or ``model(**inputs)`` for a mapping) to ``path``
    with stage tags.

    Raises whatever the exporter raises when the model cannot be exported, and
    :class:`ValueError` when the graph does not take every input tensor (an input the
    exporter folded away could not be fed).
    """
    if isinstance(inputs, Mapping):
        args, kwargs = (), {**dict(inputs), **dict(kwargs or {})}
    else:
        args, kwargs = tuple(inputs), dict(kwargs or {}) or None
    path.parent.mkdir(parents=True, exist_ok=True)
    # preserve_node_meta: the stage annotations reach the traced FX nodes only inside it
    with fx_traceback.preserve_node_meta(), attach_stages(model, attach or {}), \
            TaggingSession(), torch.inference_mode(False), torch.no_grad():
        program = torch.onnx.export(model, args, kwargs=kwargs, dynamo=True, opset_version=opset,
                                    optimize=True, verbose=False, report=False)
    fx_nodes = {node.name: node for node in program.exported_program.graph.nodes}
    proto = program.model_proto
    node_stages = {}
    for node in proto.graph.node:
        scopes = _name_scopes(node)
        node_stages[node.name] = _fx_stage(fx_nodes, scopes[-1] if scopes else "",
                                           node.op_type in MAIN_ONNX_OPS)
    program.save(str(path))
    count = sum(isinstance(leaf, torch.Tensor) for leaf in tree_flatten((args, kwargs or {}))[0])
    if len(proto.graph.input) != count:
        raise ValueError(f"the exported graph takes {len(proto.graph.input)} of the "
                         f"{count} input tensors")
    return ExportedModel(path, node_stages, [v.name for v in proto.graph.input],
                         [v.name for v in proto.graph.output])


def _fx_stage(fx_nodes: Mapping[str, Any], name: str, main: bool) -> str:
    """The stage tag of the FX node ``name``; for an ONNX node that runs a convolution or
    matrix product (``main``) but carries the metadata of an operator the exporter folded
    into it (a batch norm), the tag of that convolution (:mod:`.main_operator`)."""
    node = fx_nodes.get(name)
    if node is None:
        return ""
    if main:
        def makers(fx_name: str) -> list[str]:
            return [arg.name for arg in fx_nodes[fx_name].all_input_nodes]

        found = nearest_main(name, makers,
                             lambda fx_name: is_main_fx_target(fx_nodes[fx_name].target),
                             lambda fx_name: True)
        node = fx_nodes[found] if found is not None else node
    return (node.meta.get("custom") or {}).get(STAGE_KEY, "")


def _name_scopes(node: Any) -> list[str]:
    """The module path and FX node of an exported ONNX node (its name-scope metadata)."""
    for prop in node.metadata_props:
        if prop.key == _NAME_SCOPES:
            value = prop.value
            try:
                return list(json.loads(value))
            except ValueError:  # a list in Python's repr, not JSON
                return [s.strip(" '") for s in value.strip("[]").split(",")]
    return []
