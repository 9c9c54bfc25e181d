"""Split-point analysis: where to cut a forward between an edge device and a server.

For every cut (before the forward, after each top-level stage call, after the forward) the
bytes alive across it come from :class:`~profiling.collectors.liveness.Liveness`; the time on
each side comes from the stage tables (``stages.csv``) of two runs, one on the edge device and
one on the server. The latency model of one inference cut at ``c``, for a link of bandwidth
``B`` (Mbit/s, 1e6 bits per second) and round-trip time ``RTT`` (ms)::

    latency(c) = device_ms(c) + RTT + bytes(c) * 8 / (B * 1e6) * 1e3 + server_ms(c)

``device_ms(c)`` sums the top-level stages up to the cut on the device run, ``server_ms(c)``
those after it on the server run (time between top-level stages is not attributed to either
side). The device sends what is alive across the cut once, and the answer's transfer is
neglected (one RTT). The last cut sends the forward's outputs, so it is the device-only case
with its results delivered to the server; the first sends the inputs (server only).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence, Union

import pandas as pd
import torch

from .aggregate import time_column
from .attach import attach_stages
from .collectors.liveness import Cut, Liveness
from .errors import ProfilingError
from .runner import call_model
from .session import Session

__all__ = ["analyse_cuts", "cut_table", "top_level_times", "split_latency", "best_cuts",
           "ENCODINGS"]

#: The encodings of a cut's bytes, as columns of :func:`cut_table`.
ENCODINGS = ("raw", "fp16", "int8", "compressed")


def analyse_cuts(model: torch.nn.Module, inputs: Union[Sequence[Any], Mapping[str, Any]], *,
                 attach: Optional[Mapping[str, str]] = None, codec: Optional[str] = "zlib"
                 ) -> list[Cut]:
    """Run one forward under the liveness collector and return its cuts, in forward order.

    Args:
        model: a staged model (markers in its code or ``attach``).
        inputs: positional (a sequence) or keyword (a mapping) arguments of the forward.
        attach: extra stages attached to submodules, ``{stage: module_path}``.
        codec: compression codec of :data:`~profiling.collectors.liveness.CODECS`, or ``None``.
    """
    liveness = Liveness(inputs=inputs, codec=codec)
    with torch.inference_mode(), attach_stages(model, attach or {}), Session([liveness]) as session:
        with session.forward():
            output = call_model(model, inputs)
            liveness.set_outputs(output)  # kept alive until the cut after the forward is taken
    del output
    return liveness.cuts


def cut_table(cuts: Sequence[Cut], codec: Optional[str] = None) -> pd.DataFrame:
    """One row per cut: ``cut``, ``stage``, ``call_index``, ``position``, ``tensors`` and the
    bytes ``raw_bytes``, ``fp16_bytes``, ``int8_bytes``, ``compressed_bytes`` (empty when not
    measured), plus ``codec``."""
    return pd.DataFrame([{
        "cut": cut.name, "stage": cut.stage, "call_index": cut.call_index,
        "position": cut.position, "tensors": len(cut.tensors), "raw_bytes": cut.raw_bytes,
        "fp16_bytes": cut.fp16_bytes, "int8_bytes": cut.int8_bytes,
        "compressed_bytes": cut.compressed_bytes, "codec": codec} for cut in cuts])


def top_level_times(stages: pd.DataFrame, statistic: str = "median") -> pd.Series:
    """Time (ms) of each top-level stage call, indexed by ``(stage, call_index)``.

    CUDA time where the run measured it, else CPU time.
    """
    column = time_column(stages, statistic)
    if column is None:
        raise ProfilingError("the run has no stage times (cpu_time or cuda_time); profile it "
                             "on a real device, not on meta")
    rows = stages[(stages["depth"] == 0) & (stages["kind"] == "stage")]
    return rows.set_index(["stage", "call_index"])[column].astype(float)


def _side_times(cuts: pd.DataFrame, times: pd.Series, side: str) -> list[float]:
    """Cumulated time of the top-level stages up to each cut."""
    total, cumulated = 0.0, []
    for _, row in cuts.iterrows():
        if pd.notna(row["stage"]):
            key = (row["stage"], int(row["call_index"]))
            if key not in times.index:
                raise ProfilingError(f"stage {row['cut']} of the analysis is not in the {side} "
                                     f"run; the runs and the analysis must use the same model "
                                     f"and input")
            total += float(times[key])
        cumulated.append(total)
    return cumulated


def split_latency(cuts: pd.DataFrame, device_stages: pd.DataFrame,
                  server_stages: pd.DataFrame, bandwidths_mbit: Sequence[float],
                  rtt_ms: float, statistic: str = "median") -> pd.DataFrame:
    """End-to-end latency of every cut, encoding and bandwidth (the model of this module).

    Args:
        cuts: a :func:`cut_table`.
        device_stages, server_stages: the ``stages.csv`` tables of the two runs.
        bandwidths_mbit: link bandwidths in Mbit/s.
        rtt_ms: the round-trip time in ms.
        statistic: which time statistic of the runs to use (``median``, ``mean``, ...).

    Returns:
        One row per cut, encoding (of :data:`ENCODINGS` with measured bytes) and bandwidth:
        ``cut``, ``encoding``, ``bandwidth_mbit``, ``bytes``, ``device_ms``, ``transfer_ms``,
        ``rtt_ms``, ``server_ms``, ``latency_ms``.
    """
    if any(float(b) <= 0 for b in bandwidths_mbit):
        raise ProfilingError(f"bandwidths must be positive Mbit/s, got {list(bandwidths_mbit)}")
    device = _side_times(cuts, top_level_times(device_stages, statistic), "device")
    server = _side_times(cuts, top_level_times(server_stages, statistic), "server")
    rows = []
    for i, (_, cut) in enumerate(cuts.iterrows()):
        for encoding in ENCODINGS:
            size = cut[f"{encoding}_bytes"]
            if size is None or pd.isna(size):
                continue
            for bandwidth in bandwidths_mbit:
                transfer = float(size) * 8 / (float(bandwidth) * 1e6) * 1e3
                server_ms = server[-1] - server[i]
                rows.append({"cut": cut["cut"], "encoding": encoding,
                             "bandwidth_mbit": float(bandwidth), "bytes": int(size),
                             "device_ms": device[i], "transfer_ms": transfer,
                             "rtt_ms": float(rtt_ms), "server_ms": server_ms,
                             "latency_ms": device[i] + float(rtt_ms) + transfer + server_ms})
    return pd.DataFrame(rows)


def best_cuts(latency: pd.DataFrame) -> pd.DataFrame:
    """The lowest-latency cut per encoding and bandwidth (the first cut on a tie)."""
    best = latency.loc[latency.groupby(["encoding", "bandwidth_mbit"], sort=False)
                       ["latency_ms"].idxmin()]
    return best.reset_index(drop=True)
