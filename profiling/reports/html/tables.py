"""Sortable, filterable HTML tables (the page's script sorts on a header click and filters on
the controls that name the table)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from .formatting import is_missing, significant
from .page import escape

__all__ = ["Cell", "Column", "Table", "number_cell", "text_cell"]


@dataclass
class Cell:
    """One cell: its text, and the value it sorts by (its text when ``None``)."""

    text: str
    value: Optional[float] = None
    css: str = ""


def number_cell(value: Any, scale: float = 1.0, digits: int = 3, css: str = "") -> Cell:
    """A number to ``digits`` significant figures, sorted by its value."""
    if is_missing(value):
        return Cell("-")
    number = float(value) * scale
    return Cell(significant(number, digits), number, css)


def text_cell(text: Any, css: str = "text") -> Cell:
    """Text, sorted as text."""
    return Cell("-" if is_missing(text) else str(text), None, css)


def _css(css: str) -> str:
    """The ``class`` attribute of ``css``, none where it is empty (a stage table's row of
    empty ones would weigh some 120 bytes more)."""
    return f' class="{escape(css)}"' if css else ""


#: A number as JavaScript's ``Number()`` and Python's ``float()`` read it alike.
_PLAIN_NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]?\d+)?")


def _sorts_apart(cell: Cell) -> bool:
    """Whether ``cell`` needs its value written beside its text: not where its text reads as
    that very number (``0.20`` for 0.2), which the page's script sorts by instead (a stage
    table's row is some 150 bytes lighter without them)."""
    if cell.value is None:
        return False
    return not (_PLAIN_NUMBER.fullmatch(cell.text) and float(cell.text) == float(cell.value))


@dataclass
class Column:
    """A column's header, its tooltip and whether it holds text (left-aligned)."""

    header: str
    tooltip: str = ""
    text: bool = False


@dataclass
class Table:
    """A table of rows of cells; a row may carry a stage key (linked to the charts), a name
    and a depth (for the filters) and a CSS class."""

    table_id: str
    columns: Sequence[Column]
    rows: list[tuple[list[Cell], dict[str, Any]]] = field(default_factory=list)

    def add(self, cells: list[Cell], *, key: Optional[str] = None, name: str = "",
            depth: Optional[int] = None, css: str = "") -> None:
        """Append a row."""
        self.rows.append((cells, {"key": key, "name": name, "depth": depth, "css": css}))

    def controls(self, depths: Sequence[int] = (), names: str = "stage name") -> str:
        """A filter by ``names`` (what the table's rows are named by) and, given ``depths``,
        a deepest-level picker for this table."""
        depth_picker = ""
        if len(depths) > 1:
            options = "".join(f'<option value="{d}">{d}</option>' for d in depths)
            depth_picker = (f'<label>down to depth <select data-filters="{self.table_id}">'
                            f'<option value="">all</option>{options}</select></label>')
        return (f'<div class="controls"><label>filter <input type="search" placeholder='
                f'"{escape(names)}" data-filters="{self.table_id}"></label>{depth_picker}'
                f'<span class="muted">click a header to sort</span></div>')

    def render(self) -> str:
        """The table's HTML."""
        head = "".join(f'<th{_css("text" if c.text else "")} title="{escape(c.tooltip)}">'
                       f"{escape(c.header)}</th>" for c in self.columns)
        body = []
        for cells, extra in self.rows:
            attributes = "".join(
                f' data-{name}="{escape(value)}"' for name, value in
                (("key", extra["key"]), ("name", extra["name"]), ("depth", extra["depth"]))
                if value not in (None, ""))
            body.append(f"<tr{attributes}{_css(extra['css'])}>" + "".join(
                f"<td{_css(cell.css)}"
                + (f' data-value="{float(cell.value)!r}"' if _sorts_apart(cell) else "")
                + f">{escape(cell.text)}</td>" for cell in cells) + "</tr>")
        return (f'<div class="table-box"><table class="sortable" id="{escape(self.table_id)}">'
                f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")
