"""The README's table of promises links each promise to its test: every link names a test file
that exists and, where it names a test, a test function defined in that file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ``[test_x.py::test_name](tests/test_x.py)`` or ``[::test_name](tests/test_x.py)``
LINK = re.compile(r"\[(?:(?P<file>[\w.]+\.py))?(?:::(?P<test>\w+))?\]\((?P<path>tests/[\w.]+\.py)\)")


def _promise_rows() -> list[str]:
    text = (ROOT / "README.md").read_text()
    table = text.split("### Promises, each with its test", 1)[1].split("\n## ", 1)[0]
    return [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_promise_links_to_a_test_that_exists():
    rows = _promise_rows()
    assert len(rows) >= 10
    for row in rows:
        links = list(LINK.finditer(row))
        assert links, f"a promise without a test: {row[:80]}"
        for link in links:
            path = ROOT / link["path"]
            assert path.is_file(), link["path"]
            assert link["file"] in (None, path.name), row[:80]
            if link["test"]:
                assert link["test"] in _test_names(path), f"{link['path']}::{link['test']}"


def test_a_link_to_a_missing_test_is_caught():
    row = "| p | r | [test_cli.py::test_no_such_test](tests/test_cli.py) |"
    (link,) = LINK.finditer(row)
    assert link["test"] == "test_no_such_test"
    assert link["test"] not in _test_names(ROOT / link["path"])
