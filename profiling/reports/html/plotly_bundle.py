"""plotly.js as a page holds it: the installed ``plotly`` package's bundle with only the trace
types the page draws registered, gzip-compressed and base64-encoded.

plotly's full bundle registers some fifty trace types when it runs, and running that code is
most of the wait before a page's first chart (the browser compiles each module lazily, when
it is first called). The bundle is built by esbuild: each module is a function called once,
when first required, and the trace types are registered by one call,
``Plotly.register([A(), B(), ...])``, whose entries each require one trace module (whose
object says ``moduleType:"trace",name:"bar"``). :func:`partial_plotly_js` leaves out of that
list the trace modules a page does not draw, so their code never runs; everything else of
the bundle is unchanged. Where the bundle does not have that shape (another plotly version),
the page gets the whole bundle: the same charts, a longer wait.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable, Optional

from .packing import pack

__all__ = ["plotly_js", "partial_plotly_js", "packed_plotly_js", "trace_entries",
           "page_traces", "ALWAYS_REGISTERED"]

#: The trace types plotly's core registers itself, outside the register call.
ALWAYS_REGISTERED = frozenset({"scatter"})

#: The one call that registers the trace types: ``.register([A(),B(),...])``.
_REGISTER = re.compile(r"\.register\(\[((?:[\w$]+\(\),)+[\w$]+\(\))\]\)")
#: Where each module of the bundle begins: ``NAME=HELPER((exports,module)=>{``.
_MODULE = re.compile(r"[\s,;(]([\w$]+)=([\w$]+)\(\(([\w$]+),([\w$]+)\)=>\{")
#: What a trace module's object says of itself.
_TRACE = re.compile(r'moduleType:"trace",name:"(\w+)"')


def plotly_js() -> str:
    """The plotly.js bundle that the installed ``plotly`` package ships (minified, ~5 MB)."""
    from ...errors import require_extra

    require_extra("plotly", "report", "the HTML report")
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def trace_entries(bundle: str) -> Optional[tuple[re.Match, list[tuple[str, Optional[str]]]]]:
    """The register call of ``bundle`` and each of its entries with the trace type it
    registers (``None`` for an entry that is not a trace module); ``None`` where the bundle
    does not have the shape this module reads."""
    register = max(_REGISTER.finditer(bundle), key=lambda m: len(m.group(1)), default=None)
    if register is None:
        return None
    found = list(_MODULE.finditer(bundle))
    if not found:
        return None
    helpers = [match.group(2) for match in found]
    helper = max(set(helpers), key=helpers.count)  # esbuild's one module wrapper
    starts = [(match.start(1), match.group(1), match.group(4)) for match in found
              if match.group(2) == helper]
    where = {name: number for number, (_, name, _) in enumerate(starts)}

    def body(name: str) -> Optional[str]:
        number = where.get(name)
        if number is None:
            return None
        end = starts[number + 1][0] if number + 1 < len(starts) else len(bundle)
        return bundle[starts[number][0]:end]

    entries = []
    for call in register.group(1).split(","):
        wrapper = body(call[:-2])
        if wrapper is None:
            return None
        module_var = starts[where[call[:-2]]][2]
        inner = re.search(rf"{re.escape(module_var)}\.exports=([\w$]+)\(\)\}}\)", wrapper)
        trace = _TRACE.search(body(inner.group(1)) or "") if inner else None
        entries.append((call, trace.group(1) if trace else None))
    return register, entries


@functools.lru_cache(maxsize=8)
def partial_plotly_js(traces: frozenset) -> str:
    """:func:`plotly_js` registering only the trace types ``traces`` (with those of
    :data:`ALWAYS_REGISTERED`, which its core registers); the whole bundle where it cannot be
    read, or where it has no module for one of ``traces``."""
    bundle = plotly_js()
    found = trace_entries(bundle)
    wanted = set(traces) - ALWAYS_REGISTERED
    if found is None or not wanted <= {trace for _, trace in found[1]}:
        return bundle
    register, entries = found
    kept = [call for call, trace in entries if trace is None or trace in wanted]
    return bundle[:register.start(1)] + ",".join(kept) + bundle[register.end(1):]


@functools.lru_cache(maxsize=8)
def packed_plotly_js(traces: Optional[frozenset] = None) -> str:
    """The bundle a page holds: :func:`partial_plotly_js` of ``traces`` (every trace type
    when ``None``), packed by :func:`~.packing.pack` (2 MB instead of 5)."""
    return pack(plotly_js() if traces is None else partial_plotly_js(frozenset(traces)))


def page_traces(charts: Iterable[dict]) -> frozenset:
    """The trace types of a page's charts (plotly figures as JSON data)."""
    return frozenset(str(trace.get("type") or "scatter") for figure in charts
                     for trace in figure.get("data") or ())
