"""Names as the outputs show them. A stage, module, option or model name, a job's folder or a
failure's reason comes from model code, a config or a hand-edited run folder, and may hold
anything; every human-readable output shows it through one function here, for its medium:

* :func:`printable` (the terminal, and the first step of every other): each character that
  would act instead of showing (``ESC`` of an ANSI sequence, a line break, a bidirectional
  override that reverses the text after it) written as its escape (``\\x1b``, ``\\n``,
  ``\\u202e``);
* :func:`shorten`: printable and cut in its middle to fit a column;
* :func:`plot_label` (matplotlib): shortened, ``$`` escaped so that no name is read as
  mathtext (``$\\alpha$`` would be typeset, ``$\\x{$`` stops the plot);
* :func:`markdown_cell` (the ``|`` tables of ``modules.txt``): ``|`` escaped;
* the HTML pages and their charts: :func:`profiling.reports.html.page.escape`, built on
  :func:`printable`.

CSV files and ``meta.json`` keep every name as it is (they are data read back).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["printable", "shorten", "plot_label", "markdown_cell", "right_aligned",
           "PLOT_NAME_WIDTH"]

#: The longest name a plot's axis, legend or list shows before shortening it in its middle.
PLOT_NAME_WIDTH = 48

#: C0 and C1 controls (ESC, line breaks, tab, DEL, ...), the line and paragraph separators,
#: and the bidirectional marks, embeddings, overrides and isolates.
_ACTING = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                     "\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_code(match: "re.Match[str]") -> str:
    char = match.group(0)
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: Any) -> str:
    """``text`` with every character that would act rather than show (control characters,
    line breaks, bidirectional overrides) written as its Python escape: ``"a\\x1b[2J"`` for
    ``a`` + ESC + ``[2J``. Every other character, any script included, stays."""
    return _ACTING.sub(_escape_code, str(text))


def shorten(name: Any, width: int) -> str:
    """``name``, :func:`printable`, cut in its middle to ``width`` characters (``...`` marks
    the cut), or whole when it fits: its end stays, which tells repeated blocks and the calls
    of one stage apart (``layer4.1.conv2[3]``)."""
    name = printable(name)
    if len(name) <= width:
        return name
    keep = max(width - 3, 2)
    return name[:keep // 2] + "..." + name[-(keep - keep // 2):]


def plot_label(name: Any, width: int = PLOT_NAME_WIDTH) -> str:
    """``name`` as a matplotlib text shows it: :func:`shorten`, with each ``$`` escaped, so
    that it is drawn as written and never parsed as mathtext."""
    return shorten(name, width).replace("$", r"\$")


def markdown_cell(text: Any) -> str:
    """``text`` as a cell of a Markdown ``|`` table: :func:`printable`, ``|`` escaped."""
    return printable(text).replace("|", r"\|")


def right_aligned(text: Any, width: int) -> str:
    """``text`` right-aligned in a terminal column of ``width`` characters, with at least one
    space before it: a figure wider than its column (``9.01e-04-0.00229!``, a GFLOPs count
    of 1e12) pushes the row on rather than running into its neighbour."""
    return f" {text:>{width - 1}}"
