"""The one self-contained HTML file every report is: plotly.js (only the trace types the page
draws registered: :mod:`.plotly_bundle`) and the page's data, both packed by
:func:`~.packing.pack` and unpacked by the browser, and the page's script, inlined, nothing
loaded from the network, so the page opens from disk or an e-mail attachment.

A page is a header (a title and ``label: value`` facts) and sections, each a heading, a note
and HTML (charts are ``<div class="chart" id=...>`` placeholders that ``assets/report.js``
draws from the figures in the page's data).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Mapping, Optional, Sequence

from ...errors import require_extra
from ..labels import printable, shorten
from .packing import pack, unpack
from .plotly_bundle import packed_plotly_js, page_traces

__all__ = ["Page", "Section", "chart_placeholder", "escape", "chart_label", "to_json",
           "page_data", "shown_html", "CHART_NAME_WIDTH"]

#: The longest name a chart's axis, legend or block shows before shortening it in its middle
#: (its hover text shows it whole).
CHART_NAME_WIDTH = 48

#: Each character that HTML or plotly's text would read as markup, and the entity both read
#: back as the character: ``{`` too, so that a name inside a plotly hover template is never
#: read as a ``%{...}`` field. Numeric entities, since plotly decodes no named one but these.
_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;",
                           "{": "&#123;"})


def escape(text: Any) -> str:
    """``text`` as the text of a page: :func:`~profiling.reports.labels.printable` (control
    characters and bidirectional overrides as their escapes), then ``& < > " ' {`` as
    entities. The one escape of every page, for its HTML (text and attribute values alike)
    and for every string its charts show (plotly reads the same entities in labels, legends,
    ticks and hover templates)."""
    return printable(text).translate(_ENTITIES)


def chart_label(name: Any, width: int = CHART_NAME_WIDTH) -> str:
    """``name`` as a chart's axis, legend or block shows it: shortened in its middle to
    ``width`` characters, then :func:`escape`."""
    return escape(shorten(name, width))


def _plotly() -> Any:
    return require_extra("plotly", "report", "the HTML report")


#: What could end or open a ``<script>`` element's text, as the JSON escapes that mean the
#: same characters (they can only stand inside JSON strings).
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                              "\u2028": "\\u2028", "\u2029": "\\u2029"})


def to_json(data: Any) -> str:
    """``data`` (dicts, lists, numpy arrays, plotly figures) as JSON that is safe inside a
    ``<script>`` element: no ``<``, ``>`` or ``&`` is left that could close it (``</script>``)
    or open a comment in it, whatever plotly's encoder escapes."""
    _plotly()
    from plotly.io.json import to_json_plotly

    return to_json_plotly(data).translate(_SCRIPT_SAFE)


#: The element that holds a page's data, packed.
_PACKED_DATA = re.compile(r'<script type="application/octet-stream" id="report-data">'
                          r"([A-Za-z0-9+/=\s]*)</script>")


def page_data(page_html: str) -> dict:
    """The data a page holds (``kind``, ``charts`` and what its kind adds), unpacked and read
    as the page's script reads it; plotly's numeric arrays stay as it wrote them (``bdata``).
    For tools and tests that read a written page back."""
    found = _PACKED_DATA.search(page_html)
    if found is None:
        raise ValueError("not a stagezoo report page: it holds no packed report-data element")
    return json.loads(unpack(found.group(1)))


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def chart_placeholder(chart_id: str, height: Optional[int] = None) -> str:
    """The element a chart of the page's data (``charts``, by ``id``) is drawn into."""
    style = f' style="height:{int(height)}px;min-height:0"' if height else ""
    return f'<div class="chart" id="{escape(chart_id)}"{style}></div>'


def _sized(body: str, charts: Mapping[str, Any]) -> str:
    """``body`` with each chart's placeholder as high as its figure (``layout.height``), so
    that the page does not move when plotly draws it, nor the chart spill over what follows
    (a placeholder is 320 px unless told)."""
    for chart_id, figure in charts.items():
        height = (figure.get("layout") or {}).get("height")
        if height:
            body = body.replace(f'<div class="chart" id="{escape(chart_id)}"></div>',
                                chart_placeholder(chart_id, height))
    return body


@dataclass
class Section:
    """One part of a page: a heading, a note under it (plain text) and its HTML body.
    ``packed``: the body travels in the page's packed data (a table with a row per stage
    call: an eighth of its size there), put in place by ``assets/loader.js``; it needs an
    ``anchor``, its key there."""

    title: str
    body: str
    note: str = ""
    anchor: str = ""
    packed: bool = False

    def render(self) -> str:
        """The section's HTML (a packed body as its empty slot)."""
        anchor = f' id="section-{escape(self.anchor)}"' if self.anchor else ""
        note = f'<p class="note">{escape(self.note)}</p>' if self.note else ""
        body = _packed_slot(self.anchor) if self.packed else self.body
        return f"<section{anchor}><h2>{escape(self.title)}</h2>{note}{body}</section>"


def _packed_slot(key: str) -> str:
    return (f'<div data-packed="{escape(key)}"><noscript>This table travels packed in the '
            f"page's data: open the page with JavaScript on, or read the CSV files beside "
            f"it.</noscript></div>")


#: The slot of a packed section's body.
_SLOT = re.compile(r'<div data-packed="([^"]*)">.*?</div>', re.S)


def shown_html(page_html: str) -> str:
    """The page as the browser shows it once ``assets/loader.js`` has run: each packed
    section's body (the page data's ``packed_html``) in its slot. For tools and tests that
    read a written page's tables."""
    bodies = page_data(page_html).get("packed_html") or {}
    return _SLOT.sub(lambda found: bodies.get(html.unescape(found.group(1)), found.group(0)),
                     page_html)


@dataclass
class Page:
    """A report page: its kind (``run``, ``comparison``, ``sweep``), title, facts for the
    header, sections, the figures of its charts (``{id: plotly figure}``) and more data for
    its script; a run's page adds the strip of its headline figures (``label, value``) and
    a banner (the noise verdict, when its timings are unreliable) and links to the files
    beside it (``text, relative href``)."""

    kind: str
    title: str
    facts: Sequence[tuple[str, str]] = ()
    sections: list[Section] = field(default_factory=list)
    charts: dict[str, Any] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)
    warnings: Sequence[str] = ()
    strip: Sequence[tuple[str, str]] = ()
    banner: str = ""
    links: Sequence[tuple[str, str]] = ()

    def _header(self) -> str:
        facts = "".join(f"<dt>{escape(label)}</dt><dd>{escape(value)}</dd>"
                        for label, value in self.facts)
        warnings = "".join(f'<p class="warning">{escape(w)}</p>' for w in self.warnings)
        banner = f'<p class="banner">{escape(self.banner)}</p>' if self.banner else ""
        strip = "".join(f'<div><span>{escape(label)}</span><b>{escape(value)}</b></div>'
                        for label, value in self.strip)
        strip = f'<div class="strip">{strip}</div>' if strip else ""
        links = " ".join(f'<a href="{escape(href)}">{escape(text)}</a>'
                         for text, href in self.links)
        links = f'<p class="links">{links}</p>' if links else ""
        return (f'<header><h1>{escape(self.title)}</h1>{banner}{strip}'
                f'<dl class="facts">{facts}</dl>{links}{warnings}</header>')

    def render(self) -> str:
        """The whole page, one string of HTML."""
        charts = {key: (figure.to_plotly_json() if hasattr(figure, "to_plotly_json")
                        else figure) for key, figure in self.charts.items()}
        packed = {section.anchor: _sized(section.body, charts) for section in self.sections
                  if section.packed}
        payload = to_json({"kind": self.kind, "charts": charts, **self.data,
                           **({"packed_html": packed} if packed else {})})
        body = _sized("".join(section.render() for section in self.sections), charts)
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{escape(self.title)}</title><style>{_asset('report.css')}</style>"
                f"</head><body data-page=\"{escape(self.kind)}\">{self._header()}<main>{body}"
                "</main><div id=\"report-errors\" hidden></div>"
                "<script type=\"application/octet-stream\" id=\"report-data\">"
                f"{pack(payload)}</script>"
                f"<script type=\"text/plain\" id=\"report-script\">{_asset('report.js')}"
                f"</script><script type=\"application/octet-stream\" id=\"plotly-gzip\">"
                f"{packed_plotly_js(page_traces(charts.values()))}</script>"
                f"<script>{_asset('loader.js')}</script>"
                "</body></html>\n")
