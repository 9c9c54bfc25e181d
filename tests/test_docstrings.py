"""Docstrings and comments of ``profiling/`` and ``zoo/`` say what and why; one machine's
timings live in ``docs/`` and ``results/reference/``, beside that machine and the date.

A figure measured on one machine goes stale with the next torch, the next CPU or the next
change, and a docstring has no room to say where it came from. The check is conservative: a
number with a unit of time, a speed ratio ("2.6x faster"), or a named machine, outside ``code``
literals (a format's example may show ``12.3 ms``). :data:`ALLOWED` lists the few phrases where
a unit belongs to what the code means, not to a measurement.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("profiling", "zoo")

#: A number with a unit of time: ``14 ms``, ``0.5 s``, ``3 minutes`` (not ``1×1s``, ``x2s``).
TIMING = re.compile(r"(?<![\w.×/])\d+(?:\.\d+)?(?:e-?\d+)?\s?"
                    r"(?:ns|µs|us|ms|s|secs?|seconds?|mins?|minutes?|hours?)(?![\w/])")
#: A speed stated as a measured ratio: ``5x faster``, ``1.2× slower``, ``3 times faster``.
SPEED = re.compile(r"\d(?:\.\d+)?\s?(?:x|×|times)\s+(?:faster|slower)", re.IGNORECASE)
#: A particular machine or its load: ``2-core VM``, ``EPYC``, ``Xeon``, ``load 12``.
MACHINE = re.compile(r"\b(?:\d+-core|EPYC|Xeon|CI VM|dev VM|load (?:average )?(?:of )?\d+)",
                     re.IGNORECASE)
#: ``(path, phrase)``: a unit that states what the code means (a window, a timeout).
ALLOWED = {
    ("profiling/statistics/noise.py", "15 minutes"),  # the load average's three windows
}
#: Inline code: ``...`` (reStructuredText) or `...` (Markdown).
CODE = re.compile(r"``.*?``|`[^`\n]*`", re.DOTALL)


def docstrings_and_comments(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every docstring (module, class, function) and every comment."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                found.append((body[0].lineno, body[0].value.value))
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found.append((token.start[0], token.string))
    return sorted(found)


def quoted_timings(text: str) -> list[str]:
    """The phrases of ``text`` that quote a timing, a speed or a machine (code left out)."""
    prose = CODE.sub(" ", text)
    return [match.group(0) for pattern in (TIMING, SPEED, MACHINE)
            for match in pattern.finditer(prose)]


def test_the_patterns_find_timings_and_leave_other_numbers():
    found = quoted_timings("a 14 ms forward, 0.5 s in all, 1e-9 ms of round-off, 2.6x faster "
                           "on the 2-core VM (AMD EPYC) at load 12, for 3 minutes")
    assert found == ["14 ms", "0.5 s", "1e-9 ms", "3 minutes", "2.6x faster", "2-core",
                     "EPYC", "load 12"]
    assert quoted_timings("1×1s, 3x3 convs, 64x96 maps, 4 bytes, ``12.3 ms · 4.5%``, "
                          "`x 2 s`, 10x either way, the _ms columns, H/8 tokens, 2 stages") == []


def test_the_reader_finds_docstrings_and_comments_only():
    source = ('"""Module 1 ms."""\nX = "2 ms"  # 3 ms\n\n\ndef f():\n    """4 ms."""\n'
              '    return "5 ms"\n')
    assert docstrings_and_comments(source) == [(1, "Module 1 ms."), (2, "# 3 ms"),
                                               (6, "4 ms.")]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_docstring_or_comment_quotes_a_timing(package):
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        for line, text in docstrings_and_comments(path.read_text()):
            found += [f"{relative}:{line}: {phrase}" for phrase in quoted_timings(text)
                      if (relative, phrase) not in ALLOWED]
    assert found == []
