"""Operation counts of single operators and toy models, against hand-computed values."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from profiling import Session, stage
from profiling.collectors.op_counts import OpCounts
from profiling.counting import OpCounting, count_ops, register_formula, registered_ops

F32 = 4  # bytes per float32 element


def counted(fn, *args, **kwargs) -> OpCounting:
    with OpCounting() as counting:
        fn(*args, **kwargs)
    return counting


def test_grouped_strided_conv_with_bias():
    conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, bias=True)
    x = torch.randn(2, 4, 9, 9)
    total = count_ops(conv, x).total
    # output 2x6x5x5; each output element takes C_in/groups * 3 * 3 = 18 MACs
    assert total.macs == 2 * 6 * 5 * 5 * 18 == 5400
    assert total.flops == 2 * 5400 + 2 * 6 * 5 * 5  # + one bias add per output element
    assert total.activations == 300
    assert total.bytes_read == (2 * 4 * 81 + 6 * 2 * 9 + 6) * F32
    assert total.bytes_written == 300 * F32


def test_transposed_conv_scatters_each_input_position():
    conv = nn.ConvTranspose2d(4, 2, 2, stride=2, bias=False)
    total = count_ops(conv, torch.randn(1, 4, 3, 3)).total
    assert total.macs == 3 * 3 * 4 * 2 * 2 * 2  # input positions x weight elements
    assert total.flops == 2 * total.macs
    assert total.activations == 2 * 6 * 6


def test_linear_on_a_sequence():
    linear = nn.Linear(5, 3)
    total = count_ops(linear, torch.randn(2, 7, 5)).total
    assert total.macs == 14 * 5 * 3
    assert total.flops == 2 * 210 + 14 * 3  # bias
    assert total.activations == 14 * 3


def test_matmul_broadcast_and_bmm():
    assert counted(torch.matmul, torch.randn(2, 3, 4), torch.randn(4, 5)).total.macs == 120
    total = counted(torch.bmm, torch.randn(3, 4, 5), torch.randn(3, 5, 6)).total
    assert (total.macs, total.flops, total.activations) == (360, 720, 72)
    assert counted(torch.einsum, "bik,bkj->bij", torch.randn(3, 4, 5),
                   torch.randn(3, 5, 6)).total.macs == 360


def test_gmflow_global_correlation_is_b_hw_hw_c():
    batch, height, width, channels = 2, 3, 4, 8
    feature0 = torch.randn(batch, channels, height, width)
    feature1 = torch.randn(batch, channels, height, width)

    def correlation(f0, f1):
        f0 = f0.view(batch, channels, -1).permute(0, 2, 1)  # [B, HW, C]
        f1 = f1.view(batch, channels, -1)                   # [B, C, HW]
        return torch.matmul(f0, f1) / channels ** 0.5       # [B, HW, HW]

    counting = counted(correlation, feature0, feature1)
    hw = height * width
    assert counting.by_op["aten.bmm"].macs == batch * hw * hw * channels
    assert counting.total.macs == batch * hw * hw * channels
    assert counting.total.activations == batch * hw * hw


def test_softmax_and_hand_written_attention():
    q, k, v = (torch.randn(1, 2, 5, 4) for _ in range(3))

    def attention(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    counting = counted(attention, q, k, v)
    scores = 2 * 5 * 5
    assert counting.total.macs == 2 * scores * 4
    assert counting.by_op["aten._softmax"].flops == 5 * scores
    assert counting.total.flops == 2 * counting.total.macs + 5 * scores


def test_scaled_dot_product_attention_counts_the_same_products():
    q, k, v = (torch.randn(1, 2, 5, 4) for _ in range(3))
    counting = counted(F.scaled_dot_product_attention, q, k, v)
    scores = 2 * 5 * 5
    assert counting.total.macs == 2 * scores * 4
    # math backend: q and k each scaled by sqrt(scale), softmax, two products
    assert counting.total.flops == 2 * 400 + 2 * 40 + 5 * scores
    assert not counting.uncounted


def test_multihead_attention_avoids_the_fused_fast_path():
    embed, heads, length = 8, 2, 5
    attention = nn.MultiheadAttention(embed, heads, batch_first=True).eval()
    x = torch.randn(1, length, embed)
    with torch.no_grad():
        counting = count_ops(attention, x, x, x, need_weights=False)
    projections = length * embed * 3 * embed + length * embed * embed
    products = 2 * heads * length * length * (embed // heads)
    assert counting.total.macs == projections + products
    assert not counting.uncounted


@pytest.mark.parametrize("training, per_element", [(False, 4), (True, 8)])
def test_batch_norm(training, per_element):
    norm = nn.BatchNorm2d(3).train(training)
    counting = count_ops(norm, torch.randn(2, 3, 4, 4))
    assert counting.total.flops == per_element * 96
    assert counting.total.macs == 0
    assert counting.total.bytes_written == 96 * F32  # saved statistics are not output


def test_layer_and_group_norm():
    assert count_ops(nn.LayerNorm(4), torch.randn(2, 3, 4)).total.flops == 8 * 24
    plain = nn.LayerNorm(4, elementwise_affine=False)
    assert count_ops(plain, torch.randn(2, 3, 4)).total.flops == 6 * 24
    assert count_ops(nn.GroupNorm(2, 4), torch.randn(1, 4, 2, 2)).total.flops == 8 * 16


def test_pooling():
    x = torch.randn(1, 2, 8, 8)
    assert counted(F.max_pool2d, x, 3, 2, 1).total.flops == (9 - 1) * 2 * 4 * 4
    assert counted(F.avg_pool2d, x, 2).total.flops == 4 * 2 * 4 * 4
    # 7 -> 3 adaptive windows: [0, 3), [2, 5), [4, 7): 9 elements per axis
    assert counted(F.adaptive_avg_pool2d, torch.randn(1, 1, 7, 7), 3).total.flops == 9 * 9
    assert counted(F.adaptive_max_pool2d, torch.randn(1, 1, 7, 7), 3).total.flops == 81 - 9


@pytest.mark.parametrize("mode, per_output", [("nearest", 0), ("bilinear", 7), ("bicubic", 31)])
def test_interpolate(mode, per_output):
    x = torch.randn(1, 2, 3, 3)
    kwargs = {} if mode == "nearest" else {"align_corners": False}
    counting = counted(F.interpolate, x, size=(6, 6), mode=mode, **kwargs)
    assert counting.total.flops == per_output * 2 * 36
    assert counting.total.bytes_written == 2 * 36 * F32
    assert counting.total.bytes_read == 2 * 9 * F32


def test_grid_sample_reads_at_most_what_it_samples():
    x = torch.randn(1, 2, 4, 4)
    grid = torch.rand(1, 3, 3, 2) * 2 - 1
    counting = counted(F.grid_sample, x, grid, align_corners=True)
    outputs = 2 * 3 * 3
    assert counting.total.flops == 7 * outputs + 2 * grid.numel()
    assert counting.total.bytes_read == min(x.numel(), outputs * 4) * F32 + grid.numel() * F32


def test_roi_align():
    torchvision = pytest.importorskip("torchvision")
    x = torch.randn(1, 2, 8, 8)
    boxes = torch.tensor([[0, 0.0, 0.0, 4.0, 4.0], [0, 1.0, 1.0, 7.0, 5.0],
                          [0, 2.0, 2.0, 3.0, 6.0]])
    counting = counted(torchvision.ops.roi_align, x, boxes, (2, 2), 1.0, 2)
    outputs = 3 * 2 * 2 * 2
    assert counting.by_op["torchvision.roi_align"].flops == outputs * (4 * (7 + 1) + 1)


def test_sorting_and_selection_count_comparisons():
    assert counted(torch.sort, torch.randn(4, 8)).total.flops == 32 * 3  # log2(8) each
    assert counted(torch.topk, torch.randn(10), 4).total.flops == 10 * 2
    assert counted(torch.sort, torch.arange(8)).total.flops == 0


def test_integer_arithmetic_is_no_floating_point_work():
    counting = counted(torch.add, torch.arange(10), torch.arange(10))
    assert counting.total.flops == 0
    assert counting.total.bytes_read == 2 * 10 * 8


def test_views_are_free_and_listed_as_such():
    counting = counted(lambda x: x.view(4, 4).t().unsqueeze(0), torch.randn(16))
    assert counting.total.as_dict() == dict.fromkeys(counting.total.as_dict(), 0)
    assert counting.total.ops == 3
    assert not counting.uncounted
    assert {"aten.view", "aten.t", "aten.detach", "aten.empty"} <= set(registered_ops())


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_flatten_and_contiguous_cost_what_their_view_or_copy_costs(device):
    # Under inference_mode (as the runner counts) both reach the dispatcher whole; they are
    # priced by what they decompose into: a free view, or a copy where the strides need one.
    x = torch.randn(2, 3, 4, 5, device=device)
    with torch.inference_mode():
        views = counted(lambda: (x.flatten(1), x.flatten(2, 3), x.contiguous()))
        copies = counted(lambda: (x.transpose(1, 2).flatten(1), x.transpose(1, 2).contiguous()))
    assert views.total.as_dict() == dict.fromkeys(views.total.as_dict(), 0)
    assert set(views.by_op) == {"aten.view"}
    # each transposed copy reads and writes 2*3*4*5 float32 elements once: 480 bytes
    assert (copies.total.bytes_read, copies.total.bytes_written) == (2 * 480, 2 * 480)
    assert copies.by_op["aten.clone"].bytes_read == 2 * 2 * 3 * 4 * 5 * F32
    assert copies.total.flops == 0
    assert not views.uncounted and not copies.uncounted


@torch.library.custom_op("stagezoo_test::mystery", mutates_args=())
def _mystery(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_mystery.register_fake
def _(x):
    return torch.empty_like(x)


def test_uncounted_names_an_operator_without_formula():
    x = torch.randn(3, 4)
    counting = counted(lambda t: _mystery(_mystery(t)) + 1, x)
    assert counting.uncounted == {"stagezoo_test.mystery": 2}
    assert counting.total.flops == 12  # the add alone; the mystery op's FLOPs are unknown
    assert counting.by_op["stagezoo_test.mystery"].bytes_read == 2 * 12 * F32


@torch.library.custom_op("stagezoo_test::broken", mutates_args=())
def _broken(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@_broken.register_fake
def _(x):
    return torch.empty_like(x)


@register_formula(torch.ops.stagezoo_test.broken)
def _broken_formula(args, kwargs, out):
    raise IndexError("a formula that does not expect these arguments")


def test_a_failing_formula_is_listed_and_the_forward_goes_on():
    counting = counted(lambda t: _broken(t) * 2, torch.randn(5))
    assert counting.uncounted == {"stagezoo_test.broken (IndexError in its formula)": 1}
    assert counting.total.flops == 5


class _Toy(nn.Module):
    """Convolution, norm, attention over positions, interpolation and grid sampling."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)
        self.head = nn.Linear(8, 2)

    def forward(self, image):
        x = torch.relu(self.norm(self.conv(image)))
        tokens = x.flatten(2).transpose(1, 2)
        tokens = self.attention(tokens, tokens, tokens, need_weights=False)[0]
        x = tokens.transpose(1, 2).reshape(x.shape)
        x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        grid = self.head(x.permute(0, 2, 3, 1)).tanh()
        return F.grid_sample(x, grid, align_corners=False)


def test_meta_and_real_runs_count_the_same():
    model = _Toy().eval()
    image = torch.randn(2, 3, 6, 6)
    with torch.no_grad():
        real = count_ops(model, image)
        meta = count_ops(model.to("meta"), image.to("meta"))
    assert real.total.as_dict() == meta.total.as_dict()
    assert {k: v.as_dict() for k, v in real.by_op.items()} == \
        {k: v.as_dict() for k, v in meta.by_op.items()}
    assert not real.uncounted and not meta.uncounted


@pytest.mark.cuda
def test_cuda_runs_count_like_meta():
    model = _Toy().eval()
    image = torch.randn(2, 3, 6, 6)
    with torch.no_grad():
        cuda = count_ops(model.to("cuda"), image.to("cuda"))
        meta = count_ops(model.to("meta"), image.to("meta"))
    assert cuda.total.as_dict() == meta.total.as_dict()
    assert not cuda.uncounted


def test_counts_scale_exactly_with_the_image_area():
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)).eval()
    small = count_ops(model, torch.randn(1, 3, 8, 8)).total
    large = count_ops(model, torch.randn(1, 3, 16, 16)).total
    assert (large.macs, large.flops, large.activations) == \
        (4 * small.macs, 4 * small.flops, 4 * small.activations)


def test_modules_get_inclusive_counts():
    model = nn.Sequential(nn.Linear(4, 5), nn.Sequential(nn.ReLU(), nn.Linear(5, 2)))
    counting = count_ops(model, torch.randn(3, 4))
    modules = counting.modules
    assert modules["0"].total.macs == 3 * 4 * 5
    assert modules["1.1"].total.macs == 3 * 5 * 2
    assert modules["1"].total.flops == modules["1.0"].total.flops + modules["1.1"].total.flops
    assert modules[""].total.as_dict() == counting.total.as_dict()
    assert modules["1.0"].input_shapes == [(3, 5)] and modules["1.1"].output_shapes == [(3, 2)]
    assert [modules[p].first_call for p in ("", "0", "1", "1.0", "1.1")] == [0, 1, 2, 3, 4]


def test_collector_writes_inclusive_stage_counts():
    model = nn.Sequential(nn.Linear(4, 5), nn.Linear(5, 2))
    x = torch.randn(3, 4)
    collector = OpCounts(model)
    with Session([collector]) as session:
        with session.forward():
            with stage("outer", x) as outer:
                with stage("first", x) as first:
                    hidden = first.output(model[0](x))
                outer.output(model[1](hidden))
    calls = {call.name: call.metrics for call in session.forwards[-1]}
    assert calls["first"]["macs"] == 3 * 4 * 5
    assert calls["outer"]["macs"] == 3 * 4 * 5 + 3 * 5 * 2
    assert set(calls["outer"]) == {"macs", "flops", "bytes_read", "bytes_written", "activations"}
    assert collector.uncounted == {}
    assert collector.modules["1"].total.macs == 30
    assert collector.total.macs == 90
