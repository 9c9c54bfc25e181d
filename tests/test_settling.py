"""The warm-up that settles (profiling.runner.repeats, ``settle=True``, what every runtime
session is timed with): untimed forwards go on while the forward still gets faster, within a
count and a time limit, and the noise verdict says how many ran and whether it settled."""

from __future__ import annotations

import pytest

from profiling.runner.repeats import (SETTLE_MAX_FORWARDS, SETTLE_MAX_S, still_settling,
                                      timed_repeats)

#: OpenVINO's first forwards of regnet_x_400mf at 224x224 after compiling (ms, a quiet
#: 2-core Xeon), then steady.
OPENVINO_REGNET = [10.08, 6.2, 5.99, 5.42, 5.27, 5.18, 4.72, 4.38, 4.27, 3.86, 4.04, 4.13,
                   4.0, 4.05, 4.0, 4.02, 4.01, 4.03]


def _timed(times_ms, warmup, repeats, settle=True):
    """``timed_repeats`` over forwards that take ``times_ms`` in turn (then the last), on a
    fake clock; the forwards' indices as called, and what it returned."""
    now, called = [0], []

    def step(index: int) -> int:
        span = int(round(times_ms[min(index, len(times_ms) - 1)] * 1e6))
        now[0] += span
        called.append(index)
        return span

    forward_ms, noise = timed_repeats(step, warmup, repeats, clock=lambda: now[0],
                                      settle=settle)
    return called, forward_ms, noise


def test_forwards_settle_when_the_last_three_are_no_longer_5_percent_faster():
    assert still_settling(OPENVINO_REGNET[:5])  # fewer than two windows: cannot tell
    assert still_settling(OPENVINO_REGNET[:6])  # median 5.27 against 6.2 three before
    # by hand: at 13 forwards the median of (4.04, 4.13, 4.0) is 4.04 < 0.95 x 4.27; at 14,
    # 4.05 against 4.04 three before
    assert still_settling(OPENVINO_REGNET[:13])
    assert not still_settling(OPENVINO_REGNET[:14])
    assert not still_settling([5.0] * 6)


def test_a_runtime_is_timed_once_its_forwards_have_settled():
    called, forward_ms, noise = _timed(OPENVINO_REGNET, warmup=1, repeats=3)
    assert noise["warmup"] == {"asked": 1, "made": 14, "settled": True}
    assert called == list(range(17))
    assert forward_ms == pytest.approx([4.0, 4.02, 4.01])


def test_a_forward_that_never_settles_stops_at_the_count_and_says_so():
    falling = [100 * 0.9 ** k for k in range(60)]
    _, forward_ms, noise = _timed(falling, warmup=1, repeats=2)
    assert noise["warmup"] == {"asked": 1, "made": SETTLE_MAX_FORWARDS, "settled": False}
    assert forward_ms == pytest.approx(falling[SETTLE_MAX_FORWARDS:SETTLE_MAX_FORWARDS + 2])


def test_a_slow_forward_stops_settling_at_the_time_limit_without_a_verdict():
    _, forward_ms, noise = _timed([5000.0], warmup=1, repeats=2)  # 5 s a forward
    assert SETTLE_MAX_S == 20.0
    assert noise["warmup"] == {"asked": 1, "made": 4, "settled": None}  # 4 x 5 s: 20 s
    assert len(forward_ms) == 2


def test_pytorch_runs_warm_up_as_asked():
    called, forward_ms, noise = _timed(OPENVINO_REGNET, warmup=2, repeats=3, settle=False)
    assert called == [0, 1, 2, 3, 4] and "warmup" not in noise
    assert forward_ms == pytest.approx([5.99, 5.42, 5.27])
