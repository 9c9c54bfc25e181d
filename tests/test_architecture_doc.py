"""docs/architecture.md is the map of the two packages: its tree names every module of
``profiling/`` and ``zoo/`` in its room, so that a newcomer finds each file where it stands.

The tree is the first ``text`` block of the page. An entry is a line with a branch
(``├──``, ``└──``) and the lines under it without one; a folder's entry holds its own text and
its children's. A module is named in the deepest folder entry on its path: ``meta_file.py`` in
the text of ``reports/``, a package by its folder (``html/``) there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = ("profiling", "zoo")
BRANCH = re.compile(r"[├└]── ")


@dataclass
class Entry:
    """One folder (or file) line of the tree: its path, depth and text, children's included."""

    path: str
    depth: int
    lines: list[str] = field(default_factory=list)


def _tree_lines(page: str) -> list[str]:
    start = page.index("```text\n") + len("```text\n")
    return page[start:page.index("```", start)].splitlines()


def tree_entries(page: str) -> list[Entry]:
    """Every entry of the page's tree, by the path of its first name (a folder's ends with
    ``/``)."""
    entries: list[Entry] = []
    open_entries: list[Entry] = []
    for line in _tree_lines(page):
        branch = BRANCH.search(line)
        if branch:
            depth, text = branch.start() // 4 + 1, line[branch.end():]
        elif line and not line.startswith(("│", " ")):
            depth, text = 0, line
        else:
            for entry in open_entries:
                entry.lines.append(line)
            continue
        open_entries = [entry for entry in open_entries if entry.depth < depth]
        parent = next((entry.path for entry in reversed(open_entries)
                       if entry.path.endswith("/")), "")
        entry = Entry(parent + (text.split() or [""])[0], depth)
        entries.append(entry)
        open_entries.append(entry)
        for each in open_entries:
            each.lines.append(text)
    return entries


def _shims() -> set[Path]:
    """The two-line ``zoo/NAME.py`` of each tool, which the tree names once as ``NAME.py``."""
    from zoo.tools.registry import registered_tools, shim_source

    return {ROOT / "zoo" / f"{name}.py" for name in registered_tools()
            if (ROOT / "zoo" / f"{name}.py").read_text() == shim_source(name)}


def unnamed_modules(page: str, modules: list[Path]) -> list[str]:
    """The modules (paths relative to the repository) the tree does not name in their room."""
    folders = [entry for entry in tree_entries(page) if entry.path.endswith("/")]
    missing = []
    for module in modules:
        relative = module.relative_to(ROOT)
        inner_package = relative.name == "__init__.py" and len(relative.parts) > 2
        named = f"{relative.parent.name}/" if inner_package else relative.name
        where = relative.parent.parent if inner_package else relative.parent
        rooms = [entry for entry in folders if f"{where.as_posix()}/".startswith(entry.path)]
        room = max(rooms, key=lambda entry: len(entry.path), default=None)
        text = "\n".join(room.lines) if room else ""
        if not re.search(rf"(?<![\w.]){re.escape(named)}(?![\w])", text):
            missing.append(relative.as_posix())
    return missing


def test_the_tree_reader_finds_rooms_and_names():
    page = "```text\nlib/   the library\n├── a/   x.py, y/\n│   │    z.py\n├── b.py\n```\n"
    assert [entry.path for entry in tree_entries(page)] == ["lib/", "lib/a/", "lib/b.py"]
    modules = [ROOT / "lib" / "a" / name for name in ("x.py", "z.py", "w.py")] + [
        ROOT / "lib" / "a" / "y" / "__init__.py", ROOT / "lib" / "a" / "y" / "v.py",
        ROOT / "lib" / "b.py", ROOT / "lib" / "c.py", ROOT / "lib" / "a" / "xx.py",
        ROOT / "lib" / "__init__.py"]
    assert unnamed_modules(page, modules) == ["lib/a/w.py", "lib/a/y/v.py", "lib/c.py",
                                              "lib/a/xx.py", "lib/__init__.py"]


@pytest.mark.parametrize("package", PACKAGES)
def test_architecture_names_every_module_in_its_room(package):
    shims = _shims()
    modules = [path for path in sorted((ROOT / package).rglob("*.py")) if path not in shims]
    assert len(modules) > 20
    assert unnamed_modules(PAGE.read_text(), modules) == []
