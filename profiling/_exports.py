"""Public names of a package, imported from its modules on first use.

Each package's ``__init__`` lists its public API as ``{name: module}``; the modules load only
when a name is first read, so importing a package (and a command's ``--help``) stays cheap,
and an optional dependency (matplotlib for the plots) is needed only by what uses it.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``, whose public names
    ``exports`` maps to the module (relative to the package) that defines each."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module '{package}' has no attribute '{name}'")
        value = getattr(importlib.import_module(f".{exports[name]}", package), name)
        setattr(sys.modules[package], name, value)  # later reads are plain attribute reads
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
