"""The colour of a nesting depth, one for every face: the PNG plots (``payload.png``, the
roofline, a metric's bars) and the page's charts colour a stage call of depth ``d`` alike."""

from __future__ import annotations

__all__ = ["depth_colour", "DEPTH_COLOURS"]

#: matplotlib's ten default colours (``C0``..``C9``, the ``tab10`` map), in their order.
DEPTH_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf")


def depth_colour(depth: int) -> str:
    """The colour of nesting depth ``depth`` (``#rrggbb``): the top level ``C0``, the next
    ``C1``, ..., repeating after ten."""
    return DEPTH_COLOURS[int(depth) % len(DEPTH_COLOURS)]
