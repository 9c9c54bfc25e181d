"""Split-point analysis: where to cut a forward between an edge device and a server.

:func:`~profiling.runner.analyse_cuts` runs one forward under
:class:`~profiling.collectors.liveness.Liveness` and gives a :class:`SplitAnalysis`: it takes as candidate cuts the input, the end of every top-level stage call, the output, and
as asked the end of every module call down to a depth of the module tree (``depth``: the
point where a block's output is complete, whatever stages the model declares) or every
operator boundary (``every_op``). For each candidate the liveness gives the tensors alive
across it, so skips, FPNs and two-image matching are handled exactly, with no assumption of a
sequential model. :func:`cut_table` lists every candidate with its bytes under each encoding
(:mod:`profiling.split.encodings`), the FLOPs and bytes done on the device before it, and marks the
minimum-bytes cut and the Pareto front. The latency model of one inference cut at ``c``, for
a link of bandwidth ``B`` (Mbit/s, 1e6 bits per second) and round-trip time ``RTT`` (ms)::

    latency(c) = device_ms(c) + RTT + bytes(c) * 8 / (B * 1e6) * 1e3 + server_ms(c)

lives in :mod:`profiling.split.latency`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional, Sequence, Union

import numpy as np
import pandas as pd

from .cuts import Cut
from .encodings import SIZE_ENCODINGS
from ..counting.roofline import Ceilings, roofline_seconds

__all__ = ["SplitAnalysis", "cut_table", "pareto_front", "DEFAULT_CODECS"]

#: The codecs measured unless others are asked for: zlib alone, so that a CPU analysis stays
#: within seconds (with it, int8+zlib adds a quarter of zlib's time and zstd next to nothing;
#: lzma costs eight times as much: GMFlow at 384x768, docs/split.md).
DEFAULT_CODECS = ("zlib",)


@dataclass
class SplitAnalysis:
    """What :func:`~profiling.runner.analyse_cuts` found: the candidate cuts and the forward's timeline.

    Attributes:
        cuts: every candidate cut, in forward order.
        timeline: raw bytes alive after each operator (index 0: before the first).
        op_names, op_flops, op_bytes: each operator's name, FLOPs and bytes read and written
            (index ``k`` for operator ``k``; index 0 is empty).
        stage_spans: ``(stage, call_index, first, last)`` of each top-level stage call: it
            runs the operators after ``first`` up to ``last``.
        codecs: the codecs measured (none on the meta device).
    """

    cuts: list[Cut]
    timeline: np.ndarray
    op_names: list[str]
    op_flops: np.ndarray
    op_bytes: np.ndarray
    stage_spans: list[tuple[str, int, int, int]]
    codecs: tuple[str, ...]

    def __iter__(self) -> Iterator[Cut]:
        return iter(self.cuts)

    def __len__(self) -> int:
        return len(self.cuts)


def pareto_front(costs: Sequence[float], sizes: Sequence[float]) -> np.ndarray:
    """Whether each point is on the Pareto front of (cost, size), both to be minimised: no
    other point is as good in both and better in one. Equal points are all on it."""
    costs, sizes = np.asarray(costs, float), np.asarray(sizes, float)
    order = np.lexsort((sizes, costs))
    front = np.zeros(len(costs), bool)
    best = np.inf  # smallest size among points of lower cost
    start = 0
    while start < len(order):
        end = start
        while end < len(order) and costs[order[end]] == costs[order[start]]:
            end += 1
        group = order[start:end]
        smallest = sizes[group].min()
        if smallest < best:
            front[group[sizes[group] == smallest]] = True
            best = smallest
        start = end
    return front


def _stage_positions(analysis: SplitAnalysis, position: int) -> tuple[int, float]:
    """The top-level stage call a cut at ``position`` is in or last finished (its index in
    forward order, -1 before any), and the fraction of its FLOPs done before the cut (by
    operator count when it has none)."""
    index, fraction = -1, 0.0
    for i, (_, _, first, last) in enumerate(analysis.stage_spans):
        if first >= position and not (first == last == position):
            break
        index = i
        if position >= last:
            fraction = 1.0
        else:
            flops = analysis.op_flops[first + 1:last + 1]
            done = flops[:position - first]
            fraction = (float(done.sum()) / float(flops.sum()) if flops.sum() > 0
                        else (position - first) / (last - first))
    return index, fraction


def cut_table(analysis: Union[SplitAnalysis, Sequence[Cut]],
              ceilings: Optional[Ceilings] = None, dtype: str = "float32") -> pd.DataFrame:
    """One row per candidate cut, in forward order.

    Columns: ``cut``, ``kind`` (input, stage, module, op, output), ``stage`` and
    ``call_index`` (of a stage cut), ``position`` (operators before it), ``tensors``, the bytes
    ``raw_bytes``, ``fp16_bytes``, ``int8_bytes`` and ``<codec>_bytes`` per codec measured,
    ``device_flops`` and ``device_bytes`` (FLOPs and bytes read and written by the operators
    before the cut), ``top_index`` and ``top_fraction`` (the top-level stage call the cut is
    in or follows, and the share of its FLOPs done before the cut; used to apportion stage
    times), ``min_cut`` (the fewest raw bytes of the cuts strictly inside the forward: work done
    on both sides, so neither the trivial ends nor a cut after every counted operator, which
    is the output; the first if several) and ``pareto`` (on the front of raw bytes against device FLOPs). With
    ``ceilings``, also ``device_estimate_ms``: the roofline bound of the device side, summed
    over the operators before the cut (see :func:`~profiling.counting.roofline_seconds`).
    """
    if not isinstance(analysis, SplitAnalysis):
        cuts = list(analysis)
        codecs = tuple(k for k in (cuts[0].sizes if cuts else {}) if k not in SIZE_ENCODINGS)
        analysis = SplitAnalysis(cuts, np.zeros(0), [], np.zeros(1, np.int64),
                                 np.zeros(1, np.int64), [], codecs)
    flops = np.cumsum(analysis.op_flops)
    traffic = np.cumsum(analysis.op_bytes)
    estimate = None
    if ceilings is not None:
        estimate = np.cumsum(roofline_seconds(analysis.op_flops, analysis.op_bytes, ceilings,
                                              dtype)) * 1e3
    rows = []
    for cut in analysis.cuts:
        position = min(cut.position, len(flops) - 1)
        index, fraction = _stage_positions(analysis, cut.position)
        row = {"cut": cut.name, "kind": cut.kind, "stage": cut.stage,
               "call_index": cut.call_index,
               "depth": cut.call.depth if cut.call is not None else None,
               "position": cut.position,
               "tensors": len(cut.tensors)}
        row.update({f"{name}_bytes": cut.sizes.get(name) for name in
                    SIZE_ENCODINGS + tuple(analysis.codecs)})
        row.update({"device_flops": int(flops[position]), "device_bytes": int(traffic[position]),
                    "top_index": index, "top_fraction": fraction})
        if estimate is not None:
            row["device_estimate_ms"] = float(estimate[position])
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    inside = ~table["kind"].isin(["input", "output"]) & (table["device_flops"] > 0) \
        & (table["device_flops"] < int(flops[-1]))
    table["min_cut"] = False
    if inside.any():
        table.loc[table.loc[inside, "raw_bytes"].idxmin(), "min_cut"] = True
    table["pareto"] = pareto_front(table["device_flops"], table["raw_bytes"])
    return table
