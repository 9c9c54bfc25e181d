"""``python -m zoo.list [PATTERN]``: what ``model=`` and ``model.arch=`` accept.

The zoo's own models (``model=NAME``), then the architectures of torchvision
(``model=torchvision model.arch=NAME``) and of timm (``model=timm model.arch=NAME``), each
library's by family: torchvision's by task (classification, detection, segmentation, video,
optical flow, quantized), timm's by the module that defines them (resnet, convnext, vit, ...).
A shell-style ``PATTERN`` (``'resnet*'``) keeps the names it matches.
"""

from __future__ import annotations

import fnmatch
import textwrap
from typing import Optional, Sequence

from .cli import ArgumentParser, run_tool
from .registry import register_tool

__all__ = ["main", "zoo_models", "torchvision_families", "timm_families", "format_listing"]

#: torchvision's model modules, by the task each serves.
_TORCHVISION_TASKS = ("", "detection", "segmentation", "video", "optical_flow", "quantization")
#: The registered models that stand for a library's architectures, not a network of their own.
_LIBRARY_MODELS = ("torchvision", "timm")

Families = dict[str, list[str]]


def _matching(names: Sequence[str], pattern: str) -> list[str]:
    return sorted(name for name in names if fnmatch.fnmatch(name, pattern))


def zoo_models(pattern: str = "*") -> list[str]:
    """The zoo's own models matching ``pattern`` (``model=NAME``)."""
    from zoo import list_models

    return [name for name in list_models(pattern) if name not in _LIBRARY_MODELS]


def torchvision_families(pattern: str = "*") -> Families:
    """torchvision's architectures matching ``pattern``, by task (empty tasks left out)."""
    import importlib

    import torchvision.models

    families: Families = {}
    for task in _TORCHVISION_TASKS:
        module = importlib.import_module(f"torchvision.models{'.' + task if task else ''}")
        names = _matching(torchvision.models.list_models(module=module), pattern)
        if names:
            families[task or "classification"] = names
    return families


def timm_families(pattern: str = "*") -> Families:
    """timm's architectures matching ``pattern``, by the module that defines them."""
    import timm

    families: Families = {}
    for family in timm.list_modules():
        names = _matching(timm.list_models(module=family), pattern)
        if names:
            families[family] = names
    return families


def _names_block(label: str, names: Sequence[str]) -> str:
    return textwrap.fill(", ".join(names), width=100, initial_indent=f"  {label}",
                         subsequent_indent="      ", break_on_hyphens=False)


def format_listing(pattern: str = "*") -> str:
    """The listing :func:`main` prints."""
    sections = [("zoo models (model=NAME; model.OPTION=VALUE for their options)",
                 {"": zoo_models(pattern)}),
                ("torchvision architectures (model=torchvision model.arch=NAME), by task",
                 torchvision_families(pattern)),
                ("timm architectures (model=timm model.arch=NAME), by family",
                 timm_families(pattern))]
    lines = []
    for title, families in sections:
        count = sum(map(len, families.values()))
        lines.append(f"{title}: {count}")
        lines += [_names_block(f"{family} ({len(names)}): " if family else "", names)
                  for family, names in families.items() if names]
    return "\n".join(lines)


def _main(argv: Optional[Sequence[str]]) -> None:
    parser = ArgumentParser(prog="python -m zoo.list",
                            description="The zoo's models and the torchvision and timm "
                                        "architectures that model.arch accepts, by family.")
    parser.add_argument("pattern", nargs="?", default="*",
                        help="keep the names matching this shell-style pattern, e.g. "
                             "'resnet*' (quote it)")
    print(format_listing(parser.parse_args(argv).pattern))


@register_tool("list", "the zoo's models and the torchvision and timm architectures")
def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point of ``python -m zoo.list``."""
    run_tool("zoo.list", lambda: _main(argv))


if __name__ == "__main__":
    main()
