"""From a runtime's node names back to stage paths.

Runtimes rename what they optimise: they name a fused or re-laid-out node after its output
value and add suffixes (``relu_nchwc``, ``x_token_3``, ``y_QuantizeLinear``), or keep the ONNX
node names and insert reorders named after the nodes they serve. A :class:`StageMap` answers
for any such name by trying, in order: the exported node of that name, the node that produced
a value of that name, the same after stripping one suffix that a registered executor declares
(``node_name_suffixes``), and the ``/``-separated prefix, and the exported node whose name
ends the name (``x_abcd_acdb_node_Conv_3``). What it cannot place maps to ``None`` (the
``other`` row).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, Optional

from .graph import OnnxGraph
from .main_operator import FUSED_ONNX_OPS, MAIN_ONNX_OPS, nearest_main

__all__ = ["StageMap", "enclosing_paths", "part_path", "name_suffixes"]


def name_suffixes() -> re.Pattern:
    """A pattern of any one suffix that a registered executor declares its runtime (or its
    quantiser) appends to exported node names (``node_name_suffixes``), at a name's end."""
    from .registry import registered_executors

    suffixes = dict.fromkeys(suffix for cls in registered_executors().values()
                             for suffix in cls.node_name_suffixes)
    return re.compile(f"({'|'.join(suffixes)})$" if suffixes else r"(?!)")


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

    A name is placed by its own name first (the exported node of that name, the node that
    produces a value of that name, the same after stripping a known suffix or at the ``/``
    prefix), then by its aliases (the values a runtime node reads and writes, the layers it
    was made from: one in a stage wins over one outside every stage), then by the exported
    node whose name ends it, and last by its neighbours. A runtime node that runs a
    convolution or matrix product (``main_nodes``) takes the stage of that operator, not of
    the folded norm or activation its name leads to (:mod:`.main_operator`).

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
        structure: the exported graph (operator types and inputs), for the main operator.
        main_nodes: the runtime nodes that run a convolution or matrix product.
        constituents: a runtime node -> the exported nodes fused into it, where the runtime
            says (OpenVINO's ``originalLayersNames``): one in another stage than the node's
            makes it span a stage boundary.
    """

    #: How many runtime nodes away a made-up node may find its stage.
    NEIGHBOUR_HOPS = 3

    def __init__(self, node_stages: Mapping[str, str], producers: Mapping[str, str],
                 aliases: Optional[Mapping[str, Iterable[str]]] = None,
                 input_readers: Optional[Mapping[str, str]] = None,
                 neighbours: Optional[Mapping[str, Iterable[str]]] = None,
                 structure: Optional[OnnxGraph] = None,
                 main_nodes: Iterable[str] = (),
                 constituents: Optional[Mapping[str, Iterable[str]]] = None) -> None:
        self.node_stages = dict(node_stages)
        self.producers = {**dict(input_readers or {}), **dict(producers)}
        self.aliases = {name: list(names) for name, names in (aliases or {}).items()}
        self.neighbours = {name: list(names) for name, names in (neighbours or {}).items()}
        self.structure = structure
        self.main_nodes = set(main_nodes)
        self.constituents = {name: list(parts) for name, parts in (constituents or {}).items()}
        self._suffix = name_suffixes()

    def stage_of(self, name: str) -> Optional[str]:
        """The stage path of the node a runtime calls ``name``; ``""`` for a node outside every
        stage, ``None`` when neither the name nor its neighbours lead to an exported node."""
        return self.placed(name)[0]

    def placed(self, name: str) -> tuple[Optional[str], bool]:
        """:meth:`stage_of` and whether the node spans a stage boundary: its name leads to a
        part fused into a main operator of another stage (it counts to the main operator's)."""
        node = self._node_by_name(name)
        if node is None:
            return self._by_neighbours(name), False
        stage = self.node_stages.get(node, "")
        parts = {self.node_stages.get(n) for n in map(self._own_node, self.constituents.get(
            name, ())) if n is not None} - {None, ""}
        if name in self.main_nodes and self.structure is not None:
            main = nearest_main(node, self.structure.makers, self._is_main, self._fuses)
            if main is not None and main in self.node_stages:
                chosen = self.node_stages[main]
                return chosen, chosen != stage or bool(parts - {chosen})
        return stage, bool(parts - {stage})

    def _is_main(self, node: str) -> bool:
        return self.structure.op_types.get(node) in MAIN_ONNX_OPS

    def _fuses(self, node: str) -> bool:
        return self.structure.op_types.get(node) in FUSED_ONNX_OPS

    def _by_neighbours(self, name: str) -> Optional[str]:
        """The stage of the nearest runtime neighbour whose name leads to an exported node."""
        seen, frontier = {name}, [name]
        for _ in range(self.NEIGHBOUR_HOPS):
            frontier = [n for node in frontier for n in self.neighbours.get(node, ())
                        if n not in seen]
            seen.update(frontier)
            for neighbour in frontier:
                node = self._node_by_name(neighbour)
                if node is not None:
                    return self.node_stages.get(node, "")
        return None

    def _node_by_name(self, name: str) -> Optional[str]:
        """The exported node ``name`` leads to: by its own name, then by its aliases (one in a
        stage first), then by the exported name that ends it."""
        own = self._own_node(name)
        if own is not None:
            return own
        outside = None
        for alias in self._alias_names(name):
            node = self._own_node(alias)
            if node is not None and self.node_stages.get(node):
                return node
            outside = outside or node
        return outside or self._by_ending(name.split("/")[0])

    def _own_node(self, name: str) -> Optional[str]:
        """The exported node of ``name`` itself, a suffix stripped or at its ``/`` prefix."""
        seen, candidates = set(), [name]
        while candidates:
            candidate = candidates.pop(0)
            if candidate in seen or not candidate:
                continue
            seen.add(candidate)
            if candidate in self.node_stages:
                return candidate
            if candidate in self.producers:
                return self.producers[candidate]
            stripped = self._suffix.sub("", candidate)
            if stripped != candidate:
                candidates.append(stripped)
            if "/" in candidate:
                candidates.append(candidate.split("/")[0])
        return None

    def _alias_names(self, name: str) -> list[str]:
        """The aliases of ``name`` and of its stripped forms, and theirs, in order."""
        found, queue, seen = [], [name], {name}
        while queue:
            candidate = queue.pop(0)
            forms = [candidate, self._suffix.sub("", candidate), candidate.split("/")[0]]
            for alias in (a for form in forms for a in self.aliases.get(form, ())):
                if alias not in seen:
                    seen.add(alias)
                    found.append(alias)
                    queue.append(alias)
        return found

    def _by_ending(self, name: str) -> Optional[str]:
        """The longest exported node name that ends ``name`` after a ``_``."""
        endings = [node for node in self.node_stages if name.endswith("_" + node)]
        return max(endings, key=len) if endings else None

    def derive(self, producers: Mapping[str, str]) -> dict[str, str]:
        """The stage paths of another graph's nodes (a quantiser's, an optimiser's), given its
        ``producers``: each node takes the stage of the value it produces (a fused node, that
        of its last operator), else of its own name; a node that neither places (the
        quantiser's dequantisation of a weight) is left out, for the runtime's neighbours to
        place."""
        nodes: dict[str, str] = {}
        for value, node in producers.items():
            if node not in nodes and node in self.node_stages:
                nodes[node] = self.node_stages[node]  # the quantiser kept the node's name
            elif node not in nodes:
                stage = self.stage_of(value)
                stage = stage if stage is not None else self.stage_of(node)
                if stage is not None:
                    nodes[node] = stage
        return nodes

    def across_stages(self, names: Iterable[str]) -> list[str]:
        """The runtime nodes among ``names`` that span a stage boundary (:meth:`placed`)."""
        return [name for name in names if self.placed(name)[1]]

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
