"""How the report pages write numbers and name stage calls."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..numbers import significant as rounded

__all__ = ["stage_key", "stage_label", "significant", "is_missing"]


def stage_key(stage: Any, call_index: Any) -> str:
    """The one name of a stage call that every chart and table row of a page shares:
    ``"name#call"``."""
    return f"{stage}#{int(call_index) if not is_missing(call_index) else 0}"


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
    """``value`` to ``digits`` significant figures as every human-readable table writes it
    (:func:`profiling.reports.numbers.significant`); ``"-"`` for any missing value."""
    return "-" if is_missing(value) else rounded(float(value), digits)
