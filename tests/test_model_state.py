"""ModelState: a full restore checks and learns what a forward changes; between timed forwards
only that is put back, with nothing read from the device."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from profiling.stages.model_state import ModelState


class TwoBuffers(nn.Module):
    """``kept`` holds a NaN (unchanged, it must read as unchanged); ``moved`` is what the
    forward updates in place, without bumping its version counter (as BatchNorm's kernel)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("kept", torch.tensor([float("nan"), 1.0]))
        self.register_buffer("moved", torch.zeros(2))


def test_a_full_restore_copies_back_only_what_changed_and_remembers_it():
    model = TwoBuffers()
    state = ModelState(model, "cpu")
    assert state.restore() is False  # nothing changed, the NaN included: nothing copied
    model.moved.data.add_(1.0)
    assert state.restore() is True and model.moved.tolist() == [0.0, 0.0]
    # between timed forwards: the buffer seen to change is put back, with no comparison
    model.moved.data.add_(5.0)
    model.kept.data[1] = 7.0  # never seen to change: left until the next full restore
    assert state.restore_known_changes() is True
    assert model.moved.tolist() == [0.0, 0.0] and model.kept[1].item() == 7.0
    assert state.restore() is True and model.kept[1].item() == 1.0


def test_generators_are_set_back_between_forwards_only_when_a_forward_drew(monkeypatch):
    model = TwoBuffers()
    state = ModelState(model, "cpu")
    sets = []
    set_rng_state = torch.set_rng_state
    monkeypatch.setattr(torch, "set_rng_state", lambda s: sets.append(1) or set_rng_state(s))
    assert state.restore_known_changes() is False and sets == []  # first: a full check
    assert state.restore_known_changes() is False and sets == []  # no draw seen: untouched
    before = torch.get_rng_state()
    torch.rand(3)
    assert state.restore() is False and sets == [1]  # a draw seen and set back
    torch.rand(3)
    assert state.restore_known_changes() is False and sets == [1, 1]
    assert torch.equal(torch.get_rng_state(), before)


def test_reassigned_and_registered_buffers_are_put_back_without_device_work():
    model = TwoBuffers()
    moved = model.moved
    state = ModelState(model, "cpu")
    state.restore()
    model.moved = torch.ones(2)          # a new tensor in the slot
    model.register_buffer("extra", torch.ones(1))
    assert state.restore_known_changes() is False  # the slots only: nothing to copy
    assert model.moved is moved and dict(model.named_buffers()).keys() == {"kept", "moved"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64,
                                   torch.complex64, torch.int8, torch.bool])
def test_every_dtype_is_compared_bit_for_bit(dtype):
    model = nn.Module()
    model.register_buffer("value", torch.zeros(3, dtype=dtype))
    state = ModelState(model, "cpu")
    assert state.restore() is False
    model.value.data[1] = 1
    assert state.restore() is True and not model.value.any()
