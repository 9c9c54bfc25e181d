"""Text as a page holds it packed: gzip-compressed, then base64-encoded, in a
``<script type="application/octet-stream">`` element that ``assets/loader.js`` unpacks with the
browser's own ``DecompressionStream`` before the page's script runs. One packing serves
plotly.js (a third of its size) and the page's data (its charts' figures and its rows, which
grow with every stage call and shrink to an eighth or less: the names and keys repeat).

The packed text is base64's letters only, so nothing in it can end a ``<script>`` element.
"""

from __future__ import annotations

import base64
import gzip

__all__ = ["pack", "unpack"]


def pack(text: str) -> str:
    """``text`` (UTF-8) gzip-compressed at the highest level, with no timestamp (the same text
    packs to the same page), then base64-encoded."""
    packed = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode("ascii")


def unpack(packed: str) -> str:
    """The text that :func:`pack` packed into ``packed`` (what ``loader.js`` does in the
    browser)."""
    return gzip.decompress(base64.b64decode(packed.strip(), validate=True)).decode("utf-8")
