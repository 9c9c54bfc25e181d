"""Adversarial: the library entry points (profile_model, checkpoints) against models and files
that a careless or hostile user brings (issue: reliability and security)."""

import re

import pytest
import torch
from torch import nn

import zoo
from profiling import ProfilingError
from profiling.runner.passes import profile_model
from zoo.models.checkpoints import read_state_dict

ALL = ["payload", "tensor_memory", "op_counts", "liveness", "cpu_time"]


class _DoublesItsInput(nn.Module):
    def forward(self, x):
        x.mul_(2)
        return x + 0


def test_each_pass_sees_the_original_input():
    x = torch.full((2,), 8.0)
    result = profile_model(_DoublesItsInput().eval(), (x,), collectors=ALL, warmup=1, repeats=2)
    assert result.output.tolist() == [16.0, 16.0]  # not 32, 64, ... after 5 forwards
    assert x.tolist() == [8.0, 8.0]
    assert result.notes == ["the model changes its inputs in place; every pass was given the "
                            "original values"]


def test_training_mode_is_refused_unless_asked_and_then_statistics_are_restored():
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    x = torch.randn(8, 3)
    with pytest.raises(ProfilingError, match=r"the model is in training mode \(Sequential\)"):
        profile_model(model, (x,), collectors=ALL)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    profile_model(model, (x,), collectors=["payload", "tensor_memory", "op_counts", "liveness"],
                  train=True)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # running stats and counter


@pytest.mark.parametrize("train", ["yes", 1, None])
def test_train_takes_only_a_boolean(train):
    with pytest.raises(ProfilingError, match="train must be True or False"):
        profile_model(nn.Identity(), (torch.ones(1),), train=train)


@pytest.mark.parametrize("collectors", ["cpu_time", b"cpu_time", {"cpu_time"}, None])
def test_collectors_must_be_a_list(collectors):
    with pytest.raises(ProfilingError, match="collectors must be a list"):
        profile_model(nn.Identity().eval(), (torch.ones(1),), collectors=collectors)


@pytest.mark.parametrize("timer", ["cpu_time", "module_time"])
def test_timers_are_refused_on_meta_where_nothing_runs(timer):
    model = nn.Linear(4, 2).eval().to("meta")
    with pytest.raises(ProfilingError, match=f"collector '{timer}' does not measure on meta "
                                             r"\(it measures on cpu, cuda\)"):
        profile_model(model, (torch.zeros(1, 4, device="meta"),), collectors=["payload", timer])
    assert not model._forward_hooks and not model._forward_pre_hooks


def test_a_counted_run_returns_the_plain_output_bit_for_bit():
    model = zoo.create_model("timm", arch="vit_tiny_patch16_224", num_classes=10,
                             arch_options={"img_size": 32, "depth": 1}).eval()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        plain = model(x)
    result = profile_model(model, (x,), collectors=["op_counts"], warmup=0, repeats=1)
    assert torch.equal(result.output, plain)


def test_an_output_that_holds_itself_is_walked_once():
    class SelfReferencing(nn.Module):
        def forward(self, x):
            out = [x * 2]
            out.append(out)
            return out

    result = profile_model(SelfReferencing().eval(), (torch.ones(2),), collectors=ALL,
                           warmup=0, repeats=1)
    assert result.output[0].tolist() == [2.0, 2.0] and result.output[1] is result.output


@pytest.fixture()
def checkpoint(tmp_path):
    def save(state_dict, name="weights.pth"):
        path = tmp_path / name
        torch.save(state_dict, path)
        return str(path)

    return save


@pytest.mark.parametrize("tensor, problem", [
    (torch.empty(2, device="meta"), "a meta tensor (no data) at w"),
    (torch.zeros(2, dtype=torch.complex64), "a complex tensor at w"),
    (torch.tensor([1.0, float("nan")]), "non-finite values at w"),
    (torch.tensor([float("inf")]), "non-finite values at w"),
])
def test_unusable_tensors_are_refused_in_one_line(checkpoint, tensor, problem):
    with pytest.raises(zoo.ConfigError, match=re.escape(f"holds {problem}")):
        read_state_dict(checkpoint({"w": tensor}))


def test_integer_weights_where_the_model_has_floats_are_refused(checkpoint):
    state_dict = zoo.create_model("swiftnet", num_classes=2).state_dict()
    key = "post.conv.weight" if "post.conv.weight" in state_dict else next(iter(state_dict))
    state_dict[key] = state_dict[key].to(torch.int32)
    with pytest.raises(zoo.ConfigError, match=f"holds torch.int32 at {key}, where the model has "
                                              f"floating-point weights"):
        zoo.create_model("swiftnet", num_classes=2, checkpoint=checkpoint(state_dict))


def test_a_file_whose_name_carries_a_hash_is_verified(checkpoint, tmp_path):
    import hashlib

    path = checkpoint({"w": torch.ones(3)}, "gmflow_things-e9887eda.pth")
    with pytest.raises(zoo.ConfigError, match="is corrupt or not the file its name says: its "
                                              "SHA-256 begins .{8}, the name says e9887eda"):
        read_state_dict(path)
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()[:8]
    renamed = tmp_path / f"gmflow_things-{digest}.pth"
    (tmp_path / "gmflow_things-e9887eda.pth").rename(renamed)
    assert torch.equal(read_state_dict(str(renamed))["w"], torch.ones(3))


def test_corrupted_bytes_in_a_named_checkpoint_are_caught(checkpoint, tmp_path):
    import hashlib

    path = checkpoint({"w": torch.ones(4096)})
    data = bytearray(open(path, "rb").read())
    digest = hashlib.sha256(bytes(data)).hexdigest()[:10]
    middle = len(data) // 2
    data[middle:middle + 4096] = bytes(4096)  # 4 KB of the weights zeroed
    named = tmp_path / f"model-{digest}.pth"
    named.write_bytes(bytes(data))
    with pytest.raises(zoo.ConfigError, match="is corrupt or not the file its name says"):
        read_state_dict(str(named))
