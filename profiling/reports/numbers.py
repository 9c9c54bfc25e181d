"""Numbers as people read them: three significant figures in every human-readable table (the
terminal, ``payload.log``, Markdown), written plainly on the report pages (:func:`plain`). CSV
files keep full precision."""

from __future__ import annotations

import math
from typing import Callable, Optional

__all__ = ["significant", "plain", "change_text", "log_ticks", "FACTOR_FROM"]


def significant(value: Optional[float], digits: int = 3, missing: str = "-") -> str:
    """``value`` rounded to ``digits`` significant figures, trailing zeros kept (``0.0261``,
    ``1.50``, ``112``).

    The integer part is never rounded away: from ``10**digits`` up the value is shown as a whole
    number (``11459``, not ``1.15e+04``). Below 0.001 (and not zero) it is shown in scientific
    notation (``1.23e-07``). ``None`` and NaN are ``missing``.
    """
    if value is None or math.isnan(float(value)):
        return missing
    value = float(value)
    if value == 0 or math.isinf(value):
        return "0" if value == 0 else str(value)
    if abs(value) < 1e-3:
        return f"{value:.{digits - 1}e}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{value:.{decimals}f}"
    if decimals and len(text.lstrip("-").replace(".", "").lstrip("0")) > digits:
        text = f"{value:.{decimals - 1}f}"  # 9.995 rounds up to 10.0: one decimal fewer
    return text


def plain(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant figures as the report pages write every number:
    thousands separators (``3,461``), never scientific notation (``0.000710``, not
    ``7.10e-04``), trailing zeros kept (``0.500``)."""
    if value == 0 or not math.isfinite(value):
        return significant(value, digits)
    if abs(value) >= 10 ** (digits - 1):
        return f"{round(value):,}"
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    text = f"{value:,.{decimals}f}"
    if len(text.lstrip("-").replace(".", "").replace(",", "").lstrip("0")) > digits:
        text = f"{value:,.{max(decimals - 1, 0)}f}"  # 9.995 rounds up to 10.0
    return text


#: From this ratio either way (B/A at least 10, or at most 1/10) a change is written as a
#: factor, which a percentage hides (``+1130%``, ``-98.7%``).
FACTOR_FROM = 10.0


def change_text(ratio: Optional[float], decimals: int = 1, minus: str = "-") -> str:
    """A change from the ratio B/A as every face writes it: ``+12.5%`` (a fall with
    ``minus``: the terminal's ``-``, the page's ``\u2212``), and from :data:`FACTOR_FROM`
    either way the factor, ``12.3x`` or ``1/12.3x``; ``-`` where there is no ratio."""
    if ratio is None or math.isnan(float(ratio)) or float(ratio) < 0:
        return "-"
    ratio = float(ratio)
    if ratio >= FACTOR_FROM:
        return f"{plain(ratio)}x"
    if 0 < ratio <= 1 / FACTOR_FROM:
        return f"1/{plain(1 / ratio)}x"
    return f"{(ratio - 1) * 100:+.{decimals}f}%".replace("-", minus)


def _full_number(value: float) -> str:
    """A tick's number in full: ``0.2``, ``5``, ``1,000`` (never a bare ``2`` for 0.2)."""
    return f"{value:,.12f}".rstrip("0").rstrip(".")


def log_ticks(low: float, high: float, label: Optional[Callable[[float], str]] = None
              ) -> tuple[list[float], list[str]]:
    """Tick values and labels for a log axis spanning ``low`` to ``high``: 1, 2 and 5 per
    decade up to three decades, one per decade beyond, each labelled in full by ``label``
    (default: ``0.2``, ``5``, ``1,000``). Plotly's own labels on a log axis are every digit
    between two decades on a narrow span and a bare ``2`` and ``5`` on a wide one, which read
    as 2 and 5, not 0.2 and 50. An axis narrower than one such step gets its two ends."""
    if not (low > 0 and high >= low and math.isfinite(high)):
        return [], []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = (1, 2, 5) if last - first <= 3 else (1,)
    values = [step * 10.0 ** decade for decade in range(first, last + 1) for step in steps]
    values = [round(value, 12) for value in values if low / 1.0001 <= value <= high * 1.0001]
    if len(values) < 2:
        values = sorted({float(f"{low:.2g}"), float(f"{high:.2g}")})
    return values, [(label or _full_number)(value) for value in values]
