"""The CUDA path of the timed loop synchronises once per forward, on any machine.

:class:`FakeCuda` stands in for a CUDA device on a CPU: the runner takes the model for a CUDA
model and runs the code it runs on a GPU (the CUDA timer with its events, the generators of
the CUDA device kept and put back, the synchronisations), and every call that would make the
host wait for the device or read a value back from it is logged. The fake device's clock
advances 1 ms at each event record, so the CUDA times read back are known by hand.
``tests/test_cuda_checks.py::test_one_synchronisation_per_timed_forward`` counts the same
thing in a real trace on a GPU.
"""

from __future__ import annotations

from collections import Counter
from typing import Optional

import pytest
import torch
from torch import nn

from profiling import Session, profile_model, stage
from profiling.collectors import timing
from profiling.collectors.timing import CudaTime
from profiling.runner import passes

#: Tensor methods that read a value back to the host (on a CUDA tensor: a synchronisation).
READ_BACKS = ("item", "tolist", "cpu", "numpy", "__bool__")


class FakeCuda:
    """A CUDA device as the profiler's CUDA path sees it, with a log of what reaches it.

    Logged: ``synchronize``; ``get_rng_state`` and ``set_rng_state`` of the CUDA generators;
    per event ``record``, ``query``, ``event_synchronize`` and ``elapsed_time``; every read-back
    of :data:`READ_BACKS` and ``torch.equal``; and ``forward`` when the model is called (the
    tests register :meth:`forward_hook`).
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.log: list[str] = []
        self.generator = torch.zeros(16, dtype=torch.uint8)  # a seed and an offset
        self.device_ms = 0.0
        self.complete = True  # what an event's query answers
        self.stream = 7  # the current stream's id
        self.queried: list = []
        fake = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.at: Optional[float] = None
                self.stream: Optional[int] = None

            def record(self, stream=None) -> None:
                fake.log.append("record")
                fake.device_ms += 1.0
                self.at, self.stream = fake.device_ms, fake.stream

            def query(self) -> bool:
                fake.log.append("query")
                fake.queried.append(self)
                return fake.complete

            def synchronize(self) -> None:
                fake.log.append("event_synchronize")

            def elapsed_time(self, end: "Event") -> float:
                fake.log.append("elapsed_time")
                return end.at - self.at

        def logged(name, result=None):
            return lambda *args, **kwargs: fake.log.append(name) or result

        def get_states():
            fake.log.append("get_rng_state")
            return [fake.generator.clone()]

        def set_states(states):
            fake.log.append("set_rng_state")
            fake.generator = states[0].clone()

        cuda = torch.cuda
        for name, value in {
                "is_available": lambda: True, "is_initialized": lambda: True,
                "current_device": lambda: 0, "device_count": lambda: 1,
                "synchronize": logged("synchronize"), "Event": Event,
                "current_stream": lambda device=None: "stream",
                "get_rng_state_all": get_states, "set_rng_state_all": set_states,
                "get_rng_state": lambda device="cuda": get_states()[0],
                "set_rng_state": lambda state, device="cuda": set_states([state])}.items():
            monkeypatch.setattr(cuda, name, value)
        monkeypatch.setattr(torch._C, "_cuda_getCurrentStream", lambda index: (fake.stream, index, 1))
        monkeypatch.setattr(timing, "_record_event", lambda event, stream: event.record(stream))
        monkeypatch.setattr(passes, "device_type_of", lambda model, inputs: "cuda")
        for name in READ_BACKS:
            monkeypatch.setattr(torch.Tensor, name, self._logging(getattr(torch.Tensor, name),
                                                                   name))
        monkeypatch.setattr(torch, "equal", self._logging(torch.equal, "equal"))

    def _logging(self, function, name):
        def call(*args, **kwargs):
            self.log.append(name)
            return function(*args, **kwargs)
        return call

    def draw(self) -> None:
        """What a random draw on the device does to its generator: advance the offset."""
        self.generator[8] += 1

    def forward_hook(self, module, args) -> None:
        self.log.append("forward")

    def between_timed_forwards(self, timed: int) -> list[list[str]]:
        """What reached the device from each of the last ``timed`` forwards' start to the next
        one's (the last forward, followed by the run's end, is left out)."""
        starts = [i for i, entry in enumerate(self.log) if entry == "forward"][-timed:]
        return [self.log[a:b] for a, b in zip(starts, starts[1:])]


@pytest.fixture
def fake_cuda(monkeypatch):
    return FakeCuda(monkeypatch)


class Staged(nn.Module):
    """A convolution and a BatchNorm (buffers that evaluation mode leaves alone) in two nested
    stages, then a third stage; ``step`` runs inside the third (a draw, a buffer update)."""

    def __init__(self, step=None) -> None:
        super().__init__()
        self.conv, self.norm = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
        self.register_buffer("calls", torch.zeros(()))
        self.step = step

    def forward(self, x):
        with stage("features", x) as s:
            with stage("conv", x) as c:
                x = c.output(self.conv(x))
            x = s.output(self.norm(x))
        with stage("head", x) as s:
            if self.step is not None:
                self.step(self)
            return s.output(x.mean(dim=(2, 3)))


def _profile(fake: FakeCuda, model: nn.Module, collectors=("cpu_time", "cuda_time")):
    model.register_forward_pre_hook(fake.forward_hook)
    return profile_model(model.eval(), (torch.rand(1, 3, 8, 8),), collectors=list(collectors),
                         warmup=1, repeats=4)


@pytest.mark.parametrize("untimed", [(), ("payload", "tensor_memory")])
def test_a_timed_forward_synchronises_once_and_reads_its_events_after(fake_cuda, untimed):
    result = _profile(fake_cuda, Staged(), ("cpu_time", "cuda_time", *untimed))
    # 3 stage calls: 6 events recorded, 1 synchronize, 1 query of the last event, 3 read-backs
    # of elapsed time; no generator touched, no value read back from the device
    expected = Counter(forward=1, record=6, synchronize=1, query=1, elapsed_time=3)
    for entries in fake_cuda.between_timed_forwards(4):
        assert Counter(entries) == expected
        synchronize = entries.index("synchronize")
        assert "record" not in entries[synchronize:]
        assert "elapsed_time" not in entries[:synchronize]
    # the fake device's clock advances 1 ms at each record: conv 1, features 3, head 1
    for forward in result.timed:
        times = {call.name: call.metrics["cuda_time_ms"] for call in forward
                 if call.kind == "stage"}
        assert times == {"features": 3.0, "conv": 1.0, "head": 1.0}


def test_a_model_that_draws_gets_its_generator_back_without_reading_it(fake_cuda):
    offsets = []
    model = Staged(step=lambda module: (offsets.append(fake_cuda.generator[8].clone()),
                                        fake_cuda.draw()))
    _profile(fake_cuda, model)
    set_back = Counter(forward=1, record=6, synchronize=1, query=1, elapsed_time=3,
                       set_rng_state=1)
    assert [Counter(e) for e in fake_cuda.between_timed_forwards(4)] == [set_back] * 3
    # every forward drew from the generator as the caller left it, and it is so after the run
    assert torch.stack(offsets).tolist() == [0] * 5 and fake_cuda.generator[8].tolist() == 0


def test_a_model_that_changes_its_buffers_waits_for_their_copy_before_the_clock(fake_cuda):
    seen = []

    def count(module):
        seen.append(module.calls.clone())
        module.calls += 1

    model = Staged(step=count)
    _profile(fake_cuda, model)
    # the copy back is device work, finished by a second synchronize before the next clock
    expected = Counter(forward=1, record=6, synchronize=2, query=1, elapsed_time=3)
    for entries in fake_cuda.between_timed_forwards(4):
        assert Counter(entries) == expected and entries[-1] == "synchronize"
    assert torch.stack(seen).tolist() == [0.0] * 5 and model.calls.tolist() == 0.0


def test_the_cuda_timer_synchronises_itself_only_when_its_events_are_not_done(fake_cuda):
    model = Staged()
    with torch.inference_mode(), Session([CudaTime()]) as session:
        for complete in (True, False):
            fake_cuda.complete = complete
            fake_cuda.log.clear()
            with session.forward():
                model(torch.rand(1, 3, 8, 8))
            assert Counter(fake_cuda.log) == Counter(
                record=6, query=1, elapsed_time=3, synchronize=0 if complete else 1)


def test_the_cuda_timer_asks_whether_the_last_event_of_each_stream_is_done(fake_cuda):
    def three_stages():
        for name, stream in (("a", 7), ("b", 8), ("c", 7)):
            fake_cuda.stream = stream
            with stage(name):
                pass

    with Session([CudaTime()]) as session:
        with session.forward():
            three_stages()
    # events 1-2 on stream 7, 3-4 on stream 8, 5-6 on stream 7: the last before each switch
    # and the last of all
    assert [(event.stream, event.at) for event in fake_cuda.queried] == [(7, 2.0), (8, 4.0),
                                                                          (7, 6.0)]
    assert [call.metrics["cuda_time_ms"] for call in session.forwards[0]] == [1.0] * 3
