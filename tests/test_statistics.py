"""Intervals, ratios, significance, noise and automatic repeats, on synthetic repeat data."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from profiling.statistics.aggregate import aggregate_stages, repeat_table
from profiling.errors import ProfilingError
from profiling.statistics.noise import noise_line, noise_report, unreliable_reasons
from profiling.runner.passes import profile_model
from profiling.stages.markers import stage
from profiling.statistics.intervals import (AutoRepeats, _order_statistic_rank,
                                            coefficient_of_variation, is_significant,
                                            median_interval, ratio_interval, relative_half_width)


@pytest.mark.parametrize("n, rank", [(5, 0), (6, 1), (8, 1), (9, 2), (10, 2), (20, 6),
                                     (100, 40)])
def test_order_statistic_ranks_match_the_binomial_tables(n, rank):
    # n=10: P(B <= 1) = 11/1024 = 1.1% <= 2.5% < P(B <= 2) = 56/1024 = 5.5%, so ranks 2 and 9.
    assert _order_statistic_rank(n, 0.95) == rank


def test_median_interval_is_read_from_the_sorted_values():
    values = [7.0, 1.0, 9.0, 3.0, 5.0, 10.0, 2.0, 8.0, 4.0, 6.0]  # 1..10 shuffled
    assert median_interval(values) == (2.0, 9.0)
    assert median_interval(range(1, 21)) == (6.0, 15.0)
    assert median_interval([4.0, 2.0, 3.0]) == (2.0, 4.0)  # too few for 95%: the range
    assert all(math.isnan(v) for v in median_interval([1.0]))
    # the median 5.5 is 3.5 from 2 and 3.5 from 9
    assert relative_half_width(values) == pytest.approx(3.5 / 5.5)
    assert relative_half_width([10.0] * 6) == 0.0
    assert relative_half_width([3.0]) == math.inf


def test_the_normal_approximation_takes_over_from_the_exact_ranks_smoothly():
    assert _order_statistic_rank(1000, 0.95) == 469
    assert _order_statistic_rank(1001, 0.95) == 469  # floor((1001 - 1.96 * 31.64) / 2)


def test_ratio_of_medians_with_its_bootstrap_interval():
    # A is exact; B's resampled median is 10, 20 or 30: the interval spans 1 to 3.
    assert ratio_interval([10.0] * 3, [10.0, 30.0]) == (2.0, 1.0, 3.0)
    assert ratio_interval([10.0] * 8, [12.0] * 8) == (1.2, 1.2, 1.2)
    assert all(math.isnan(v) for v in ratio_interval([], [1.0]))
    assert all(math.isnan(v) for v in ratio_interval([0.0, 0.0], [1.0]))


def test_ratio_interval_is_seeded_and_resamples_each_sample_on_its_own():
    generator = np.random.default_rng(5)
    a, b = generator.normal(10, 1, 12), generator.normal(11, 1, 9)
    ratio, low, high = ratio_interval(a, b, resamples=500, seed=3)
    assert (ratio, low, high) == ratio_interval(a, b, resamples=500, seed=3)
    # the same bootstrap, written out loop by loop
    replay = np.random.default_rng(3)
    indices_a = replay.integers(0, len(a), size=(500, len(a)))
    indices_b = replay.integers(0, len(b), size=(500, len(b)))
    ratios = [np.median(b[j]) / np.median(a[i]) for i, j in zip(indices_a, indices_b)]
    assert (low, high) == tuple(np.quantile(ratios, [0.025, 0.975]))
    assert ratio == np.median(b) / np.median(a)
    assert low < ratio < high


def test_significance_needs_the_interval_to_exclude_one_and_a_large_enough_change():
    assert is_significant(1.1, 1.3, 1.2)
    assert is_significant(0.7, 0.9, 0.8, min_change=0.05)
    # the change shown is what the rule compares: -23.9% is not "at least 25%"
    assert not is_significant(0.70, 0.80, 0.761, min_change=0.25)
    assert is_significant(0.70, 0.80, 0.75, min_change=0.25)
    assert not is_significant(1.0, 3.0, 2.0)  # touches 1
    assert not is_significant(1.01, 1.03, 1.02, min_change=0.05)  # real, but under 5%
    assert is_significant(0.93, 0.95, 0.94, min_change=0.05)  # 1/0.94 - 1 = 6.4%
    assert not is_significant(math.nan, 1.2, 1.1)


def test_noise_report_and_the_reasons_for_distrust():
    quiet = {"load_average": [0.5, 0.4, 0.3], "cores": 2, "threads": 2, "governor": None}
    busy = {**quiet, "load_average": [3.5, 2.0, 1.0]}
    report = noise_report(quiet, busy, [9.0, 11.0])
    assert report["forward_cv"] == pytest.approx(math.sqrt(2) / 10, abs=1e-5)
    assert report["forward_median_ms"] == 10.0
    assert report["forward_median_ci95_ms"] == [9.0, 11.0]
    # two repeats: the interval is their range, which holds the median half of the time
    assert report["interval_method"] == "order-statistics (binomial) 50% interval of the median"
    method = "order-statistics (binomial) {} interval of the median"
    assert noise_report(quiet, quiet, [10.0] * 5)["interval_method"] == method.format("93.7%")
    assert noise_report(quiet, quiet, [10.0] * 6)["interval_method"] == method.format("95%")
    assert report["load_average_before"] == [0.5, 0.4, 0.3]
    assert report["unreliable"] == [
        "the machine was loaded (load average 3.50 after, above its 2 cores)",
        "the forward times vary by 14.1% (coefficient of variation, above 5%)"]
    assert noise_line(report).startswith("timings are unreliable: the machine was loaded")
    calm = noise_report(quiet, quiet, [10.0, 10.1, 9.9])
    assert unreliable_reasons(calm) == [] and noise_line(calm) == ""
    assert coefficient_of_variation([10.0]) != coefficient_of_variation([10.0])  # NaN


class _FakeClock:
    """Nanoseconds that move only when the model says a forward took time."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class _Timed(torch.nn.Module):
    def __init__(self, clock: _FakeClock, durations_ms) -> None:
        super().__init__()
        self.clock, self.durations = clock, iter(durations_ms)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with stage("body", x):
            self.clock.now += int(next(self.durations) * 1e6)
            return x + 1


def _auto(durations_ms, **options):
    clock = _FakeClock()
    model = _Timed(clock, durations_ms).eval()
    return profile_model(model, (torch.zeros(2),), collectors=("cpu_time",), warmup=1,
                         repeats=AutoRepeats(**options), clock=clock)


def test_auto_repeats_stop_at_the_minimum_on_quiet_data():
    result = _auto(iter(lambda: 10.0, None), target_ci=0.02, max_time_s=60, min_repeats=5)
    assert result.forward_ms == [10.0] * 5
    auto = result.noise["auto_repeats"]
    assert (auto["stopped_by"], auto["repeats"], auto["reached_ci"]) == ("target", 5, 0.0)
    assert len(result.timed) == 5


def test_auto_repeats_go_on_under_noise_until_the_time_is_up():
    generator = np.random.default_rng(0)
    noisy = iter(lambda: float(generator.lognormal(np.log(10.0), 0.5)), None)
    result = _auto(noisy, target_ci=0.02, max_time_s=1.0, min_repeats=5)
    auto = result.noise["auto_repeats"]
    assert auto["stopped_by"] == "time" and auto["reached_ci"] > 0.02
    # the warm-up is not counted: the last forward crossed the second, the one before did not
    total = np.cumsum(result.forward_ms)
    assert total[-2] < 1000.0 <= total[-1]
    assert auto["repeats"] == len(result.forward_ms) > 5


def test_auto_repeats_make_the_minimum_even_when_the_time_is_up():
    generator = np.random.default_rng(1)
    slow = iter(lambda: float(generator.uniform(900.0, 1500.0)), None)
    result = _auto(slow, target_ci=0.02, max_time_s=1.0, min_repeats=5)
    assert len(result.forward_ms) == 5
    assert result.noise["auto_repeats"]["stopped_by"] == "time"


def test_auto_repeats_refuse_impossible_targets():
    with pytest.raises(ProfilingError, match="target_ci > 0"):
        _auto(iter(lambda: 1.0, None), target_ci=0.0)


def test_aggregate_and_repeat_table_carry_the_interval_and_the_raw_repeats():
    clock = _FakeClock()
    durations = [1.0] + [float(v) for v in range(1, 11)]
    result = profile_model(_Timed(clock, durations).eval(), (torch.zeros(2),),
                           collectors=("cpu_time",), warmup=1, repeats=10, clock=clock)
    assert result.forward_ms == [float(v) for v in range(1, 11)]
    assert result.noise["forward_median_ci95_ms"] == [2.0, 9.0]
    row = result.stages.iloc[0]
    times = repeat_table(result.timed)
    assert list(times.columns) == ["stage", "call_index", "repeat", "cpu_time_ms"]
    times = times[times["stage"] != "other"]  # the forward outside the stage, each repeat
    assert list(times["repeat"]) == list(range(10))
    ordered = np.sort(times["cpu_time_ms"].to_numpy())
    assert (row["cpu_time_ms_median_ci95_low"], row["cpu_time_ms_median_ci95_high"]) == \
        (ordered[1], ordered[8])
    single = aggregate_stages(result.calls, result.timed[:1]).iloc[0]
    assert math.isnan(single["cpu_time_ms_median_ci95_low"])


@pytest.mark.slow
def test_two_transformer_layers_make_gmflows_transformer_significantly_faster(tmp_path):
    from profiling.reports.comparison import compare_runs
    from profiling.reports import read_run
    from zoo.tools.job import run_profile
    from zoo.tools.composition import compose_config

    common = ["model=gmflow", "input.size=[128,192]", "run.warmup=1", "run.repeats=7",
              "collectors=[payload,cpu_time]"]
    for name, extra in (("six", []), ("two", ["model.num_transformer_layers=2"])):
        run_profile(compose_config(common + extra), tmp_path / name, print_summary=False)
    table = compare_runs(read_run(tmp_path / "six"), read_run(tmp_path / "two"))
    if table["withheld"].iloc[0]:
        # at a load of 9 on 2 cores the 2-layer model once came out 5x slower: no verdict
        pytest.skip(f"significance withheld: {table['withheld'].iloc[0]}")
    transformer = table.set_index("stage").loc["transformer"]
    assert transformer["significant"] and transformer["time_ratio_ci95_high"] < 1.0
    # the encoder is the same network in both: its change, if any, is not called significant
    assert not table.set_index("stage").loc["backbone", "significant"]


@pytest.mark.parametrize("override, message", [
    ("run.repeats=many", "run.repeats='many' is not accepted; accepted: an integer >= 1 or one "
                         "of auto"),
    ("run.target_ci=0", "run.target_ci=0 is not accepted; accepted: a finite number > 0"),
    ("run.min_repeats=0", "run.min_repeats=0 is not accepted; accepted: an integer >= 1"),
    ("run.max_time_s=-1", "run.max_time_s=-1 is not accepted; accepted: a finite number > 0"),
])
def test_auto_repeat_options_are_typed(override, message):
    from zoo.tools.job_description import run_repeats
    from zoo.tools.composition import check_composed, compose_config
    from zoo.options import ConfigError

    with pytest.raises(ConfigError) as error:
        check_composed(compose_config(["model=torchvision", override]))
    assert str(error.value) == message
    chosen = compose_config(["model=torchvision", "run.repeats=auto", "run.target_ci=0.05"])
    check_composed(chosen)
    assert run_repeats(chosen.run) == AutoRepeats(target_ci=0.05, max_time_s=60.0,
                                                  min_repeats=5)


def test_the_true_coverage_of_the_median_interval():
    from profiling.statistics.intervals import median_interval_coverage

    assert median_interval_coverage(5) == 1 - 2 ** -4 == 0.9375
    assert median_interval_coverage(2) == 0.5 and median_interval_coverage(1) == 0.0
    # 6 repeats: rank 1 is still the range, 1 - 2**-5
    assert median_interval_coverage(6) == pytest.approx(0.96875)
    assert all(median_interval_coverage(n) >= 0.95 for n in range(6, 60))
