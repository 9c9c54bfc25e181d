"""GMFlow's attention helper: the fused and the explicit path compute the same attention, and
the fused path hands each device's kernel values of the width it takes."""

from __future__ import annotations

import pytest
import torch

from zoo.models.networks.gmflow import attention
from zoo.models.networks.gmflow.attention import attend, fused_value_width


@pytest.mark.parametrize("value_width", [2, 128])
def test_fused_and_explicit_attention_agree(monkeypatch, value_width):
    monkeypatch.setattr(attention, "FUSED_MIN_KEYS_CPU", 0)
    generator = torch.Generator().manual_seed(0)
    query, key = (torch.randn(2, 48, 128, generator=generator) for _ in range(2))
    value = torch.randn(2, 48, value_width, generator=generator)
    mask = torch.rand(2, 48, 48, generator=generator) > 0.3
    mask[..., 0] = True  # every query keeps a key
    for options in ({}, {"mask": mask}):
        fused = attend(query, key, value, impl="sdpa", **options)
        explicit = attend(query, key, value, impl="math", **options)
        assert fused.shape == (2, 48, value_width)
        torch.testing.assert_close(fused, explicit, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device, value_width, expected", [
    ("cpu", 2, 128),   # the CPU flash kernel wants values as wide as the queries
    ("cpu", 128, 128),
    ("meta", 2, 8),    # any other device: the next multiple of 8 (CUDA's memory-efficient kernel)
    ("meta", 12, 16),
    ("meta", 128, 128),
])
def test_fused_value_width(device, value_width, expected):
    query = torch.empty(1, 4, 128, device=device)
    assert fused_value_width(query, value_width) == expected


def test_window_order_of_a_4x4_grid():
    # 2x2 windows of 2x2 tokens, row-major; shifted: the grid rolled back by (1, 1) first
    from zoo.models.networks.gmflow.utils import window_order
    assert window_order(4, 4, 2, False).tolist() == [0, 1, 4, 5, 2, 3, 6, 7,
                                                     8, 9, 12, 13, 10, 11, 14, 15]
    assert window_order(4, 4, 2, True).tolist() == [5, 6, 9, 10, 7, 4, 11, 8,
                                                    13, 14, 1, 2, 15, 12, 3, 0]


def test_reorder_index_moves_tokens_between_orders():
    from zoo.models.networks.gmflow.utils import reorder_index, window_order
    tokens = torch.arange(2 * 48).view(2, 48, 1) * 10  # [B, H*W, 1] of a 6x8 grid, 2 splits
    cpu = torch.device("cpu")
    plain = tokens[:, reorder_index(6, 8, 2, None, False, cpu)]
    shifted = plain[:, reorder_index(6, 8, 2, False, True, cpu)]
    assert torch.equal(plain, tokens[:, window_order(6, 8, 2, False)])
    assert torch.equal(shifted, tokens[:, window_order(6, 8, 2, True)])
    assert torch.equal(shifted[:, reorder_index(6, 8, 2, True, None, cpu)], tokens)
    with torch.inference_mode():  # made in inference mode, a cached index still serves autograd
        index = reorder_index(6, 6, 3, None, True, cpu)
    assert not index.is_inference()
