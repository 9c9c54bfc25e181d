"""An executed cut's measurement beside its estimate: the rows of ``executed.csv``.

Each configuration (cut, encoding, link) is run ``repeats`` times; :func:`executed_row`
gives its medians, the interval of the end-to-end median
(:func:`~profiling.statistics.median_interval`) and two estimates:

``estimated_ms``, the formula of :mod:`profiling.split.latency` with this run's own measured
parts (head and tail medians) and the link's measured RTT::

    estimated = head + RTT + bytes * 8 / B + tail

``estimated_terms_ms``, the same with the terms the measurement shows to be systematic:

* ``codec``: encode (head) + decode (server) medians: compressing is not free.
* ``skip``: the tail passing the head's operators without computing them (an allocation each).
* ``framing``: what the wire carries besides the payload: the frame's header and, per TCP
  segment of :data:`MSS` payload bytes, :data:`SEGMENT_OVERHEAD` bytes of Ethernet, IP and TCP
  headers (tbf counts them against the rate).
* ``slow start``: TCP opens each connection, and reopens after an idle spell, with
  :data:`INITIAL_WINDOW` segments and doubles per RTT: until the window carries the
  bandwidth-delay product, a round trip is waited each round (:func:`slow_start_ms`).

``error`` and ``error_terms`` are (estimate - measured) / measured. Where ``|error|`` passes
:data:`DISAGREEMENT`, ``differs`` names the part whose measurement is farthest from the
formula's share.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..statistics.intervals import median_interval
from .link import TBF_BURST_BYTES

__all__ = ["MSS", "SEGMENT_OVERHEAD", "INITIAL_WINDOW", "DISAGREEMENT", "slow_start_ms",
           "framing_bytes", "executed_row", "best_measured_and_estimated"]

#: TCP payload bytes per segment on a 1500-byte MTU with timestamps.
MSS = 1448
#: Bytes on the wire per segment besides its payload: Ethernet 14, IPv4 20, TCP 20 + 12
#: (timestamps).
SEGMENT_OVERHEAD = 66
#: Linux's initial congestion window, in segments (RFC 6928).
INITIAL_WINDOW = 10
#: A relative disagreement beyond which a run names the part that differs.
DISAGREEMENT = 0.25
#: The parts of a measurement, as (column, what the formula has for it).
PARTS = ("head_ms", "encode_ms", "transfer_ms", "decode_ms", "skip_ms", "tail_ms")


def framing_bytes(payload: float) -> float:
    """The bytes a TCP stream of ``payload`` bytes puts on an Ethernet wire."""
    return payload + math.ceil(payload / MSS) * SEGMENT_OVERHEAD


def slow_start_ms(wire_bytes: float, bandwidth_mbit: float, rtt_ms: float) -> float:
    """The time TCP's slow start adds to sending ``wire_bytes`` over a link of
    ``bandwidth_mbit`` and ``rtt_ms``: each round while the window (``INITIAL_WINDOW``
    segments, doubling) is below the bandwidth-delay product waits out an RTT instead of
    sending at the line rate."""
    if rtt_ms <= 0 or bandwidth_mbit <= 0:
        return 0.0
    per_ms = bandwidth_mbit * 1e3 / 8  # bytes per ms
    window, left, extra = INITIAL_WINDOW * (MSS + SEGMENT_OVERHEAD), wire_bytes, 0.0
    while left > window and window < per_ms * rtt_ms:
        extra += rtt_ms - window / per_ms  # the round lasts an RTT, its bytes take less
        left -= window
        window *= 2
    return extra


def _median(samples: Mapping[str, Sequence[float]], key: str) -> float:
    return float(np.median(samples[key])) if len(samples[key]) else math.nan


def _differs(parts: Mapping[str, float], formula_transfer: float) -> str:
    """The part farthest from what the formula gives it."""
    gaps = {"transfer": parts["transfer_ms"] - formula_transfer,
            "encode (not in the formula)": parts["encode_ms"],
            "decode (not in the formula)": parts["decode_ms"],
            "skip (not in the formula)": parts["skip_ms"]}
    name, gap = max(gaps.items(), key=lambda item: abs(item[1]))
    return f"{name}: {gap:+.1f} ms"


def executed_row(samples: Mapping[str, Sequence[float]], *, sent_bytes: int,
                 header_bytes: int, bandwidth_mbit: float, rtt_ms: float) -> dict:
    """One configuration's row: medians of ``samples`` (lists per part and ``end_to_end_ms``),
    the interval, and the estimates of the module's docstring. ``bandwidth_mbit`` is the
    shaped rate (or the measured throughput of an unshaped link)."""
    parts = {key: _median(samples, key) for key in PARTS}
    measured = _median(samples, "end_to_end_ms")
    low, high = median_interval(samples["end_to_end_ms"])
    per_ms = bandwidth_mbit * 1e3 / 8
    formula_transfer = sent_bytes / per_ms
    estimated = parts["head_ms"] + rtt_ms + formula_transfer + parts["tail_ms"]
    wire = framing_bytes(sent_bytes)
    terms = {"codec_term_ms": parts["encode_ms"] + parts["decode_ms"],
             "skip_term_ms": parts["skip_ms"],
             "framing_term_ms": (wire - sent_bytes) / per_ms,
             "slow_start_term_ms": slow_start_ms(wire, bandwidth_mbit, rtt_ms)}
    with_terms = estimated + sum(terms.values())
    error = (estimated - measured) / measured
    return {"sent_bytes": sent_bytes, "header_bytes": header_bytes,
            "measured_ms_median": measured, "measured_ms_low": low, "measured_ms_high": high,
            **parts, "estimated_ms": estimated, "error": error, **terms,
            "estimated_terms_ms": with_terms, "error_terms": (with_terms - measured) / measured,
            "wire_floor_ms": max(wire - TBF_BURST_BYTES, 0) / per_ms,
            "transfer_min_ms": float(np.min(samples["transfer_ms"])),
            "differs": _differs(parts, formula_transfer + rtt_ms / 2)
            if abs(error) > DISAGREEMENT else ""}


def best_measured_and_estimated(executed: pd.DataFrame) -> pd.DataFrame:
    """Per encoding and bandwidth: the cut measured fastest beside the cut the estimate (with
    its terms) puts first, and their latencies."""
    rows = []
    for (encoding, bandwidth), group in executed.groupby(["encoding", "bandwidth_mbps"],
                                                         sort=False, dropna=False):
        measured = group.loc[group["measured_ms_median"].idxmin()]
        estimated = group.loc[group["estimated_terms_ms"].idxmin()]
        rows.append({"encoding": encoding, "bandwidth_mbps": bandwidth,
                     "measured_best": measured["cut"],
                     "measured_ms": measured["measured_ms_median"],
                     "estimated_best": estimated["cut"],
                     "estimated_ms": estimated["estimated_terms_ms"],
                     "same": measured["cut"] == estimated["cut"]})
    return pd.DataFrame(rows)
