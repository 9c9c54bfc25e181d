"""From a runtime's node names back to stage paths.

Runtimes rename what they optimise: ONNX Runtime names a fused or re-laid-out node after its
output value and adds suffixes (``relu_nchwc``, ``x_token_3``, ``y_QuantizeLinear``); OpenVINO
keeps the ONNX node names and inserts reorders named after the nodes they serve. A
:class:`StageMap` answers for any such name by trying, in order: the exported node of that name,
the node that produced a value of that name, the same after stripping one known suffix, and the
``/``-separated prefix, and the exported node whose name ends the name (OpenVINO's reorders,
``x_abcd_acdb_node_Conv_3``). What it cannot place maps to ``None`` (the ``other`` row).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Optional

__all__ = ["StageMap", "enclosing_paths", "part_path"]

_SUFFIX = re.compile(r"(_nchwc|_token_\d+|_QuantizeLinear(_Output)?|_DequantizeLinear(_Output)?"
                     r"|_quantized|_output_\d+|_\d+_reorder|_fused|_kernel_time)$")


def enclosing_paths(path: str) -> list[str]:
    """``a#0/b#1`` -> ``["a#0", "a#0/b#1"]``: the stage call and every call around it."""
    parts = path.split("/") if path else []
    return ["/".join(parts[:i + 1]) for i in range(len(parts))]


def part_path(prefix: str, path: str, calls_before: Mapping[str, int]) -> str:
    """A stage path inside an exported part as the whole forward names it: under ``prefix``
    (the stage calls open around the part), each call index moved on by the calls of its name
    made before the part (``calls_before``), since the part's export counted from 0:
    ``("body#0", "block#1/conv#0", {"conv": 2})`` -> ``"body#0/block#1/conv#2"``."""
    calls = []
    for call in path.split("/") if path else []:
        name, _, index = call.rpartition("#")
        calls.append(f"{name}#{int(index) + calls_before.get(name, 0)}")
    return "/".join([prefix, *calls] if prefix else calls)


class StageMap:
    """Stage paths of exported nodes, looked up by the names a runtime reports.

    Args:
        node_stages: exported node name -> stage path (``""`` outside every stage).
        producers: value name -> name of the exported node that produces it.
        aliases: more names (e.g. a runtime's own nodes) -> exported node names.
        input_readers: graph input -> the exported node that reads it first: converting an
            input (quantising it, changing its layout) counts to the stage that reads it.
        neighbours: a runtime node -> the runtime's nodes that read its outputs, then those
            that make its inputs: a node that the runtime made up and named after nothing
            exported (OpenVINO's ``FakeQuantize_123``, the layout reorder before an output,
            ONNX Runtime's dequantisation of a weight) counts to the stage of the node it
            feeds, else of the node that feeds it.
    """

    #: How many runtime nodes away a made-up node may find its stage.
    NEIGHBOUR_HOPS = 3

    def __init__(self, node_stages: Mapping[str, str], producers: Mapping[str, str],
                 aliases: Optional[Mapping[str, Iterable[str]]] = None,
                 input_readers: Optional[Mapping[str, str]] = None,
                 neighbours: Optional[Mapping[str, Iterable[str]]] = None) -> None:
        self.node_stages = dict(node_stages)
        self.producers = {**dict(input_readers or {}), **dict(producers)}
        self.aliases = {name: list(names) for name, names in (aliases or {}).items()}
        self.neighbours = {name: list(names) for name, names in (neighbours or {}).items()}

    def stage_of(self, name: str) -> Optional[str]:
        """The stage path of the node a runtime calls ``name``; ``""`` for a node outside every
        stage, ``None`` when neither the name nor its neighbours lead to an exported node."""
        found = self._by_name(name)
        if found is not None or not self.neighbours:
            return found
        seen, frontier = {name}, [name]
        for _ in range(self.NEIGHBOUR_HOPS):
            frontier = [n for node in frontier for n in self.neighbours.get(node, ())
                        if n not in seen]
            seen.update(frontier)
            for neighbour in frontier:
                found = self._by_name(neighbour)
                if found is not None:
                    return found
        return None

    def _by_name(self, name: str) -> Optional[str]:
        """:meth:`stage_of` from the name alone."""
        seen = set()
        candidates = [name]
        while candidates:
            candidate = candidates.pop(0)
            if candidate in seen or not candidate:
                continue
            seen.add(candidate)
            if candidate in self.node_stages:
                return self.node_stages[candidate]
            if candidate in self.producers:
                return self.node_stages.get(self.producers[candidate])
            candidates.extend(self.aliases.get(candidate, ()))
            stripped = _SUFFIX.sub("", candidate)
            if stripped != candidate:
                candidates.append(stripped)
            if "/" in candidate:
                candidates.append(candidate.split("/")[0])
        return self._by_ending(name.split("/")[0])

    def _by_ending(self, name: str) -> Optional[str]:
        """The stage of the longest exported node name that ends ``name`` after a ``_``."""
        endings = [node for node in self.node_stages if name.endswith("_" + node)]
        return self.node_stages[max(endings, key=len)] if endings else None

    def derive(self, producers: Mapping[str, str]) -> dict[str, str]:
        """The stage paths of another graph's nodes (a quantiser's, an optimiser's), given its
        ``producers``: each node takes the stage of the value it produces (a fused node, that
        of its last operator), else of its own name; a node that neither places (the
        quantiser's dequantisation of a weight) is left out, for the runtime's neighbours to
        place."""
        nodes: dict[str, str] = {}
        for value, node in producers.items():
            if node not in nodes:
                stage = self.stage_of(value)
                stage = stage if stage is not None else self.stage_of(node)
                if stage is not None:
                    nodes[node] = stage
        return nodes

    def stage_times(self, node_ms: Mapping[str, float]) -> tuple[dict[str, float], float]:
        """Each stage call's time (its own nodes and those of the stages inside it), by path,
        and the time of the nodes that map to no stage, from per-node times in ms."""
        times: dict[str, float] = {}
        unmapped = 0.0
        for name, ms in node_ms.items():
            path = self.stage_of(name)
            if not path:
                unmapped += ms
                continue
            for enclosing in enclosing_paths(path):
                times[enclosing] = times.get(enclosing, 0.0) + ms
        return times, unmapped
