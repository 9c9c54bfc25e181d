"""The stage API: nesting, repeated calls, probes, attachment, and leaving nothing behind."""

import pytest
import torch
from torch import nn

from profiling import Session, attach_stages, probe, stage
from profiling.stages.markers import _INACTIVE, active_session


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        with stage("body", x) as s:
            for _ in range(3):
                with stage("block", x) as b:
                    x = b.output(torch.relu(self.conv(x) if x.shape[1] == 3 else x))
            probe("after_blocks", x)
            x = s.output(x.mean(dim=(2, 3)))
        return self.head(x)


def _run(model, x, **session_options):
    with Session(**session_options) as session:
        with session.forward():
            out = model(x)
    return session.forwards[0], out


def test_inactive_markers_are_the_shared_no_op():
    assert active_session() is None
    assert stage("anything", torch.ones(1)) is _INACTIVE
    value = torch.ones(2)
    assert probe("p", value) is value
    with stage("x") as s:
        assert s.output(value) is value


def test_nesting_and_repeated_calls():
    calls, _ = _run(Toy(), torch.rand(1, 3, 8, 8))
    assert [(c.name, c.kind, c.depth, c.call_index) for c in calls] == [
        ("body", "stage", 0, 0), ("block", "stage", 1, 0), ("block", "stage", 1, 1),
        ("block", "stage", 1, 2), ("after_blocks", "probe", 1, 0)]
    assert [c.parent for c in calls] == [None, 0, 0, 0, 0]


def test_payload_recorded_with_exact_bytes():
    calls, _ = _run(Toy(), torch.rand(2, 3, 8, 8), record_payload=True)
    body, block0 = calls[0], calls[1]
    assert body.inputs.shape == (2, 3, 8, 8) and body.inputs.nbytes == 2 * 3 * 8 * 8 * 4
    assert body.outputs.shape == (2, 4) and body.outputs.nbytes == 32
    assert block0.outputs.shape == (2, 4, 8, 8)
    assert calls[4].outputs.nbytes == 2 * 4 * 8 * 8 * 4


def test_payload_not_recorded_unless_asked():
    calls, _ = _run(Toy(), torch.rand(1, 3, 8, 8))
    assert all(c.inputs is None and c.outputs is None for c in calls)


def test_profiling_does_not_change_outputs():
    torch.manual_seed(0)
    model, x = Toy().eval(), torch.rand(1, 3, 8, 8)
    plain = model(x)
    _, profiled = _run(model, x, record_payload=True)
    assert torch.equal(plain, profiled)


def test_attached_stages_by_module_path_and_removed_afterwards():
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.Sequential(nn.ReLU(), nn.Flatten()))
    with attach_stages(model, {"stem": "0", "tail": "1", "flatten": "1.1"}):
        calls, _ = _run(model, torch.rand(1, 3, 2, 2), record_payload=True)
    assert [(c.name, c.depth) for c in calls] == [("stem", 0), ("tail", 0), ("flatten", 1)]
    assert calls[2].outputs.shape == (1, 16)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_no_hooks_or_session_left_after_an_exception():
    class Failing(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(2, 2)

        def forward(self, x):
            with stage("outer", x):
                self.inner(x)
                raise RuntimeError("boom")

    model = Failing()
    with pytest.raises(RuntimeError, match="boom"):
        with attach_stages(model, {"inner": "inner"}):
            _run(model, torch.rand(1, 2))
    assert active_session() is None
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_stage_left_open_by_an_exception_is_closed_with_its_parent():
    with Session() as session:
        with pytest.raises(ValueError):
            with session.forward():
                with stage("a"):
                    with stage("b"):
                        raise ValueError
    calls = session.forwards[0]
    assert [c.name for c in calls] == ["a", "b"]
    assert [kind for kind, _ in session.events] == ["in", "in", "out", "out"]


def test_unknown_attachment_path_is_one_clear_error():
    from profiling import ProfilingError
    with pytest.raises(ProfilingError, match="no submodule 'nope'.*children are: 0"):
        with attach_stages(nn.Sequential(nn.ReLU()), {"x": "nope"}):
            pass
