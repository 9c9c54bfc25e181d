"""``stagezoo TOOL ARGS...`` (or ``python -m zoo TOOL ARGS...``): every command-line tool
behind one command.

``stagezoo profile model=gmflow`` is ``python -m zoo.profile model=gmflow``, and so on for each
tool of :data:`TOOLS`; the tool gets the rest of the command line unchanged. Nothing is imported
before a tool is chosen, so ``stagezoo --help`` answers at once.
"""

from __future__ import annotations

import importlib
import sys
from typing import Optional, Sequence

__all__ = ["TOOLS", "main", "usage", "version_line"]

#: Each tool: (its module, what it does).
TOOLS = {
    "profile": ("zoo.profile", "profile a model stage by stage (Hydra overrides: model=NAME ...)"),
    "split": ("zoo.split", "where to cut a forward between an edge device and a server"),
    "serve": ("zoo.serve", "serve the tail of a split forward to a head (zoo.split --execute)"),
    "compare": ("zoo.compare", "compare two runs stage by stage, with significance"),
    "collect": ("zoo.collect", "gather runs into one table"),
    "plot": ("zoo.plot", "PNG plots of a run or a split analysis"),
    "calibrate": ("zoo.calibrate", "measure this machine's roofline ceilings"),
    "report": ("zoo.report", "one self-contained HTML page of a run, a comparison or a sweep"),
    "list": ("zoo.list", "the zoo's models and the torchvision and timm architectures"),
}

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
    width = max(map(len, TOOLS))
    lines = [f"usage: {program} TOOL [ARGS...]   ({program} TOOL --help for a tool's options)",
             f"       {program} --version", "", "tools:"]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in TOOLS.items()]
    lines += ["", f"Example: {program} profile model=gmflow device=meta input.size=[128,192]",
              "Each tool also runs as python -m zoo.TOOL."]
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Run the tool named by the first argument with the others (exit 2 for an unknown one)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    program = "stagezoo"
    if arguments[:1] in (["-h"], ["--help"], ["help"]):
        print(usage(program))
        sys.exit(0)
    if arguments[:1] in (["-V"], ["--version"]):
        print(version_line())
        sys.exit(0)
    tool, rest = (arguments[0], arguments[1:]) if arguments else ("", [])
    if tool not in TOOLS:
        problem = f"unknown tool '{tool}'" if tool else "no tool given"
        print(f"error: {problem}; choose one of: {', '.join(TOOLS)} (see {program} --help)",
              file=sys.stderr)
        sys.exit(2)
    sys.argv = [f"{program} {tool}", *rest]
    importlib.import_module(TOOLS[tool][0]).main()


if __name__ == "__main__":
    main()
