"""The one tool registry: ``@register_tool(NAME, SUMMARY)`` on a tool's ``main``.

From the registrations come ``stagezoo NAME`` (:mod:`zoo.__main__`), the list of
``stagezoo --help`` and the two-line shim ``zoo/NAME.py`` that ``python -m zoo.NAME`` runs
(:func:`shim_source`, checked by tests/test_tool_registry.py). A tool module is a module of
this package with a line that starts with ``@register_tool(``: those are found by reading the
sources and then imported, so that ``stagezoo --help`` loads the tools (light by contract:
torch loads only once a tool runs) and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Callable, TypeVar

__all__ = ["Tool", "register_tool", "registered_tools", "shim_source"]

Main = TypeVar("Main", bound=Callable[..., object])

_TOOLS: dict[str, "Tool"] = {}
_MARK = "@register_tool("


@dataclass(frozen=True)
class Tool:
    """A registered tool: its name (``stagezoo NAME``), what it does in one line, and its
    entry point (``main(argv=None)``, or ``main()`` for a tool that reads ``sys.argv``)."""

    name: str
    summary: str
    main: Callable[..., object]

    @property
    def module(self) -> str:
        """The module that holds the tool: ``zoo.tools.NAME``."""
        return self.main.__module__


def register_tool(name: str, summary: str) -> Callable[[Main], Main]:
    """Register the decorated ``main`` as the tool ``name`` (one line of ``summary`` for
    ``stagezoo --help``); a name registered twice by two functions is refused."""

    def register(main: Main) -> Main:
        known = _TOOLS.get(name)
        if known is not None and known.main.__qualname__ != main.__qualname__:
            raise RuntimeError(f"tool '{name}' is registered twice")
        _TOOLS[name] = Tool(name, summary, main)
        return main

    return register


def _tool_modules() -> list[str]:
    """The modules of this package that register a tool, by name, read from their sources."""
    folder = Path(__file__).parent
    return [f"{__package__}.{path.stem}" for path in sorted(folder.glob("*.py"))
            if any(line.startswith(_MARK) for line in path.read_text().splitlines())]


def registered_tools() -> dict[str, Tool]:
    """Every registered tool by name, in alphabetical order (the tool modules are imported
    on the first call)."""
    for module in _tool_modules():
        import_module(module)
    return dict(sorted(_TOOLS.items()))


def shim_source(name: str) -> str:
    """The text of ``zoo/NAME.py``, which lets ``python -m zoo.NAME`` run the tool."""
    return (f'"""``python -m zoo.{name}``, kept short: the tool is '
            f':mod:`zoo.tools.{name}`."""\n\nfrom zoo.tools.{name} import main\n\n'
            f'if __name__ == "__main__":\n    main()\n')
