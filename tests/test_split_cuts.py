"""Cut candidates anywhere in the forward, and exact bytes: toy models counted by hand."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from profiling import stage
from profiling.split.byte_ranges import merge_ranges, ranges_size, subtract_ranges, view_ranges
from profiling.split.encodings import quantise_int8
from profiling.stages.payload import walk_payload
from profiling.runner import analyse_cuts
from profiling.split import cut_table, pareto_front
from zoo.tools.split_report import cut_lines, cut_names

X = torch.tensor([[1.0, -2.0, 3.0, 4.0]])  # 16 bytes


def _zlib(tensor: torch.Tensor) -> int:
    return len(zlib.compress(tensor.contiguous().numpy().tobytes(), 1))


class PadThenSlice(nn.Module):
    """A kernel that wants 128 channels: the 2-channel values are zero-padded, the result
    sliced back to 2 channels (GMFlow's fused attention does this)."""

    def forward(self, x):
        with stage("attend", x) as s:
            padded = F.pad(x, (0, 126))                        # [1, 6, 128]: 3072 B
            out = s.output((padded * 2)[..., :2])              # a view: 6 x 2 floats
        with stage("use", out) as s:
            total = s.output(out.sum(-1))                      # [1, 6]: 24 B
        return total


def test_a_zero_padded_kernel_buffer_counts_only_the_elements_read():
    x = torch.arange(12.0).reshape(1, 6, 2)
    table = cut_table(analyse_cuts(PadThenSlice(), (x,), codecs=("zlib", "int8+zlib")))
    row = table.set_index("cut").loc["attend"]
    assert row["raw_bytes"] == 6 * 2 * 4       # not 6 * 128 * 4 = 3072
    assert row["fp16_bytes"] == 6 * 2 * 2
    assert row["zlib_bytes"] == _zlib(x * 2)   # the elements read, compressed on their own
    quantised = quantise_int8(x * 2)
    assert row["int8+zlib_bytes"] == len(zlib.compress(quantised.numpy().tobytes(), 1))
    # The payload of the stage's output counts the view's elements too.
    with torch.inference_mode():
        view = (F.pad(x, (0, 126)) * 2)[..., :2]
    assert walk_payload(view).nbytes == 48


def test_quantise_int8_maps_min_to_0_and_max_to_255():
    assert quantise_int8(torch.tensor([0.0, 1.0, 5.0])).tolist() == [0, 51, 255]
    assert quantise_int8(torch.tensor([2.0, 2.0])).tolist() == [0, 0]


def test_view_ranges_are_exact():
    x = torch.zeros(10, 128)
    starts, ends = view_ranges(x[..., :2])
    assert len(starts) == 10 and ranges_size((starts, ends)) == 10 * 2 * 4
    assert starts[1] == 128 * 4 and ends[0] == 8
    assert ranges_size(view_ranges(x.t())) == x.numel() * 4       # a permutation is dense
    assert ranges_size(view_ranges(x[:, None].expand(10, 3, 128))) == x.numel() * 4
    first, second = view_ranges(x[:5]), view_ranges(x[3:7])
    assert ranges_size(merge_ranges([first, second])) == 7 * 128 * 4
    assert ranges_size(subtract_ranges(first, second)) == 3 * 128 * 4


class Overwrite(nn.Module):
    """A buffer made empty, then filled by ``copy_``: its content before is never read."""

    def forward(self, x):
        with stage("make", x):
            buffer = torch.empty(2, 4)                         # 32 B of garbage
        with stage("fill", x) as s:
            buffer.copy_(torch.cat([x, x + 1]))
            s.output(buffer)
        with stage("reduce", buffer) as s:
            out = s.output(buffer.sum(0))                      # [4]: 16 B
        return out


def test_an_overwritten_buffer_is_not_alive_before_its_write():
    table = cut_table(analyse_cuts(Overwrite(), (X,), codecs=()))
    assert list(table["cut"]) == ["input", "make", "fill", "reduce", "output"]
    assert list(table["raw_bytes"]) == [16, 16, 32, 16, 16]


class Toy(nn.Module):
    """No stages: a sequence of two blocks, the first one nested."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.second = nn.Linear(8, 2)

    def forward(self, x):
        return self.second(self.first(x))


@pytest.mark.parametrize("depth, names, sizes", [
    (0, ["input", "output"], [16, 8]),
    (1, ["input", "first", "second", "output"], [16, 32, 8, 8]),
    (2, ["input", "first.0", "first.1", "first", "second", "output"], [16, 32, 32, 32, 8, 8]),
])
def test_module_boundaries_down_to_a_depth(depth, names, sizes):
    table = cut_table(analyse_cuts(Toy().eval(), (X,), codecs=(), depth=depth))
    assert list(table["cut"]) == names
    assert list(table["raw_bytes"]) == sizes
    assert set(table["kind"]) <= {"input", "module", "output"}


def test_the_module_hooks_are_removed_also_after_an_exception():
    model = Toy().eval()
    analyse_cuts(model, (X,), depth=3)
    assert all(not m._forward_hooks for m in model.modules())
    with pytest.raises(RuntimeError):
        analyse_cuts(model, (torch.ones(1, 5),), depth=3)       # a shape error
    assert all(not m._forward_hooks for m in model.modules())


def test_a_module_called_twice_gets_a_cut_per_call():
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(self.act(x) * 2)

    table = cut_table(analyse_cuts(Twice(), (X,), codecs=(), depth=1))
    assert list(table["cut"]) == ["input", "act", "act[1]", "output"]


def test_every_operator_boundary_and_the_timeline():
    from tests.test_split import Toy as Staged

    analysis = analyse_cuts(Staged(), (X,), codecs=(), every_op=True)
    table = cut_table(analysis)
    # mul, cat, relu_, argmax, mul_, view, sum, select, mul, add: 10 operators
    assert analysis.op_names[1:] == ["aten.mul", "aten.cat", "aten.relu_", "aten.argmax",
                                     "aten.mul_", "aten.view", "aten.sum", "aten.select",
                                     "aten.mul", "aten.add"]
    # after op k: x | x y | x z | x z | x z i | x z i | (view) | x i sum | (view) | sum x*i | w
    assert analysis.timeline.tolist() == [16, 32, 48, 48, 56, 56, 56, 40, 40, 32, 16]
    ops = table[table["kind"] == "op"]
    assert list(ops["position"]) == list(range(1, 10))
    assert list(ops["raw_bytes"]) == analysis.timeline[1:10].tolist()
    assert len(table) == 1 + 4 + 9 + 1


def test_cut_names_keep_their_call_index_and_never_look_alike():
    long = "backbone.body.layer3.5.downsample_projection_block"
    # 36 characters: the first 16, "...", the last 17
    assert cut_names([f"{long}[12]", "input"]) == {
        f"{long}[12]": "backbone.body.la...jection_block[12]", "input": "input"}
    alike = [f"model.encoder.stages.{i}.blocks.attention_with_relative_position[1]" for i in (1, 2)]
    assert cut_names(alike) == {name: name for name in alike}  # shortened, both read the same


def test_pareto_front_by_hand():
    front = pareto_front([0, 1, 2, 3, 3], [5, 6, 2, 2, 1])
    assert front.tolist() == [True, False, True, False, True]
    assert pareto_front([1, 1], [2, 2]).tolist() == [True, True]


def test_min_cut_and_front_marks():
    table = cut_table(analyse_cuts(Toy().eval(), (X,), codecs=(), depth=2))
    # the fewest bytes with work on both sides: 32 after first.0 (the first of three equals);
    # 'second' sends 8 but comes after every counted operator, so it is the output
    assert table.loc[table["min_cut"], "cut"].tolist() == ["first.0"]
    lines = cut_lines(table, None)
    assert lines[2].startswith("first.0 module") and lines[2].endswith("* ")
    assert lines[-1] == ("the network's output (8 bytes) is no larger than any cut inside it: "
                         "the whole forward on the device sends the fewest bytes")
    # device FLOPs: linear 4->8: 2*32 + 8 = 72; relu 8; linear 8->2: 2*16 + 2 = 34
    assert table["device_flops"].tolist() == [0, 72, 80, 80, 114, 114]
    assert table.loc[table["pareto"], "cut"].tolist() == ["input", "second", "output"]


class HalfRead(nn.Module):
    """A 2 MiB tensor made inside a stage beside a temporary one; only half of it is read
    after the stage."""

    def forward(self, x):
        with stage("make", x) as s:
            temporary = x * 3                                  # dies inside the stage
            y = s.output(temporary + 1)
        with stage("use", y) as s:
            out = s.output(y[:, : y.shape[1] // 2].sum())
        return out


def test_only_what_crosses_a_cut_is_compressed_once(monkeypatch):
    from profiling.split import encodings

    compressed = []
    quantise, compress = encodings.CODECS["zlib"]
    monkeypatch.setitem(encodings.CODECS, "zlib",
                        (quantise, lambda data: compressed.append(len(data)) or compress(data)))
    x = torch.arange(1 << 19, dtype=torch.float32).remainder_(251).reshape(1, -1)  # 2 MiB
    table = cut_table(analyse_cuts(HalfRead(), (x,), codecs=("zlib",))).set_index("cut")
    # x at the input cut, y's first half at the cut after 'make', the sum at the output:
    # neither the temporary nor y's unread half
    assert sorted(compressed) == [4, 1 << 20, 2 << 20]
    assert table.loc["make", "zlib_bytes"] == _zlib((x * 3 + 1)[:, : x.shape[1] // 2])


def test_compression_runs_once_per_storage_in_a_pool():
    from profiling.split.encodings import compressed_sizes

    data = torch.arange(1 << 21, dtype=torch.int32).view(torch.uint8)  # 8 MiB (+ 4: a pool)
    whole = (np.array([0]), np.array([data.numel()]))
    half = (np.array([0]), np.array([data.numel() // 2]))
    sizes = compressed_sizes([(data, whole, torch.int32), (data, half, torch.int32)],
                             ["zlib"], workers=2)
    assert sizes[0]["zlib"] == len(zlib.compress(data.numpy().tobytes(), 1))
    assert sizes[1]["zlib"] == len(zlib.compress(data[: data.numel() // 2].numpy().tobytes(), 1))


def test_the_pool_has_as_many_threads_as_the_process_may_use_cores(monkeypatch):
    """A process pinned to fewer cores than the machine has (a container, ``taskset``) gets
    that many threads, and the sizes do not depend on how many compress them."""
    from concurrent.futures import ThreadPoolExecutor

    from profiling.split import encodings
    from profiling.statistics import usable_cores

    data = torch.arange(1 << 21, dtype=torch.int32).view(torch.uint8)  # 8 MiB: a pool
    items = [(data, (np.array([0]), np.array([n])), torch.int32) for n in (1 << 23, 1 << 22)]
    pools = []

    def pool(max_workers):
        pools.append(max_workers)
        return ThreadPoolExecutor(max_workers=max_workers)

    monkeypatch.setattr(encodings, "ThreadPoolExecutor", pool)
    sizes = {}
    for cores in ({5}, {0, 2, 7}):
        monkeypatch.setattr("os.sched_getaffinity", lambda pid, cores=cores: set(cores))
        assert usable_cores() == len(cores)
        sizes[len(cores)] = encodings.compressed_sizes(items, ["zlib"])
    assert pools == [3]  # one core: no pool
    assert sizes[1] == sizes[3] == [{"zlib": len(zlib.compress(data.numpy().tobytes(), 1))},
                                    {"zlib": len(zlib.compress(data[: 1 << 22].numpy().tobytes(),
                                                               1))}]


def test_zstd_when_zstandard_is_installed():
    zstandard = pytest.importorskip("zstandard")
    x = torch.arange(64.0).reshape(1, 32, 2)
    table = cut_table(analyse_cuts(PadThenSlice(), (x,), codecs=("zstd",)))
    expected = len(zstandard.ZstdCompressor(level=3).compress((x * 2).numpy().tobytes()))
    assert table.set_index("cut").loc["attend", "zstd_bytes"] == expected


class InPlace(nn.Module):
    """A 2 MiB tensor changed in place after a cut (its content at the cut is kept)."""

    def forward(self, x):
        with stage("make", x) as s:
            y = s.output(x * 2)
        with stage("change", y) as s:
            s.output(y.add_(1))
        with stage("use", y) as s:
            out = s.output(y.sum())
        return out


def test_content_is_compressed_as_it_was_at_each_cut():
    x = torch.arange(1 << 19, dtype=torch.float32).remainder_(251).reshape(1, -1)  # 2 MiB
    table = cut_table(analyse_cuts(InPlace(), (x,), codecs=("zlib",))).set_index("cut")
    assert table.loc["make", "zlib_bytes"] == _zlib(x * 2)
    assert table.loc["change", "zlib_bytes"] == _zlib(x * 2 + 1)
    assert _zlib(x * 2) != _zlib(x * 2 + 1)


def test_every_cut_has_its_own_name():
    class Named(nn.Module):
        """A stage named like a module, ending later than the module."""

        def __init__(self) -> None:
            super().__init__()
            self.post = nn.Linear(4, 2)

        def forward(self, x):
            with stage("post", x) as s:
                return s.output(self.post(x) * 2)

    table = cut_table(analyse_cuts(Named().eval(), (X,), codecs=(), depth=1))
    assert list(table["cut"]) == ["input", "post (module)", "post", "output"]


def test_a_failing_forward_keeps_its_own_error():
    class Fails(nn.Module):
        def forward(self, x):
            with stage("first", x) as s:
                y = s.output(x * 2)
            raise ValueError("the model's own error")

    with pytest.raises(ValueError, match="the model's own error"):
        analyse_cuts(Fails(), (X,), codecs=("zlib",), every_op=True)
