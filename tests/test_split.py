"""Split-point analysis on a toy model whose every number is computed by hand."""

from __future__ import annotations

import zlib

import pandas as pd
import pytest
import torch

from profiling import stage
from profiling.collectors.liveness import Liveness, encoded_bytes
from profiling.runner.passes import profile_model
from profiling.runner import analyse_cuts
from profiling.split import best_cuts, cut_table, split_latency

X = torch.tensor([[1.0, -2.0, 3.0, 4.0]])  # 16 bytes


class Toy(torch.nn.Module):
    """Four stages; ``x`` skips to the last one, ``z`` is changed in place twice."""

    def forward(self, x):
        with stage("double", x) as s:
            y = s.output(x * 2)                                     # (1, 4) f32: 16 B
        with stage("widen", y) as s:
            z = torch.cat([y, y], 1)                                # (1, 8) f32: 32 B
            s.output(z.relu_())
        with stage("index", z) as s:
            i = s.output(z.argmax(1))                               # (1,) i64: 8 B
            z.mul_(0)
        with stage("combine", z, x, i) as s:
            w = s.output(z.view(2, 4).sum(0) + x[0] * i)            # (4,) f32: 16 B
        return w


def _zlib(tensor: torch.Tensor) -> int:
    return len(zlib.compress(tensor.contiguous().numpy().tobytes(), 1))


@pytest.fixture(scope="module")
def cuts():
    return cut_table(analyse_cuts(Toy(), (X,), codecs=("zlib",)))


def test_bytes_alive_across_each_cut(cuts):
    # input: x | double: x, y | widen: x, z | index: x, z, i | combine, output: w
    assert list(cuts["cut"]) == ["input", "double", "widen", "index", "combine", "output"]
    assert list(cuts["tensors"]) == [1, 2, 2, 3, 1, 1]
    assert list(cuts["raw_bytes"]) == [16, 32, 48, 56, 16, 16]
    assert list(cuts["fp16_bytes"]) == [8, 16, 24, 8 + 16 + 8, 8, 8]
    assert list(cuts["int8_bytes"]) == [4, 8, 12, 4 + 8 + 8, 4, 4]


def test_compressed_sizes_are_taken_at_the_cut(cuts):
    y = X * 2
    z_relu = torch.cat([y, y], 1).relu()
    i = z_relu.argmax(1)
    w = (X[0] * i)
    expected = [_zlib(X), _zlib(X) + _zlib(y), _zlib(X) + _zlib(z_relu),
                _zlib(X) + _zlib(torch.zeros(1, 8)) + _zlib(i), _zlib(w), _zlib(w)]
    assert list(cuts["zlib_bytes"]) == expected


def test_encoded_bytes_keep_integers_and_small_floats():
    assert encoded_bytes(64, torch.float32, 2) == 32
    assert encoded_bytes(64, torch.float64, 1) == 8
    assert encoded_bytes(64, torch.int64, 1) == 64
    assert encoded_bytes(64, torch.float16, 2) == 64
    assert encoded_bytes(64, torch.bool, 1) == 64


def test_meta_device_has_no_compressed_size():
    table = cut_table(analyse_cuts(Toy(), (X.to("meta"),), codecs=("zlib",)))
    assert list(table["raw_bytes"]) == [16, 32, 48, 56, 16, 16]
    assert "zlib_bytes" not in table.columns


def test_views_count_once():
    class Views(torch.nn.Module):
        def forward(self, x):
            with stage("a", x) as s:
                y = s.output(x + 1)
                halves = y.view(2, 2)
            with stage("b", halves) as s:
                out = s.output(halves[0] + halves[1] + y.sum())
            return out

    table = cut_table(analyse_cuts(Views(), (X,), codecs=()))
    assert list(table["raw_bytes"]) == [16, 16, 8, 8]


def test_only_the_part_of_a_storage_read_after_the_cut_is_sent():
    class Batched(torch.nn.Module):
        def forward(self, x):
            with stage("both", x) as s:
                pair = s.output(torch.cat([x, x + 1]))              # (2, 4) f32: 32 B
            with stage("first", pair) as s:
                out = s.output(pair[0] * 2)                         # reads 16 B of the 32
            return out

    table = cut_table(analyse_cuts(Batched(), (X,), codecs=("zlib",)))
    assert list(table["raw_bytes"]) == [16, 16, 16, 16]
    assert table.loc[1, "zlib_bytes"] == _zlib(X)  # the part read, compressed on its own


@pytest.mark.parametrize("liveness", ["liveness", Liveness(inputs=(X,))],
                         ids=["by-name", "given-inputs"])
def test_runner_puts_the_cut_bytes_on_the_top_level_stages(liveness):
    # by name, the runner binds the forward's inputs to the collector itself
    result = profile_model(Toy().eval(), (X,), collectors=["payload", liveness], warmup=0,
                           repeats=1)
    rows = result.stages.set_index("stage")
    assert rows.loc[["double", "widen", "index", "combine"], "cut_bytes"].tolist() == [32, 48,
                                                                                       56, 16]
    assert rows.loc["index", "cut_int8_bytes"] == 20


def _stages(times):
    return pd.DataFrame({"stage": ["double", "widen", "index", "combine"], "kind": "stage",
                         "depth": 0, "call_index": 0, "cpu_time_ms_median": times})


def test_latency_and_best_cut_by_hand(cuts):
    device, server = _stages([1.0, 2.0, 3.0, 4.0]), _stages([10.0, 20.0, 30.0, 40.0])
    latency = split_latency(cuts, device, server, [8.0, 0.008], rtt_ms=10.0)
    raw = latency[latency["encoding"] == "raw"].set_index(["bandwidth_mbit", "cut"])
    # 8 Mbit/s: one byte takes 1e-3 ms; 0.008 Mbit/s: 1 ms.
    fast = {"input": 0 + 10 + 0.016 + 100, "double": 1 + 10 + 0.032 + 90,
            "widen": 3 + 10 + 0.048 + 70, "index": 6 + 10 + 0.056 + 40,
            "combine": 10 + 10 + 0.016 + 0, "output": 10 + 10 + 0.016 + 0}
    slow = {"input": 0 + 10 + 16 + 100, "double": 1 + 10 + 32 + 90, "widen": 3 + 10 + 48 + 70,
            "index": 6 + 10 + 56 + 40, "combine": 10 + 10 + 16, "output": 10 + 10 + 16}
    for cut, value in fast.items():
        assert raw.loc[(8.0, cut), "latency_ms"] == pytest.approx(value)
        assert raw.loc[(0.008, cut), "latency_ms"] == pytest.approx(slow[cut])
    assert raw.loc[(8.0, "index"), "device_ms"] == 6.0
    assert raw.loc[(8.0, "index"), "server_ms"] == 40.0
    best = best_cuts(latency).set_index(["encoding", "bandwidth_mbit"])
    assert best.loc[("raw", 8.0), "cut"] == "combine"
    # A fast server and a fast link: sending the input wins.
    quick = best_cuts(split_latency(cuts, server, device, [8.0], rtt_ms=0.0))
    assert quick.set_index("encoding").loc["raw", "cut"] == "input"
    assert quick.set_index("encoding").loc["raw", "latency_ms"] == pytest.approx(10.016)


def test_a_run_without_the_analysed_stage_is_refused(cuts):
    from profiling.errors import ProfilingError
    partial = _stages([1.0, 2.0, 3.0, 4.0]).iloc[:2]
    with pytest.raises(ProfilingError, match="index"):
        split_latency(cuts, partial, partial, [1.0], 0.0)


@pytest.mark.slow
def test_split_command_on_swiftnet(tmp_path, capsys):
    from zoo.tools.split import main

    main(["model=swiftnet", "input.size=[64,64]", "--meta", "--out", str(tmp_path)])
    table = pd.read_csv(tmp_path / "cuts.csv")
    assert table["cut"].iloc[0] == "input"
    assert table["raw_bytes"].iloc[0] == 3 * 64 * 64 * 4
    assert table["cut"].iloc[-1] == "output"
    assert "encoder" in set(table["cut"])
    assert (tmp_path / "split_timeline.png").read_bytes()[:4] == b"\x89PNG"
