"""Names shortened to fit a column of a terminal table."""

from __future__ import annotations

__all__ = ["shorten"]


def shorten(name: str, width: int) -> str:
    """``name`` cut in its middle to ``width`` characters (``...`` marks the cut), or whole
    when it fits: its end stays, which tells repeated blocks and the calls of one stage apart
    (``layer4.1.conv2[3]``)."""
    if len(name) <= width:
        return name
    keep = max(width - 3, 2)
    return name[:keep // 2] + "..." + name[-(keep - keep // 2):]
