"""``stagezoo TOOL ARGS...`` (or ``python -m zoo TOOL ARGS...``): every command-line tool
behind one command.

``stagezoo profile model=gmflow`` is ``python -m zoo.profile model=gmflow``, and so on for each
registered tool (``@register_tool`` in :mod:`zoo.tools.registry`); the tool gets the rest of the
command line unchanged. The tools load neither torch nor Hydra when imported, so ``stagezoo
--help`` answers at once.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence

__all__ = ["TOOLS", "main", "usage", "version_line"]


def _tools() -> dict[str, tuple[str, str]]:
    """Each registered tool (:func:`zoo.tools.registry.registered_tools`): its module and
    what it does, by name."""
    from .tools.registry import registered_tools

    return {tool.name: (tool.module, tool.summary) for tool in registered_tools().values()}


def __getattr__(name: str) -> Any:
    """``TOOLS``: :func:`_tools`, read when first asked for."""
    if name == "TOOLS":
        return _tools()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: The distributions whose versions ``--version`` names beside the package's own.
_VERSIONED = ("torch", "torchvision", "timm")


def version_line() -> str:
    """``stagezoo 0.1.0 (torch 2.14.1, torchvision 0.29.1, timm 1.0.31, Python 3.11.7)``, read
    from the installed distributions' metadata, without importing them."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    others = ", ".join(f"{name} {installed(name)}" for name in _VERSIONED)
    return f"stagezoo {installed('stagezoo')} ({others}, Python {platform.python_version()})"



def usage(program: str = "stagezoo") -> str:
    """The command's help: its tools, one line each."""
    tools = _tools()
    width = max(map(len, tools))
    lines = [f"usage: {program} TOOL [ARGS...]   ({program} TOOL --help for a tool's options)",
             f"       {program} --version", "", "tools:"]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in tools.items()]
    lines += ["", f"Example: {program} profile model=gmflow device=meta input.size=[128,192]",
              "Each tool also runs as python -m zoo.TOOL."]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Run the tool named by the first argument with the others (exit 2 for an unknown one).
    Nothing is returned: the console script exits with what this returns."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    program = "stagezoo"
    if arguments[:1] in (["-h"], ["--help"], ["help"]):
        print(usage(program))
        sys.exit(0)
    if arguments[:1] in (["-V"], ["--version"]):
        print(version_line())
        sys.exit(0)
    tool, rest = (arguments[0], arguments[1:]) if arguments else ("", [])
    tools = _tools()
    if tool not in tools:
        problem = f"unknown tool '{tool}'" if tool else "no tool given"
        print(f"error: {problem}; choose one of: {', '.join(tools)} (see {program} --help)",
              file=sys.stderr)
        sys.exit(2)
    from .tools.registry import registered_tools

    sys.argv = [f"{program} {tool}", *rest]
    registered_tools()[tool].main()  # its result is not the exit status: the console script
    return None                      # exits with what main returns (a Ceilings was exit 1)


if __name__ == "__main__":
    main()
