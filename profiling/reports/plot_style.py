"""What every PNG plot shares: how a name is written on it and how a figure becomes PNG
bytes."""

from __future__ import annotations

import functools
import io
from typing import Any

import numpy as np

from matplotlib.figure import Figure

from .labels import PLOT_NAME_WIDTH, plot_label as _shown_name

__all__ = ["plot_label", "png", "log_if_wide", "LOG_SPAN"]

#: An axis whose positive values span more than this ratio is drawn logarithmic.
LOG_SPAN = 100.0


def png(figure: Figure) -> bytes:
    """``figure`` as PNG bytes (110 dpi, cropped to what is drawn)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


@functools.lru_cache(maxsize=None)
def _drawable() -> frozenset:
    """The characters that both fonts of the plots (their text, and the roofline's monospace
    list) can draw: matplotlib's default ones, or those the user configured."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    fonts = [font_manager.findfont(font_manager.FontProperties(family=[family]))
             for family in ("sans-serif", "monospace")]
    return frozenset.intersection(*(frozenset(FT2Font(path).get_charmap()) for path in fonts))


def plot_label(name: Any, width: int = PLOT_NAME_WIDTH) -> str:
    """``name`` as the plots show it (:func:`profiling.reports.labels.plot_label`: printable,
    shortened, never mathtext), each character their fonts cannot draw written as its escape
    (``\\u30ab``): an empty box tells nothing, and matplotlib warns about each one."""
    drawable = _drawable()
    return "".join(char if ord(char) in drawable or char == " " else
                   (f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
                   for char in _shown_name(name, width))


def log_if_wide(axes, values, axis: str = "y") -> bool:
    """Make ``axis`` logarithmic when the positive ``values`` span more than two decades, and
    say so in its label; ``True`` when it did."""
    positive = np.asarray(values, dtype=float)
    positive = positive[np.isfinite(positive) & (positive > 0)]
    if len(positive) < 2 or positive.max() / positive.min() <= LOG_SPAN:
        return False
    getattr(axes, f"set_{axis}scale")("log")
    label = getattr(axes, f"get_{axis}label")()
    getattr(axes, f"set_{axis}label")(f"{label} (log scale)" if label else "log scale")
    return True
