"""Numbers as people read them: three significant figures in every human-readable table (the
terminal, ``payload.log``, Markdown), written plainly on the report pages (:func:`plain`). CSV
files keep full precision."""

from __future__ import annotations

import math
from typing import Optional

__all__ = ["significant", "plain", "change_text", "FACTOR_FROM"]


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
