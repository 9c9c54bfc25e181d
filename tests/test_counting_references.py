"""Agreement with established counters on torchvision ResNets, where their conventions agree.

- fvcore (as mmengine): its convolution and linear "flops" are our MACs; its activations ours.
- ptflops, aten backend: our MACs plus the linear layer's bias (it adds bias to addmm).
- torchinfo: our MACs plus, per non-convolution layer, batch x parameters (its mult-adds count
  the batch norms' weight and bias and the linear bias once per sample).
"""

from __future__ import annotations

import pytest
import torch
import torchvision
from torch import nn

from profiling.counting import count_ops

SIZE = 64
ARCHS = ["resnet18", pytest.param("resnet50", marks=pytest.mark.slow)]


@pytest.fixture(scope="module", params=ARCHS)
def resnet(request):
    model = torchvision.models.get_model(request.param, weights=None).eval()
    image = torch.randn(1, 3, SIZE, SIZE)
    with torch.no_grad():
        counting = count_ops(model, image)
    return model, image, counting


def test_fvcore_convolution_and_linear_flops_are_our_macs(resnet):
    fvcore = pytest.importorskip("fvcore.nn")
    model, image, counting = resnet
    with torch.no_grad():
        flops = fvcore.FlopCountAnalysis(model, image)
        flops.unsupported_ops_warnings(False)
        by_operator = flops.by_operator()
        activations = fvcore.ActivationCountAnalysis(model, image).total()
    assert by_operator["conv"] + by_operator["linear"] == counting.total.macs
    assert activations == counting.total.activations
    by_module = flops.by_module_and_operator()
    for name in ("conv1", "layer1", "layer4.0.conv1", "fc"):
        operators = by_module[name]
        assert counting.modules[name].total.macs == operators["conv"] + operators["linear"]


def test_ptflops_aten_backend_adds_the_linear_bias(resnet):
    ptflops = pytest.importorskip("ptflops")
    model, _, counting = resnet
    macs, params = ptflops.get_model_complexity_info(
        model, (3, SIZE, SIZE), backend="aten", as_strings=False, print_per_layer_stat=False,
        verbose=False)
    assert macs == counting.total.macs + model.fc.out_features
    assert params == sum(p.numel() for p in model.parameters())


def test_torchinfo_adds_norm_and_bias_parameters(resnet):
    torchinfo = pytest.importorskip("torchinfo")
    model, image, counting = resnet
    summary = torchinfo.summary(model, input_data=image, verbose=0)
    per_sample = sum(p.numel() for m in model.modules() if isinstance(m, nn.BatchNorm2d)
                     for p in m.parameters()) + model.fc.bias.numel()
    assert summary.total_mult_adds == counting.total.macs + image.shape[0] * per_sample


def test_resnet18_macs_by_hand():
    model = torchvision.models.resnet18(weights=None).eval()
    with torch.no_grad():
        counting = count_ops(model, torch.randn(1, 3, SIZE, SIZE))
    # the stem: 7x7 conv, 3 -> 64, stride 2: 32x32 outputs
    assert counting.modules["conv1"].total.macs == 32 * 32 * 64 * 3 * 7 * 7
    # every BasicBlock 3x3 conv of layer1 (64 -> 64 at 16x16)
    assert counting.modules["layer1.0.conv1"].total.macs == 16 * 16 * 64 * 64 * 9
    assert counting.modules["fc"].total.macs == 512 * 1000
