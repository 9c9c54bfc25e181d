"""The terminal summary: one line per stage down to depth 1, repeated calls summed, intervals,
the total row."""

from __future__ import annotations

import pandas as pd

from profiling.reports.summary import RunTotals, format_summary


def _stages(**extra) -> pd.DataFrame:
    return pd.DataFrame({"stage": ["backbone", "conv", "head", "head", "deep"],
                         "kind": "stage", "depth": [0, 1, 0, 0, 2],
                         "out_bytes": [4_000_000, 2_000_000, 500_000, 500_000, 1],
                         **extra})


def test_columns_follow_what_was_measured_with_their_rules_in_the_header():
    lines = format_summary(_stages(
        cpu_time_ms_median=[8.0, 6.0, 1.0, 1.5, 0.1],
        cpu_time_ms_median_ci95_low=[7.9, 5.0, 0.9, 1.4, 0.1],
        cpu_time_ms_median_ci95_high=[8.1, 6.1, 1.1, 1.6, 0.1],
        flops=[2e9, 1.5e9, 1e8, 1e8, 1.0],
        tensor_peak_mb=[12.0, 8.0, 0.5, 0.75, 0.0])).splitlines()
    assert lines[0].split() == ["stage", "calls", "time", "ms", "95%", "CI", "ms", "GFLOPs",
                                "out", "MB", "tensor", "peak", "MB"]
    assert lines[1].split() == ["rule", "(over", "calls;", "over", "repeats)", "sum,", "med.",
                                "of", "the", "median", "sum", "sum", "max"]
    # three significant figures (profiling.reports.numbers.significant)
    assert lines[2].split() == ["backbone", "1", "8.00", "7.90-8.10", "2.00", "4.00", "12.0"]
    # 5.0 is 1.0 (17%) below the median 6.0: flagged
    assert lines[3].split() == ["conv", "1", "6.00", "5.00-6.10!", "1.50", "2.00", "8.00"]
    # two calls: time, FLOPs and payload summed, the larger peak; no raw repeats, no interval
    assert lines[4].split() == ["head", "2", "2.50", "-", "0.200", "1.00", "0.750"]
    assert "deep" not in "".join(lines)  # depth 2 is left out
    assert lines[5].startswith("(time: CPU time summed over a stage's calls, median over")
    assert "! 1 stage(s) with an interval wider than ±10% of the median" in lines


def test_raw_repeats_give_the_interval_of_a_stage_called_twice():
    times = pd.DataFrame({"stage": ["backbone", "conv", "head", "head"] * 6,
                          "call_index": [0, 0, 0, 1] * 6,
                          "repeat": [r for r in range(6) for _ in range(4)],
                          "cpu_time_ms": [8, 6, 1, 1.5, 8, 6, 1, 1.6, 8, 6, 1, 1.7,
                                          8, 6, 2, 1.5, 8, 6, 1, 1.5, 8, 6, 1, 1.4]})
    lines = format_summary(_stages(cpu_time_ms_median=[8.0, 6.0, 1.0, 1.5, 0.1]),
                           times=times).splitlines()
    # per repeat: 2.5, 2.6, 2.7, 3.5, 2.5, 2.4 -> median 2.55, 6 repeats: the range
    assert lines[4].split() == ["head", "2", "2.55", "2.40-3.50!", "1.00"]
    assert lines[2].split() == ["backbone", "1", "8.00", "8.00-8.00", "4.00"]


def test_the_total_row_and_line():
    totals = RunTotals(forward_ms=[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], parameters=11_000_000,
                       macs=10 ** 9, flops=2 * 10 ** 9, in_bytes=600_000, out_bytes=4_000)
    lines = format_summary(_stages(cpu_time_ms_median=[8.0, 6.0, 1.0, 1.5, 0.1],
                                   flops=[2e9, 1.5e9, 1e8, 1e8, 1.0]), totals=totals).splitlines()
    total = next(line for line in lines if line.startswith("total (whole forward"))
    assert total.split()[-5:] == ["12.5", "10.0-15.0!", "100.0%", "2.00", "0.00400"]
    assert "total: 11,000,000 parameters, 1.00 GMACs, 2.00 GFLOPs, input 0.600 MB, output " \
           "0.00400 MB" in lines


def test_a_meta_run_shows_payload_and_flops_only():
    lines = format_summary(_stages(flops=[2e9, 1.5e9, 1e8, 1e8, 1.0])).splitlines()
    assert lines[0].split() == ["stage", "calls", "GFLOPs", "out", "MB"]
    assert lines[2].split() == ["backbone", "1", "2.00", "4.00"]
    assert lines[-2] == "(no timing)"
    assert lines[-1].startswith("(GFLOPs: 1e9 floating-point operations; MB: 1e6 bytes")


def _with_other(**extra) -> pd.DataFrame:
    return pd.DataFrame({
        "stage": ["stem", "backbone", "backbone.conv", "backbone/other", "head", "head", "neck",
                  "other"],
        "kind": ["stage"] * 3 + ["other"] + ["stage"] * 3 + ["other"],
        "parent": ["", "", "backbone", "backbone", "", "", "", ""],
        "depth": [0, 0, 1, 1, 0, 0, 0, 0],
        "out_bytes": [1_000_000, 4_000_000, 2_000_000, 0, 500_000, 500_000, 0, 0],
        "cpu_time_ms_median": [0.5, 8.0, 6.0, 1.7, 1.0, 1.5, 0.25, 1.9],
        "flops": [1e8, 2e9, 1.5e9, 5e8, 1e8, 1e8, 0.0, 2e8], **extra})


def test_other_rows_show_their_own_medians_and_the_slowest_are_marked():
    # the whole forward's FLOPs are its stages' and the other row's, as in every run
    totals = RunTotals(forward_ms=[13.0, 13.25, 13.5], parameters=1, macs=10 ** 9,
                       flops=int(2.5e9), in_bytes=1, out_bytes=1)
    lines = format_summary(_with_other(), totals=totals,
                           coverage={"time": 0.8, "flops": 2.5e9 / 2.7e9}).splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:10]}
    # each other row's own median, as stages.csv and the page show it: 1.9 of 13.25 ms
    assert rows["other"] == ["1.90", "-", "14.3%", "0.200"]
    assert rows["backbone/other"] == ["1.70", "-", "12.8%", "0.500"]
    assert rows["backbone"][:3] == ["1", "8.00", "-"] and rows["backbone"][3] == "60.4%*"
    assert rows["head"][3] == "18.9%*" and rows["stem"][3] == "3.8%*"
    assert rows["neck"][3] == "1.9%"
    assert "* the 3 slowest top-level stages" in lines
    # the time coverage is 1 - other / forward = 1 - 1.9 / 13.25, as the other row says
    assert "coverage: 86% of the time and 93% of the FLOPs in named stages (the rest is the " \
           "'other' rows)" in lines
    assert lines[-1].startswith("warning: less than 90% of the forward is in named stages; ")
    assert max(len(line) for line in lines[:13]) <= 120


def test_an_other_row_and_the_coverage_are_never_negative_or_over_100_percent():
    # backbone's median 8.0 but its conv's 8.4 (the medians of noisy repeats): backbone/other
    # shows its own median 0.3; a median below 0 (clock noise) shows 0
    stages = _with_other(cpu_time_ms_median=[0.5, 8.0, 8.4, 0.3, 1.0, 1.5, 0.25, -0.2],
                         cpu_time_ms_median_ci95_low=[0.4, 7.0, 7.5, 0.1, 0.9, 1.4, 0.2, -1.0],
                         cpu_time_ms_median_ci95_high=[0.6, 9.0, 9.5, 0.9, 1.1, 1.6, 0.3, 2.0])
    totals = RunTotals(forward_ms=[13.0, 13.25, 13.5], parameters=1, macs=10 ** 9,
                       flops=int(2.7e9), in_bytes=1, out_bytes=1)
    lines = format_summary(stages, totals=totals, coverage={"time": 1.12}).splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:10]}
    assert rows["backbone/other"][:2] == ["0.300", "0.100-0.900!"]  # ! wide interval
    assert rows["other"][0] == "0"
    assert any(line.startswith("coverage: 100% of the time") for line in lines)
    assert any(line.startswith("(other: the median over the repeats of the time its parent")
               for line in lines)


def test_long_stage_names_keep_their_end():
    stages = pd.DataFrame({"stage": ["features.encoder.layers.10.block.0",
                                     "features.encoder.layers.11.block.0"],
                           "kind": "stage", "parent": "", "depth": [3, 3],
                           "out_bytes": [1, 1]})
    lines = format_summary(stages, max_depth=3).splitlines()
    assert lines[2].split()[0] == "features.encoder.layers.10.block.0"
    long = pd.DataFrame({"stage": ["a" * 50 + ".10", "a" * 50 + ".11"], "kind": "stage",
                         "parent": "", "depth": [0, 0], "out_bytes": [1, 1]})
    labels = [line.split()[0] for line in format_summary(long).splitlines()[2:4]]
    assert labels[0].endswith("aa.10") and labels[1].endswith("aa.11") and len(labels[0]) == 40


def test_human_numbers_have_three_significant_figures():
    from profiling.reports.numbers import significant

    assert significant(0.026137612400000003) == "0.0261"
    assert [significant(v) for v in (112.309, 11459.327, 1.5, 0.068)] == \
        ["112", "11459", "1.50", "0.0680"]
    assert [significant(v) for v in (9.9951, 0.099951, 99.96)] == ["10.0", "0.100", "100"]
    assert [significant(v) for v in (0, -0.5, 1.234e-7, None, float("nan"))] == \
        ["0", "-0.500", "1.23e-07", "-", "-"]


def test_the_interval_label_says_its_true_coverage():
    five = RunTotals(forward_ms=[10.0, 11.0, 12.0, 13.0, 14.0], parameters=1, macs=None,
                     flops=None, in_bytes=1, out_bytes=1)
    stages = _stages(cpu_time_ms_median=[8.0, 6.0, 1.0, 1.5, 0.1])
    header = format_summary(stages, totals=five).splitlines()[0]
    assert "93.7% CI ms" in header  # the range of 5 repeats covers 1 - 2**-4
    six = RunTotals(forward_ms=[10.0] * 6, parameters=1, macs=None, flops=None, in_bytes=1,
                    out_bytes=1)
    assert "95% CI ms" in format_summary(stages, totals=six).splitlines()[0]


def test_the_memory_column_is_named_for_what_it_counts():
    lines = format_summary(_stages(tensor_peak_mb=[12.0, 8.0, 0.5, 0.75, 0.0])).splitlines()
    assert "tensor peak MB" in lines[0]
    assert any("oneDNN weight reorders are not seen" in line for line in lines)
