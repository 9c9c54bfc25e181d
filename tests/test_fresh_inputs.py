"""profile_model returns what one plain forward returns, and every pass sees the inputs as the
caller gave them, whatever the model does to its inputs, to its output or to its own state
(issue 23, section 3)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from profiling import profile_model, stage
from profiling.stages.guards import fresh_copy

#: one run per kind of pass that can give the output: the analysis pass, the timed forwards
#: alone, a counted pass then a plain forward, and every pass at once
COLLECTOR_SETS = {
    "analysis": dict(collectors=["payload"]),
    "timed": dict(collectors=["cpu_time"], warmup=1, repeats=3),
    "counted": dict(collectors=["op_counts"]),
    "all": dict(collectors=["payload", "tensor_memory", "liveness", "op_counts", "cpu_time"],
                warmup=1, repeats=2),
}


class AddsToItsInput(nn.Module):
    """Changes its input in place (through a view chosen by ``how``) and returns the input."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how

    def forward(self, x):
        with stage("change", x) as s:
            target = {"whole": x, "transposed": x.t(), "sliced": x[:, 1:],
                      "strided": x[::2]}[self.how]
            target.add_(10)
            return s.output(x)


class ReturnsAView(nn.Module):
    def forward(self, x):
        view = x.t()[1]
        view.mul_(2)
        return view


class FillsAList(nn.Module):
    """Appends to a list given as input and returns it."""

    def forward(self, items):
        items.append(items[0] * 3)
        return items


class KeepsHistory(nn.Module):
    """Returns a list it holds and grows at every call: one plain call returns one item."""

    def __init__(self) -> None:
        super().__init__()
        self.history: list = []

    def forward(self, x):
        self.history.append(x + 1)
        return self.history


class ReturnsItsCounter(nn.Module):
    """Returns a dict holding a buffer that every call increments in place."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return {"calls": self.calls, "y": x * self.calls}


class ChangesADictEntry(nn.Module):
    def forward(self, inputs):
        inputs["x"].sub_(1)
        inputs["seen"] = inputs.get("seen", 0) + 1
        return {"y": inputs["x"] * 2, "seen": inputs["seen"]}


def _plain(model_type, make_inputs, *args):
    """What one plain call of a new model returns on new inputs."""
    with torch.inference_mode():
        return model_type(*args).eval()(*make_inputs())


def _equal(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


def _grid() -> torch.Tensor:
    return torch.arange(12.0).reshape(3, 4)


CASES = {
    "changes its input": (AddsToItsInput, ("whole",), lambda: (_grid(),)),
    "changes a transposed view": (AddsToItsInput, ("transposed",), lambda: (_grid(),)),
    "changes a slice": (AddsToItsInput, ("sliced",), lambda: (_grid(),)),
    "changes a strided slice of a transposed input": (
        AddsToItsInput, ("strided",), lambda: (_grid().t(),)),
    "returns a view it changed": (ReturnsAView, (), lambda: (_grid(),)),
    "fills the list it was given": (FillsAList, (), lambda: ([_grid()],)),
    "returns a list it keeps": (KeepsHistory, (), lambda: (_grid(),)),
    "returns a buffer it increments": (ReturnsItsCounter, (), lambda: (_grid(),)),
    "changes the dict it was given": (ChangesADictEntry, (), lambda: ({"x": _grid()},)),
}


@pytest.mark.parametrize("passes", list(COLLECTOR_SETS))
@pytest.mark.parametrize("case", list(CASES))
def test_the_output_is_what_one_plain_forward_returns(case, passes):
    model_type, args, make_inputs = CASES[case]
    expected = _plain(model_type, make_inputs, *args)
    inputs = make_inputs()
    result = profile_model(model_type(*args).eval(), inputs, **COLLECTOR_SETS[passes])
    assert _equal(result.output, expected), (result.output, expected)
    assert _equal(inputs, make_inputs())  # the caller's inputs are untouched


@pytest.mark.parametrize("case", ["changes its input", "changes a transposed view",
                                  "returns a view it changed", "changes the dict it was given"])
def test_inputs_made_in_inference_mode_are_never_changed(case):
    model_type, args, make_inputs = CASES[case]
    expected = _plain(model_type, make_inputs, *args)
    with torch.inference_mode():
        inputs = make_inputs()
    result = profile_model(model_type(*args).eval(), inputs, **COLLECTOR_SETS["all"])
    assert _equal(result.output, expected)
    assert _equal(inputs, make_inputs())
    assert result.notes == ["the model changes its inputs in place; every pass was given the "
                            "original values"]


class SeesItsInputs(nn.Module):
    """Records what every pass saw: values, strides and whether two inputs share memory."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list = []

    def forward(self, x, view):
        self.seen.append((x.tolist(), x.stride(), view.stride(),
                          x.untyped_storage().data_ptr() == view.untyped_storage().data_ptr()))
        x.zero_()
        return view.sum()


def test_every_pass_sees_the_callers_values_strides_and_shared_memory():
    base = torch.arange(6.0).reshape(2, 3)
    x, view = base.t(), base[1]
    model = SeesItsInputs().eval()
    result = profile_model(model, (x, view), **COLLECTOR_SETS["all"])
    # analysis, liveness, counting, 1 warm-up and 2 timed forwards
    assert len(model.seen) == 6
    assert all(seen == ([[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]], (1, 3), (1,), True)
               for seen in model.seen)
    assert result.output.item() == 0.0  # the view of the same (zeroed) copy
    assert base.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_a_model_that_leaves_its_inputs_alone_gets_one_copy_for_every_timed_forward():
    seen = []

    class Records(nn.Module):
        def forward(self, x):
            seen.append(x.untyped_storage().data_ptr())
            return x * 2

    x = torch.ones(4)
    result = profile_model(Records().eval(), (x,), collectors=["cpu_time"], warmup=1, repeats=4)
    # the first forward's output is kept, so it has its own copy; the others share one
    assert len(seen) == 5 and len(set(seen[1:])) == 1 and seen[0] != seen[1]
    assert x.untyped_storage().data_ptr() not in seen
    assert result.notes == []


def test_meta_inputs_are_copied_with_their_shapes():
    model = AddsToItsInput("transposed").eval()
    x = torch.empty(3, 4, device="meta").t()
    result = profile_model(model, (x,), collectors=["payload", "op_counts"])
    assert result.output.device.type == "meta"
    assert result.output.shape == (4, 3) and result.output.stride() == (1, 4)


def test_fresh_copy_keeps_views_and_objects_apart_from_the_original():
    base = torch.arange(4.0)

    class Holder:
        def __init__(self) -> None:
            self.tensors = [base, base[1:]]

    original = {"a": base, "held": Holder(), "n": 3}
    copied = fresh_copy(original)
    copied["a"].fill_(7)
    assert copied["held"].tensors[1].tolist() == [7.0, 7.0, 7.0]  # still a view of the copy
    assert copied["a"] is copied["held"].tensors[0]
    assert base.tolist() == [0.0, 1.0, 2.0, 3.0] and copied["n"] == 3
