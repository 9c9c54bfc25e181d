"""The layout's rules (docs/architecture.md): every module imports, profiling never imports zoo,
no import circles, zoo uses profiling's public packages only, and zoo is rooms by concern, each
importing lower rooms through their faces, with no plain module at its top but the tool shims.

The import graph is read from the source (every ``import`` statement, also those inside
functions), so a lazy import that closes a circle is found as well.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("profiling", "zoo")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    """Every module of the two packages by dotted name."""
    return {_module_name(path): path for package in PACKAGES
            for path in sorted((ROOT / package).rglob("*.py"))}


SOURCES = _sources()


def _is_package(name: str) -> bool:
    return (ROOT / Path(*name.split(".")) / "__init__.py").is_file()


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute name that ``from ... import`` in ``module`` reads from."""
    if not node.level:
        return node.module or ""
    package = module if _is_package(module) else module.rpartition(".")[0]
    base = package.split(".")
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str) -> set[str]:
    """The project modules that ``module`` imports: for ``from P import N`` the submodule P.N
    where there is one, else P."""
    found = set()
    for node in ast.walk(ast.parse(SOURCES[module].read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in SOURCES else source)
    return {name for name in found if name in SOURCES and name != module}


GRAPH = {module: imports_of(module) for module in SOURCES}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_the_graph_reader_resolves_relative_and_lazy_imports():
    assert "profiling.stages.markers" in GRAPH["profiling.stages.session"]  # from . import
    assert "profiling.split" in GRAPH["zoo.tools.split_arguments"]  # inside a function
    assert "profiling" not in GRAPH["profiling"]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_every_module_imports(module):
    importlib.import_module(module)


def test_profiling_never_imports_zoo():
    upward = {module: sorted(name for name in targets if name.split(".")[0] == "zoo")
              for module, targets in GRAPH.items() if module.startswith("profiling")}
    assert {module: names for module, names in upward.items() if names} == {}


def test_no_import_circles():
    assert _circles(GRAPH) == []


@pytest.mark.parametrize("package", sorted(name for name in SOURCES if _is_package(name)))
def test_every_public_name_resolves(package):
    module = importlib.import_module(package)
    missing = [name for name in getattr(module, "__all__", []) if not hasattr(module, name)]
    assert missing == []


def test_zoo_uses_only_the_public_api_of_profiling():
    """zoo imports ``profiling`` and its packages (whose ``__init__`` is their API), never a
    module inside them."""
    public = {name for name in SOURCES if name.startswith("profiling") and _is_package(name)
              and name.count(".") <= 1}
    reached = {module: sorted(name for name in targets
                              if name.startswith("profiling") and name not in public)
               for module, targets in GRAPH.items() if module.startswith("zoo")}
    assert {module: names for module, names in reached.items() if names} == {}



#: profiling's packages from the ground up: each imports only those on its floor or below
#: (docs/architecture.md draws them so). The files and the stages stand on the ground; the
#: counting knows no timer, the statistics no collector, and the split analysis's forward
#: runs in the runner, above the liveness collector it uses.
FLOORS = (("errors", "_exports"), ("files", "stages"), ("counting",), ("statistics",),
          ("split",), ("collectors",), ("runner", "trace"), ("reports", "runtimes"))


def _floor(module: str) -> int:
    package = module.split(".")[1] if "." in module else ""
    return next((level for level, names in enumerate(FLOORS) if package in names), len(FLOORS))


def test_profiling_packages_import_only_downward():
    upward = {module: sorted(name for name in targets if name.startswith("profiling.")
                             and _floor(name) > _floor(module))
              for module, targets in GRAPH.items() if module.startswith("profiling.")}
    assert {module: names for module, names in upward.items() if names} == {}
    assert {_floor(module) for module in SOURCES if module.startswith("profiling.")} <= set(
        range(len(FLOORS)))  # every package has its floor


#: zoo's rooms from the ground up: each imports only rooms on a lower floor (docs/architecture.md
#: draws them so). The options are the ground; the inputs and the deployment need only them; the
#: models take their inputs; the tools stand on everything.
ZOO_FLOORS = (("options",), ("inputs", "deploy"), ("models",), ("tools",))
#: The most project modules that one module of zoo imports (no hub).
MOST_IMPORTS = 10
HUBS_TO_SHRINK: dict[str, int] = {}


def _room(module: str) -> str:
    return module.split(".")[1] if module.count(".") >= 1 else ""


def _zoo_floor(module: str) -> int:
    return next(level for level, rooms in enumerate(ZOO_FLOORS) if _room(module) in rooms)


def test_zoo_top_holds_rooms_and_tool_shims_only():
    """At zoo's top: ``__init__``, ``__main__`` and the shim ``zoo/NAME.py`` of each tool;
    every other module stands in a room of ZOO_FLOORS."""
    from zoo.tools.registry import registered_tools, shim_source

    tools = registered_tools()
    plain = sorted(module for module in SOURCES if module.startswith("zoo.")
                   and module.count(".") == 1 and not _is_package(module)
                   and module != "zoo.__main__")
    assert plain == sorted(f"zoo.{name}" for name in tools)
    assert all(SOURCES[f"zoo.{name}"].read_text() == shim_source(name) for name in tools)
    rooms = {_room(module) for module in SOURCES if module.startswith("zoo.")
             and _is_package(f"zoo.{_room(module)}")}
    assert rooms == {"deploy", "inputs", "models", "options", "tools"}


def test_zoo_rooms_import_only_lower_floors():
    upward = {module: sorted(name for name in targets if name.count(".") >= 1
                             and name.startswith("zoo.") and _room(name) != _room(module)
                             and _zoo_floor(name) >= _zoo_floor(module))
              for module, targets in GRAPH.items()
              if module.startswith("zoo.") and _is_package(f"zoo.{_room(module)}")}
    assert {module: names for module, names in upward.items() if names} == {}
    assert _zoo_floor("zoo.models.networks.gmflow.model") == 2  # a room's depth does not count


def test_other_rooms_reach_a_room_through_its_face():
    """A module outside a room imports its ``__init__`` (its public face), not the modules in
    it; zoo/tools, whose tools are reached through the tool registry, has no face to keep."""
    behind = {module: sorted(name for name in targets if name.startswith("zoo.")
                             and name.count(".") >= 2 and _room(name) != _room(module)
                             and _room(name) != "tools")
              for module, targets in GRAPH.items() if module.startswith("zoo")}
    assert {module: names for module, names in behind.items() if names} == {}


def test_no_tool_imports_another_and_no_zoo_module_is_a_hub():
    from zoo.tools.registry import registered_tools

    tools = {tool.module for tool in registered_tools().values()}
    assert len(tools) >= 8
    assert {module: sorted(GRAPH[module] & tools) for module in sorted(tools)
            if GRAPH[module] & tools} == {}
    assert {module: len(targets) for module, targets in GRAPH.items() if module.startswith("zoo")
            and len(targets) > HUBS_TO_SHRINK.get(module, MOST_IMPORTS)} == {}


#: The size rules of CONTRIBUTING.md: small files with one concern, functions read whole.
MOST_MODULE_LINES, MOST_FUNCTION_LINES = 450, 80


def test_modules_and_functions_stay_small():
    too_long = {}
    for name, path in SOURCES.items():
        source = path.read_text()
        if source.count("\n") > MOST_MODULE_LINES:
            too_long[name] = source.count("\n")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MOST_FUNCTION_LINES:
                    too_long[f"{name}.{node.name}"] = lines
    assert too_long == {}
