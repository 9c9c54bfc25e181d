"""How the report pages write numbers and name stage calls."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

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
    """``value`` to ``digits`` significant figures, without an exponent below 1e6
    (``"-"`` when missing); integers of up to 6 digits as they are."""
    if is_missing(value):
        return "-"
    number = float(value)
    if not math.isfinite(number):
        return str(number)
    if number == 0:
        return "0"
    if abs(number) >= 1e6:
        return f"{number:.{digits - 1}e}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(number))))
    return f"{number:,.{decimals}f}"
