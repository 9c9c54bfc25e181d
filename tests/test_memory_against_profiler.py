"""tensor_peak_mb against torch.profiler's memory events (issue 25 §2): on networks whose
operators allocate only their outputs the two agree to the byte; where a kernel allocates a
workspace or a reordered copy of its weights, the profiler sees more, and ours is lower, as the
column's caveat says."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from profiling import profile_model


class Whole(nn.Module):
    """``net`` as one attachable stage, ``body``."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.body = net

    def forward(self, x):
        return self.body(x)


def _profiler_peak_bytes(model: nn.Module, x: torch.Tensor) -> int:
    """The largest sum of bytes the CPU allocator handed out during one forward, above its
    start, from torch.profiler's memory events."""
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as run:
        model(x)
    events = sorted((e.start_ns(), e.nbytes()) for e in run.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    return peak


def _our_peak_bytes(model: nn.Module, x: torch.Tensor) -> float:
    result = profile_model(model, (x,), attach={"body": "body"},
                           collectors=["tensor_memory"], warmup=0, repeats=1)
    return result.stages.set_index("stage").loc["body", "tensor_peak_mb"] * 1e6


@pytest.mark.parametrize("net, x, expected", [
    # relu's 4000-byte output and sigmoid's live together: 8000 bytes
    (nn.Sequential(nn.ReLU(), nn.Sigmoid()), torch.rand(1, 1000), 8000),
    # linear 1000 -> 500 (2000 bytes), then relu's copy: 4000 bytes
    (nn.Sequential(nn.Linear(1000, 500), nn.ReLU()), torch.rand(1, 1000), 4000),
    # softmax over [4, 256]: one 4096-byte output
    (nn.Softmax(dim=-1), torch.rand(4, 256), 4096),
])
def test_outputs_only_networks_agree_with_the_profiler_to_the_byte(net, x, expected):
    model = Whole(net).eval()
    assert _profiler_peak_bytes(model, x) == expected
    assert _our_peak_bytes(model, x) == pytest.approx(expected)


def test_a_convolution_block_reads_no_higher_than_the_profiler():
    torch.manual_seed(0)
    block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.Conv2d(16, 16, 3, padding=1))
    model, x = Whole(block).eval(), torch.rand(1, 16, 32, 32)
    ours, allocator = _our_peak_bytes(model, x), _profiler_peak_bytes(model, x)
    # every output is [1, 16, 32, 32] float32 = 65536 bytes; two are live at once
    assert ours == pytest.approx(2 * 65536)
    assert allocator >= ours  # a convolution's workspace (im2col, reorders) comes on top
