"""What a broken installation looks like from the inside, said in words a user can act on.

A torchvision wheel built for another torch fails to register its compiled operators, and the
first use says only ``operator torchvision::nms does not exist``: nothing names the two
packages or their versions. :func:`installation_problem` recognises that and says which pair
is installed and what to do.
"""

from __future__ import annotations

import re
from typing import Optional

__all__ = ["installation_problem"]

_MISSING_OPERATOR = re.compile(r"operator torchvision::(\w+) does not exist")


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "(not installed)"


def installation_problem(error: BaseException) -> Optional[str]:
    """The one line for ``error`` (or an error it was raised from) when it comes from a
    torchvision that does not match torch, else ``None``."""
    seen: set[int] = set()
    current: Optional[BaseException] = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        missing = _MISSING_OPERATOR.search(str(current))
        if missing:
            torch = _version("torch")
            return (f"torchvision {_version('torchvision')} does not match torch {torch}: its "
                    f"compiled operators did not load (operator torchvision::"
                    f"{missing.group(1)} does not exist); install the torchvision release "
                    f"built for torch {torch}, from the same index as torch")
        current = current.__cause__ or current.__context__
    return None
