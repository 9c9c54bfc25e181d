"""How the report pages write numbers and name stage calls."""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import pandas as pd

from ..labels import printable
from ..numbers import change_text, plain

__all__ = ["stage_key", "stage_label", "significant", "span", "factor", "is_missing",
           "chart_labels", "indent", "MAX_INDENT", "hover_number"]

def hover_number(field: str, digits: int = 3) -> str:
    """A plotly hover-template field (``%{y}``) as the page writes numbers: ``digits``
    significant figures in plain decimals with thousands separators (d3's ``,.3~r``, as
    ``assets/report.js`` gives every axis)."""
    return f"%{{{field}:,.{digits}~r}}"

#: The deepest nesting a name's indentation shows (deeper calls indent no further: 40 levels
#: of em spaces made the payload chart's axis mostly blank).
MAX_INDENT = 8


def stage_key(stage: Any, call_index: Any) -> str:
    """The one name of a stage call that every chart and table row of a page shares:
    ``"name#call"``, the name :func:`~profiling.reports.labels.printable`, so that it reads
    back the same from the page's HTML attributes and its charts' data."""
    return f"{printable(stage)}#{int(call_index) if not is_missing(call_index) else 0}"


def stage_label(stage: Any, call_index: Any) -> str:
    """``name`` for a stage's first call, ``name[i]`` for a later one, as in the CSVs."""
    index = 0 if is_missing(call_index) else int(call_index)
    return f"{stage}[{index}]" if index else str(stage)


def is_missing(value: Any) -> bool:
    """``True`` for ``None``, NaN and pandas' missing values."""
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def significant(value: Any, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures, written plainly
    (:func:`profiling.reports.numbers.plain`: ``3,461``, ``0.000710``); ``"-"`` for any
    missing value."""
    return "-" if is_missing(value) else plain(float(value), digits)


def span(low: Any, high: Any, digits: int = 3) -> str:
    """An interval as people write it, with an en dash: ``3,461–3,972``; ``"-"`` when
    either end is missing."""
    if is_missing(low) or is_missing(high):
        return "-"
    return f"{significant(low, digits)}–{significant(high, digits)}"


def factor(ratio: Any) -> str:
    """A change from a ratio ``B/A`` as the pages write it (:func:`~profiling.reports.numbers.
    change_text`, the terminal's rule): ``+12.5%`` (``\u2212`` for a fall), and from 10x
    either way the factor, ``12.3x`` or ``1/12.3x``, which a percentage hides (``+1130%``)."""
    return change_text(None if is_missing(ratio) else float(ratio), minus="\u2212")


def chart_labels(names: Sequence[Any]) -> list[str]:
    """Each name as a chart's axis shows it (:func:`~profiling.reports.html.page.chart_label`,
    shortened in its middle), whole where shortening would make two alike: a category axis
    would draw them as one."""
    from .page import chart_label, escape

    shown = [chart_label(name) for name in names]
    counts = Counter(shown)
    return [label if counts[label] == 1 else escape(name) for name, label in zip(names, shown)]


def indent(depth: Any) -> str:
    """The indentation of a stage call of ``depth`` in a chart's axis or a table: an em space
    per level, at most :data:`MAX_INDENT`."""
    return "\u2003" * min(int(depth), MAX_INDENT)
