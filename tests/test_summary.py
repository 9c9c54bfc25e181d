"""The terminal summary: one line per stage down to depth 1, repeated calls summed."""

from __future__ import annotations

import pandas as pd

from profiling.reports.summary import format_summary


def _stages(**extra) -> pd.DataFrame:
    return pd.DataFrame({"stage": ["backbone", "conv", "head", "head", "deep"],
                         "kind": "stage", "depth": [0, 1, 0, 0, 2],
                         "out_bytes": [4_000_000, 2_000_000, 500_000, 500_000, 1],
                         **extra})


def test_columns_follow_what_was_measured():
    lines = format_summary(_stages(
        cpu_time_ms_median=[8.0, 6.0, 1.0, 1.5, 0.1], flops=[2e9, 1.5e9, 1e8, 1e8, 1.0],
        cpu_mem_peak_mb=[12.0, 8.0, 0.5, 0.75, 0.0])).splitlines()
    assert lines[0].split() == ["stage", "calls", "time", "ms", "GFLOPs", "out", "MB", "peak",
                                "MB"]
    assert lines[1].split() == ["backbone", "1", "8.000", "2.000", "4.000", "12.00"]
    assert lines[2].split() == ["conv", "1", "6.000", "1.500", "2.000", "8.00"]
    # two calls: time, FLOPs and payload summed, the larger peak
    assert lines[3].split() == ["head", "2", "2.500", "0.200", "1.000", "0.75"]
    assert len(lines) == 5 and "deep" not in "".join(lines)  # depth 2 is left out
    assert lines[-1].startswith("(time: median of CPU time; GFLOPs:")


def test_a_meta_run_shows_payload_and_flops_only():
    lines = format_summary(_stages(flops=[2e9, 1.5e9, 1e8, 1e8, 1.0])).splitlines()
    assert lines[0].split() == ["stage", "calls", "GFLOPs", "out", "MB"]
    assert lines[1].split() == ["backbone", "1", "2.000", "4.000"]
    assert lines[-1].startswith("(no timing; GFLOPs:")
