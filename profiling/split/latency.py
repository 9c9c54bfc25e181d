"""End-to-end latency of each cut of a :func:`profiling.split.cut_table`.

The latency model of one inference cut at ``c``, for a link of bandwidth ``B`` (Mbit/s, 1e6
bits per second) and round-trip time ``RTT`` (ms)::

    latency(c) = device_ms(c) + RTT + bytes(c) * 8 / (B * 1e6) * 1e3 + server_ms(c)

``device_ms(c)`` is the time of the forward up to the cut on the device, ``server_ms(c)`` the
time after it on the server. From a run's ``stages.csv``: the top-level stage calls before
the cut, plus, for a cut inside a top-level stage call, the share of that call's time equal
to the share of its FLOPs done before the cut (time between top-level stages is attributed to
neither side). Without a device run, ``device_ms`` is the table's ``device_estimate_ms``: the
roofline bound of a device preset (:func:`profiling.counting.roofline_seconds`), a lower
bound, not a measurement. The device sends what is alive across the cut once, and the
answer's transfer is neglected (one RTT). The last cut sends the forward's outputs (device
only, results delivered to the server); the first sends the inputs (server only).
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from ..statistics.aggregate import time_column
from ..errors import ProfilingError

__all__ = ["top_level_times", "split_latency", "best_cuts", "encodings_of", "check_link"]


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


def encodings_of(cuts: pd.DataFrame) -> list[str]:
    """The encodings a cut table has bytes for (``raw``, ``fp16``, ..., each codec)."""
    return [c[:-len("_bytes")] for c in cuts.columns
            if c.endswith("_bytes") and c != "device_bytes" and cuts[c].notna().any()]


def check_link(bandwidths_mbit: Sequence[float], rtt_ms: float) -> None:
    """Refuse a bandwidth that is not a positive finite number, or an RTT that is not a
    finite number >= 0, in one line."""
    if not bandwidths_mbit or any(not (math.isfinite(float(b)) and float(b) > 0)
                                  for b in bandwidths_mbit):
        raise ProfilingError(f"bandwidths must be positive finite Mbit/s, got "
                             f"{[float(b) for b in bandwidths_mbit]}")
    if not (math.isfinite(float(rtt_ms)) and float(rtt_ms) >= 0):
        raise ProfilingError(f"the RTT must be a finite number of ms >= 0, got {rtt_ms}")


def _cumulated(cuts: pd.DataFrame, stages: pd.DataFrame, side: str, statistic: str
               ) -> np.ndarray:
    """Time of the forward up to each cut, from a run's top-level stage times."""
    times = top_level_times(stages, statistic)
    calls = cuts[(cuts["kind"] == "stage") & (cuts["depth"] == 0)]
    durations = []
    for _, row in calls.iterrows():
        key = (row["stage"], int(row["call_index"]))
        if key not in times.index:
            raise ProfilingError(f"stage {row['cut']} of the analysis is not in the {side} "
                                 f"run; the runs and the analysis must use the same model "
                                 f"and input")
        durations.append(float(times[key]))
    before = np.concatenate([[0.0], np.cumsum(durations)])
    index = cuts["top_index"].to_numpy(int)
    fraction = cuts["top_fraction"].to_numpy(float)
    spent = np.where(index >= 0, before[np.maximum(index, 0)], 0.0)
    current = np.array(durations + [0.0])[index]
    return spent + np.where(index >= 0, fraction * current, 0.0)


def split_latency(cuts: pd.DataFrame, device_stages: Optional[pd.DataFrame],
                  server_stages: pd.DataFrame, bandwidths_mbit: Sequence[float],
                  rtt_ms: float, statistic: str = "median") -> pd.DataFrame:
    """End-to-end latency of every cut, encoding and bandwidth (the model of this module).

    Args:
        cuts: a :func:`~profiling.split.cut_table`.
        device_stages: the ``stages.csv`` of the run on the device, or ``None`` to use the
            table's ``device_estimate_ms`` (a table made with device ceilings).
        server_stages: the ``stages.csv`` of the run on the server.
        bandwidths_mbit: link bandwidths in Mbit/s.
        rtt_ms: the round-trip time in ms.
        statistic: which time statistic of the runs to use (``median``, ``mean``, ...).

    Returns:
        One row per cut, encoding (each one with bytes in the table) and bandwidth: ``cut``,
        ``encoding``, ``bandwidth_mbit``, ``bytes``, ``device_ms``, ``transfer_ms``,
        ``rtt_ms``, ``server_ms``, ``latency_ms``, and ``device_side`` (``measured`` or
        ``roofline bound``).
    """
    check_link(bandwidths_mbit, rtt_ms)
    if device_stages is None:
        if "device_estimate_ms" not in cuts.columns:
            raise ProfilingError("give a device run or device ceilings for the device side")
        device, side = cuts["device_estimate_ms"].to_numpy(float), "roofline bound"
    else:
        device, side = _cumulated(cuts, device_stages, "device", statistic), "measured"
    server_done = _cumulated(cuts, server_stages, "server", statistic)
    server_total = float(top_level_times(server_stages, statistic).sum())
    rows = []
    for encoding in encodings_of(cuts):
        for i, (_, cut) in enumerate(cuts.iterrows()):
            size = cut[f"{encoding}_bytes"]
            if pd.isna(size):
                continue
            for bandwidth in bandwidths_mbit:
                transfer = float(size) * 8 / (float(bandwidth) * 1e6) * 1e3
                server_ms = server_total - server_done[i]
                rows.append({"cut": cut["cut"], "encoding": encoding,
                             "bandwidth_mbit": float(bandwidth), "bytes": int(size),
                             "device_ms": device[i], "transfer_ms": transfer,
                             "rtt_ms": float(rtt_ms), "server_ms": server_ms,
                             "latency_ms": device[i] + float(rtt_ms) + transfer + server_ms,
                             "device_side": side})
    return pd.DataFrame(rows)


def best_cuts(latency: pd.DataFrame) -> pd.DataFrame:
    """The lowest-latency cut per encoding and bandwidth (the first cut on a tie)."""
    best = latency.loc[latency.groupby(["encoding", "bandwidth_mbit"], sort=False)
                       ["latency_ms"].idxmin()]
    return best.reset_index(drop=True)
