"""Networks, modes and sizes that no issue names, through the library and the zoo's tools.

An outside audit's classes, each with several variants: forwards that change the model's
state (buffers updated, reassigned or registered, random draws, training mode), stages called
with keyword arguments, TorchScript submodules, stages re-entered inside themselves or called
at two depths, networks without stages, and library networks at odd sizes, types and layouts,
whose counts must equal ``torch.utils.flop_counter``'s (2 FLOPs per MAC of the operators it
knows) stage by stage.
"""

from __future__ import annotations

import collections

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from profiling import ProfilingError, failure_place, profile_model, write_run
from profiling.reports import format_summary, run_totals
from profiling.runner import analyse_cuts
from profiling.split import cut_table
from profiling.statistics import repeat_table
from profiling.stages.payload import iter_tensors
from zoo.tools.composition import compose_config
from zoo.tools.job_inputs import prepare

ALL = ["payload", "tensor_memory", "op_counts", "cpu_time"]


def _flop_counter_flops(model, inputs) -> tuple[int, dict]:
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(*inputs)
    return counter.get_total_flops(), counter.get_flop_counts()


def _hooks(model: nn.Module) -> int:
    return sum(len(getattr(module, name)) for module in model.modules()
               if not isinstance(module, torch.jit.ScriptModule)
               for name in ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs",
                            "_forward_pre_hooks_with_kwargs", "_backward_hooks"))


# --- forwards that change the model's state -------------------------------------------------

class _Counter(nn.Module):
    """Counts its calls in a buffer, updated in place, and branches on it."""

    def __init__(self) -> None:
        super().__init__()
        self.small, self.large = nn.Linear(4, 2), nn.Linear(4, 8)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return self.small(x) if self.calls.item() == 1 else self.large(x)


class _Reassigned(nn.Module):
    """Replaces its buffer with a new tensor (an exponential moving average of its input)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.register_buffer("average", torch.zeros(4))

    def forward(self, x):
        self.average = 0.9 * self.average + 0.1 * x.mean(0)
        return self.linear(x) + self.average


class _LazyCache(nn.Module):
    """Registers a buffer on its first call and reads it on the next ones."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        if not hasattr(self, "cache"):
            self.register_buffer("cache", torch.ones(4))
            return self.linear(x)
        return self.linear(x) * self.cache * 0


class _Noisy(nn.Module):
    """Adds random noise in evaluation mode (a sampler, a diffusion step)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x + torch.randn_like(x))


def _batch_norm_and_dropout() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Dropout(0.5), nn.ReLU())


STATEFUL = {  # name: (model, its input, train)
    "counter buffer": (lambda: _Counter().eval(), lambda: torch.rand(2, 4), False),
    "reassigned buffer": (lambda: _Reassigned().eval(), lambda: torch.rand(2, 4), False),
    "buffer registered in forward": (lambda: _LazyCache().eval(), lambda: torch.rand(2, 4),
                                     False),
    "random noise": (lambda: _Noisy().eval(), lambda: torch.rand(2, 4), False),
    "batch norm and dropout, training": (lambda: _batch_norm_and_dropout().train(),
                                         lambda: torch.rand(2, 3, 6, 7), True),
}


@pytest.mark.parametrize("name", STATEFUL)
def test_profiling_leaves_the_state_and_the_output_of_one_plain_forward(name):
    make_model, make_input, train = STATEFUL[name]
    torch.manual_seed(0)
    model, x = make_model(), make_input()
    state = {key: value.clone() for key, value in model.state_dict().items()}
    buffers = dict(model.named_buffers())
    random_state = torch.get_rng_state()
    with torch.inference_mode():
        plain = model(x)
    for module_name, module in model.named_modules():  # undo the plain forward's changes
        module._buffers.clear()
        module._buffers.update({key.rpartition(".")[2]: value for key, value in buffers.items()
                                if key.rpartition(".")[0] == module_name})
    model.load_state_dict(state)
    torch.set_rng_state(random_state)
    result = profile_model(model, (x,), collectors=ALL, warmup=1, repeats=3, train=train)
    assert torch.equal(result.output, plain)  # the plain forward's, dropout and noise included
    assert model.state_dict().keys() == state.keys()
    assert all(torch.equal(model.state_dict()[key], state[key]) for key in state)
    assert dict(model.named_buffers()).keys() == buffers.keys()
    assert all(model.get_buffer(key) is value for key, value in buffers.items())
    assert torch.equal(torch.get_rng_state(), random_state)
    assert _hooks(model) == 0


def test_every_pass_sees_the_state_the_caller_gave():
    # _Counter takes its small branch on its first call only: every pass must be a first call
    model, x = _Counter().eval(), torch.rand(2, 4)
    result = profile_model(model, (x,), collectors=ALL, warmup=2, repeats=3,
                           attach={"small": "small", "large": "large"})
    assert result.output.shape == (2, 2)
    assert list(result.stages[result.stages.kind == "stage"].stage) == ["small"]
    assert result.totals["macs"] == 2 * 4 * 2  # the small branch, not the large one
    assert model.calls.item() == 0


def test_the_state_is_put_back_after_a_failing_pass():
    class FailsOnThirdCall(_Reassigned):
        def forward(self, x):
            self.calls = getattr(self, "calls", 0) + 1
            if self.calls == 3:
                raise RuntimeError("third call")
            return super().forward(x)

    model, x = FailsOnThirdCall().eval(), torch.rand(2, 4)
    average = model.average
    random_state = torch.get_rng_state()
    with pytest.raises(RuntimeError, match="third call"):  # in the warm-up
        profile_model(model, (x,), collectors=ALL, warmup=1, repeats=2)
    assert model.average is average and not average.any()
    assert torch.equal(torch.get_rng_state(), random_state) and _hooks(model) == 0


def test_a_parameter_changed_in_place_is_reported():
    class Drifting(nn.Linear):
        def forward(self, x):
            self.weight.add_(1.0)
            return super().forward(x)

    result = profile_model(Drifting(4, 4).eval(), (torch.rand(2, 4),), collectors=ALL,
                           warmup=0, repeats=1)
    assert any("changes its parameters in place" in note for note in result.notes)


# --- keyword arguments -------------------------------------------------------------------

class _Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, mask=None, *, scale=1.0):
        y = self.linear(x) * scale
        return y if mask is None else y * mask


class _CallsWithKeywords(nn.Module):
    def __init__(self, call) -> None:
        super().__init__()
        self.inner, self.call = _Scaled(), call

    def forward(self, x, mask):
        return self.call(self.inner, x, mask)


KEYWORD_CALLS = {  # how the parent calls the stage: the payload's shapes and bytes
    "keywords only": (lambda inner, x, mask: inner(x=x, mask=mask), "[3, 4]; [3, 4]", 96),
    "positional and keywords": (lambda inner, x, mask: inner(x, mask=mask, scale=2.0),
                                "[3, 4]; [3, 4]", 96),
    "a keyword-only scalar": (lambda inner, x, mask: inner(x, scale=torch.tensor(2.0)),
                              "[3, 4]; []", 48 + 4),
    "positional only": (lambda inner, x, mask: inner(x, mask), "[3, 4]; [3, 4]", 96),
}


@pytest.mark.parametrize("name", KEYWORD_CALLS)
def test_keyword_arguments_are_part_of_the_stage_input(name):
    call, shapes, in_bytes = KEYWORD_CALLS[name]
    model = _CallsWithKeywords(call).eval()
    inputs = {"x": torch.rand(3, 4), "mask": torch.ones(3, 4)}
    result = profile_model(model, inputs, collectors=["payload", "op_counts"],
                           attach={"inner": "inner"})
    row = result.stages.set_index("stage").loc["inner"]
    assert (row.in_shapes, row.in_bytes) == (shapes, in_bytes)  # float32: 4 bytes each
    assert [list(s) for s in result.module_counts["inner"].input_shapes] == \
        [list(map(int, s.strip("[]").split(", "))) if s != "[]" else [] for s in
         shapes.split("; ")]
    assert _hooks(model) == 0


# --- TorchScript submodules --------------------------------------------------------------

class _WithCompiledPart(nn.Module):
    def __init__(self, convert) -> None:
        super().__init__()
        self.body = convert(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()))
        self.head = nn.Conv2d(4, 2, 1)

    def forward(self, x):
        return self.head(self.body(x))


SCRIPTED = {
    "scripted Sequential": lambda part: torch.jit.script(part),
    "scripted leaf": lambda part: nn.Sequential(torch.jit.script(part[0]), part[1]),
    "traced Sequential": lambda part: torch.jit.trace(part, torch.rand(1, 3, 8, 8)),
}


@pytest.mark.filterwarnings("ignore:`torch.jit")
@pytest.mark.parametrize("name", SCRIPTED)
def test_torchscript_parts_are_counted_and_written_and_refused_as_stages(name, tmp_path):
    model, x = _WithCompiledPart(SCRIPTED[name]).eval(), torch.rand(1, 3, 8, 8)
    flops, _ = _flop_counter_flops(model, (x,))
    result = profile_model(model, (x,), collectors=ALL, warmup=0, repeats=1,
                           attach={"head": "head"})
    assert 2 * result.totals["macs"] == flops == 2 * (4 * 27 * 36 + 2 * 4 * 36)
    assert result.stages.set_index("stage").loc["head", "macs"] == 2 * 4 * 36
    assert torch.equal(result.output, model(x))
    assert write_run(result, tmp_path / "run", model)  # the layer and module tables too
    scripted = next(path for path, module in model.named_modules()
                    if isinstance(module, torch.jit.ScriptModule))
    cuts = cut_table(analyse_cuts(model, (x,), attach={"head": "head"}, depth=2))
    assert "head" in set(cuts.cut) and cuts.set_index("cut").loc["head", "raw_bytes"] == 4 * 2 * 36
    with pytest.raises(ProfilingError, match=rf"stage 'part' is attached to '{scripted}', a "
                                             r"TorchScript module .* takes no hooks"):
        profile_model(model, (x,), attach={"part": scripted})
    assert _hooks(model) == 0


# --- stages re-entered or called at two depths -------------------------------------------

class _Recursive(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, depth: int = 2):
        x = self.linear(x)
        return self(x, depth - 1) if depth else x


class _Root(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class _SharedAtTwoDepths(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.block = nn.Sequential(self.linear, nn.Linear(4, 4))

    def forward(self, x):
        return self.block(self.linear(x))


class _SharedThreeTimes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(self.linear(self.linear(x)))


REUSED = {  # model, attached stages
    "recursive": (lambda: _Root(_Recursive()), {"inner": "inner", "linear": "inner.linear"}),
    "shared at two depths": (_SharedAtTwoDepths, {"linear": "linear", "block": "block"}),
    "shared, three calls": (_SharedThreeTimes, {"linear": "linear"}),
}


def _column(lines: list[str], heading: str, width: int = 10) -> dict[str, float]:
    """``{row label: value}`` of one right-aligned column of the summary table."""
    end = lines[0].index(heading) + len(heading)
    values = {}
    for line in lines[2:]:
        if line.startswith("total") or not line.strip():
            break
        cell = line[end - width:end].strip().rstrip("%*")
        values[line[:41].rstrip()] = float(cell) if cell not in ("", "-") else 0.0
    return values


@pytest.mark.parametrize("name", REUSED)
def test_reused_stages_add_up_in_every_table(name):
    make_model, attach = REUSED[name]
    model, x = make_model().eval(), torch.rand(2, 4)
    result = profile_model(model, (x,), collectors=ALL, warmup=1, repeats=3, attach=attach)
    assert 0 < result.coverage["time"] <= 1.0  # not each nested call's time again
    assert result.coverage["flops"] == 1.0
    lines = format_summary(result.stages, times=repeat_table(result.timed),
                           totals=run_totals(result, model, (x,)), max_depth=1).splitlines()
    gflops = _column(lines, "GFLOPs")
    top = sum(value for label, value in gflops.items() if not label.startswith(" "))
    assert top == pytest.approx(result.totals["flops"] / 1e9, rel=1e-3)
    for parent in [label for label in gflops if f"  {label}/other" in gflops]:
        children = [label for label in gflops if label.startswith("  ")
                    and list(gflops).index(label) > list(gflops).index(parent)]
        assert sum(gflops[c] for c in children) == pytest.approx(gflops[parent], rel=1e-3)
    shares = _column(lines, "share")
    assert all(value <= 100.0 for value in shares.values())


def _tied() -> nn.Module:
    model = nn.Module()
    model.encoder = nn.Linear(4, 4)
    model.decoder = model.encoder
    return model


TWO_PATHS = {  # a model, and two paths to one of its modules
    "tied attributes": (_tied, {"encoder": "encoder", "decoder": "decoder"}),
    "one layer twice in a Sequential": (
        lambda: nn.Sequential(*[nn.Linear(4, 4)] * 2), {"first": "0", "second": "1"}),
    "the model under two names": (lambda: nn.Linear(4, 4), {"all": "", "again": ""}),
}


@pytest.mark.parametrize("name", TWO_PATHS)
def test_two_stages_on_one_module_are_refused_in_one_line(name):
    make_model, attach = TWO_PATHS[name]
    model = make_model().eval()
    first, second = attach
    with pytest.raises(ProfilingError, match=rf"stages '{first}' .* and '{second}' .* are one "
                                             r"module reached by two paths \(shared weights\)"):
        profile_model(model, (torch.rand(2, 4),), collectors=["payload"], attach=attach)
    assert _hooks(model) == 0


@pytest.mark.parametrize("model", [nn.Sequential(nn.Identity(), nn.Identity()), nn.ReLU(),
                                   nn.Sequential(nn.Flatten(), nn.Softmax(-1))],
                         ids=["identities", "no parameters", "no stages"])
def test_a_network_without_stages_has_a_coverage_of_nothing(model):
    result = profile_model(model.eval(), (torch.rand(2, 3),), collectors=ALL, warmup=0,
                           repeats=2)
    assert result.coverage["time"] == 0.0
    assert result.coverage.get("flops", 0.0) == 0.0
    assert list(result.stages.stage) == ["other"]


# --- outputs of every shape ---------------------------------------------------------------

Pair = collections.namedtuple("Pair", "first second")


class _Outputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(3, 2)

    def forward(self, x):
        y = self.a(x)
        return {"y": y, "list": [self.b(y), None], "pair": Pair(y, None), "none": None}


def test_outputs_of_every_container_are_walked_and_returned_as_given():
    model, x = _Outputs().eval(), torch.rand(2, 4)
    result = profile_model(model, (x,), collectors=ALL, warmup=0, repeats=1,
                           attach={"root": "", "a": "a", "b": "b"})
    root = result.stages.set_index("stage").loc["root"]
    assert root.out_shapes == "[2, 3]; [2, 2]; [2, 3]" and root.out_bytes == 4 * (6 + 4 + 6)
    plain = model(x)
    assert result.output["list"][1] is None and result.output["none"] is None
    assert isinstance(result.output["pair"], Pair)
    assert all(torch.equal(a, b) for a, b in zip(iter_tensors(result.output),
                                                 iter_tensors(plain)))


# --- library networks at odd sizes, types and layouts ------------------------------------

def _check_against_flop_counter(overrides: list[str]) -> None:
    cfg = compose_config(overrides)
    device = torch.device(cfg.device.name)
    model, inputs, attach, _ = prepare(cfg, device)
    flops, per_module = _flop_counter_flops(model, inputs)
    result = profile_model(model, inputs, collectors=["payload", "op_counts"], attach=attach)
    assert 2 * result.totals["macs"] == flops > 0
    stages = result.stages[result.stages.kind == "stage"]
    compared = 0
    for name, calls in stages.groupby("stage"):
        keys = [key for key in per_module if key.endswith("." + attach.get(name, "?"))]
        if keys:
            assert 2 * calls.macs.sum() == sum(per_module[keys[0]].values()), name
            compared += 1
    assert compared >= 2
    top = result.stages[result.stages.depth == 0]
    assert top.flops.sum() == result.totals["flops"]  # stages + other = the whole forward
    first = stages.iloc[0]
    assert first.in_bytes == sum(t.numel() * t.element_size() for t in iter_tensors(inputs))
    if device.type == "cpu":
        with torch.inference_mode():
            plain = model(*inputs)
        assert all(torch.equal(a, b) for a, b in zip(iter_tensors(result.output),
                                                     iter_tensors(plain)))
    assert _hooks(model) == 0


LIBRARY = {
    "resnet18 below its stride": ["model=torchvision", "model.arch=resnet18", "device=cpu",
                                  "input.size=[5,3]"],
    "lraspp, 1 channel, batch 3": ["model=torchvision", "model.arch=lraspp_mobilenet_v3_large",
                                   "device=cpu", "input.size=[7,9]", "input.batch=3",
                                   "model.in_channels=1"],
    "regnet in bfloat16": ["model=timm", "model.arch=regnetx_002", "device=cpu",
                           "input.size=[40,24]", "run.dtype=bfloat16"],
    "regnet channels-last": ["model=timm", "model.arch=regnetx_002", "device=cpu",
                             "input.size=[40,24]", "run.channels_last=true"],
    "swin_t off its window size (meta)": ["model=torchvision", "model.arch=swin_t",
                                          "device=meta", "input.size=[33,47]"],
}
SLOW_LIBRARY = {
    "convnext_atto float16 batch 3": ["model=timm", "model.arch=convnext_atto", "device=cpu",
                                      "input.size=[37,53]", "input.batch=3",
                                      "run.dtype=float16"],
    "efficientnet_b0 1 channel": ["model=timm", "model.arch=efficientnet_b0", "device=cpu",
                                  "input.size=[17,19]", "model.in_channels=1"],
    "deeplabv3 odd size (meta)": ["model=torchvision",
                                  "model.arch=deeplabv3_mobilenet_v3_large", "device=meta",
                                  "input.size=[97,131]"],
    "retinanet odd size (meta)": ["model=torchvision", "model.arch=retinanet_resnet50_fpn",
                                  "device=meta", "input.size=[100,130]",
                                  "model.arch_options={min_size: 100, max_size: 130}"],
    "raft_small (meta)": ["model=torchvision", "model.arch=raft_small", "device=meta",
                          "input.size=[128,160]"],
    "maxvit_t (meta)": ["model=torchvision", "model.arch=maxvit_t", "device=meta"],
}


@pytest.mark.parametrize("name", [*LIBRARY, *(pytest.param(name, marks=pytest.mark.slow)
                                              for name in SLOW_LIBRARY)])
def test_library_networks_count_what_torch_counts_stage_by_stage(name):
    _check_against_flop_counter({**LIBRARY, **SLOW_LIBRARY}[name])


# --- where a failure happened ---------------------------------------------------------------

class _FailsBetweenStages(nn.Module):
    def __init__(self, fail_after: int) -> None:
        super().__init__()
        self.linear, self.fail_after = nn.Linear(4, 4), fail_after

    def forward(self, x):
        for call in range(3):
            if call == self.fail_after:
                raise ValueError("too small")
            x = self.linear(x)
        return x


FAILURES = {  # model, collectors: where the line says it failed
    "before the first stage": (lambda: _FailsBetweenStages(0), ["payload"],
                               " before the first stage"),
    "between two calls": (lambda: _FailsBetweenStages(2), ["payload", "cpu_time"],
                          " outside the stages, after stage 'linear[1]'"),
    "after the first call, counted": (lambda: _FailsBetweenStages(1), ["op_counts"],
                                      " outside the stages, after stage 'linear'"),
    "inside a stage, counted only": (
        lambda: nn.Sequential(nn.Linear(4, 4), nn.Linear(5, 4)), ["op_counts"],
        " in stage '1'"),
}


@pytest.mark.parametrize("name", FAILURES)
def test_a_failure_names_the_stage_it_happened_in_or_after(name):
    from zoo.tools.cli import EXIT_FAILURE, describe_failure

    make_model, collectors, place = FAILURES[name]
    model = make_model().eval()
    attach = {"linear": "linear"} if hasattr(model, "fail_after") else {"0": "0", "1": "1"}
    with pytest.raises(Exception) as caught:
        profile_model(model, (torch.rand(2, 4),), collectors=collectors, warmup=0, repeats=1,
                      attach=attach)
    assert failure_place(caught.value) == place
    line, status = describe_failure(caught.value)
    assert line.startswith(type(caught.value).__name__ + place) and status == EXIT_FAILURE
    assert _hooks(model) == 0


class _PingPong(nn.Module):
    """Two modules that call each other: ping -> pong -> ping -> pong."""

    def __init__(self) -> None:
        super().__init__()
        self.ping = _Half()
        self.ping.other = _Half()
        self.ping.other.__dict__["other"] = self.ping  # a cycle of calls, not of modules

    def forward(self, x):
        return self.ping(x, 3)


class _Half(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, left: int):
        x = self.linear(x)
        return self.other(x, left - 1) if left else x


RECURSIVE = {  # model, path of the re-entered module: its calls, and the MACs of all of them
    "a module calling itself": (lambda: _Root(_Recursive()), "inner", 3, 3 * 16),
    "two modules calling each other": (_PingPong, "ping", 2, 4 * 16),
    "a re-entered container": (lambda: _Root(nn.Sequential(_Recursive())), "inner.0", 3, 3 * 16),
}


@pytest.mark.parametrize("name", RECURSIVE)
def test_a_recursive_module_counts_each_operator_once(name):
    make_model, path, calls, macs = RECURSIVE[name]
    model, x = make_model().eval(), torch.rand(1, 4)
    result = profile_model(model, (x,), collectors=["payload", "op_counts", "module_time"])
    records = result.module_counts
    assert records[path].calls == calls
    assert records[path].total.macs == records[""].total.macs == result.totals["macs"] == macs
    last_call, total = result.module_seconds
    assert total[path] <= total[""]


# --- inputs that are not the forward's arguments ----------------------------------------------

NOT_ARGUMENTS = {  # inputs: what the line says was given
    "a bare tensor": (torch.rand(1, 3, 8, 8), r"got a tensor of shape \[1, 3, 8, 8\]"),
    "a string": ("image.png", r"got str 'image.png'"),
    "None": (None, "got NoneType None"),
    "a number": (3, "got int 3"),
    "a set": ({1}, r"got set \{1\}"),
}


@pytest.mark.parametrize("name", NOT_ARGUMENTS)
def test_inputs_that_are_not_the_forward_arguments_are_refused_in_one_line(name):
    # a bare [1, 3, 8, 8] tensor was unpacked along its batch: one unbatched [3, 8, 8] image
    inputs, given = NOT_ARGUMENTS[name]
    model = nn.Sequential(nn.Conv2d(3, 4, 3)).eval()
    pattern = r"inputs must be the forward's arguments as a tuple or list, e.g. \(x,\), or " \
              r"its keyword arguments as a dict, " + given
    with pytest.raises(ProfilingError, match=pattern):
        profile_model(model, inputs, collectors=["payload"], attach={"0": "0"})
    with pytest.raises(ProfilingError, match=pattern):
        analyse_cuts(model, inputs)
    with pytest.raises(ProfilingError, match="its keys must be strings, got 0"):
        profile_model(model, {0: torch.rand(1, 3, 8, 8)}, collectors=["payload"])
    assert _hooks(model) == 0
