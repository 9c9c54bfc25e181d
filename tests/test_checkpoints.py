"""Reading checkpoints (zoo/models/checkpoints.py): tensors no model saves (meta, complex, sparse,
nested, quantized, non-finite), keys that are no names, integer weights for a float model, a
name that carries a hash and bytes that do not match it, a path that is no regular file,
DataParallel's ``module.`` prefix, and the hash meta.json records. Each refusal is one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from torch import nn

import zoo
from cli_runner import run_main
from meta_overrides import SWIFTNET_META as META
from special_paths import KINDS as _KINDS
from special_paths import odd_paths_in
from special_paths import within as _within
from zoo.models.checkpoints import load_checkpoint, read_state_dict
from zoo.options import ConfigError
from zoo.tools.profile import main as profile_main


@pytest.fixture
def odd_paths(tmp_path) -> dict[str, Path]:
    """Paths that exist (or seem to) but are no regular file to read."""
    return odd_paths_in(tmp_path)


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


def _saved(tmp_path: Path, content, name: str = "weights.pth") -> str:
    path = tmp_path / name
    torch.save(content, path)
    return str(path)


@pytest.mark.parametrize("tensor, problem", [
    (torch.eye(3).to_sparse(), "a tensor of layout torch.sparse_coo"),
    (torch.eye(3).to_sparse_csr(), "a tensor of layout torch.sparse_csr"),
    (torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]), "a nested tensor"),
    (torch.quantize_per_tensor(torch.eye(3), 0.1, 0, torch.qint8), "a quantized tensor"),
    (torch.full((3,), float("nan")).to(torch.float8_e4m3fn), "non-finite values"),
])
def test_a_checkpoint_tensor_no_model_saves_is_refused(tmp_path, tensor, problem):
    """Before: sparse, nested and float8 tensors crashed the finiteness check
    (NotImplementedError, exit 1)."""
    path = _saved(tmp_path, {"weight": tensor})
    with pytest.raises(ConfigError) as raised:
        read_state_dict(path)
    assert str(raised.value).startswith(f"checkpoint {path} holds {problem} at weight; "
                                        f"expected dense, real, finite weights")


@pytest.mark.parametrize("key", [1, (1, 2), 2.5])
def test_a_checkpoint_key_that_is_no_name_is_refused(tmp_path, key):
    """Before: SwiftNet's key map met an int key (TypeError, exit 1)."""
    path = _saved(tmp_path, {"weight": torch.zeros(1), key: torch.zeros(1)})
    with pytest.raises(ConfigError) as raised:
        read_state_dict(path)
    assert str(raised.value) == (f"checkpoint {path} holds a tensor under the key {key!r} "
                                 f"({type(key).__name__}); a state dict's keys are parameter "
                                 f"names")


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


def test_a_checkpoint_that_is_no_regular_file_says_what_it_is(odd_paths):
    """Before: "checkpoint file not found" for each, though each exists."""
    for kind, path in odd_paths.items():
        with _within(5), pytest.raises(ConfigError) as raised:
            read_state_dict(str(path))
        assert str(raised.value) == (f"checkpoint {path} {_KINDS[kind]}; give the path of a "
                                     f"local .pth/.pt/.safetensors file")


@pytest.mark.parametrize("wrap", [lambda sd: sd, lambda sd: {"state_dict": sd, "epoch": 3},
                                  lambda sd: {"model": sd}])
def test_a_data_parallel_checkpoint_loads(tmp_path, wrap):
    """``nn.DataParallel`` saves every key under ``module.``; before, only SwiftNet's key map
    dropped it, and every other model refused the file as 100% missing and unexpected."""
    torch.manual_seed(0)
    source = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    saved = {f"module.{k}": v for k, v in source.state_dict().items()}
    path = _saved(tmp_path, wrap(saved), "parallel.pth.tar")
    target = load_checkpoint(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)), path)
    for name, value in source.state_dict().items():
        assert torch.equal(target.state_dict()[name], value)


def test_a_model_whose_own_names_begin_with_module_keeps_them(tmp_path):
    class Wrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.module = nn.Linear(2, 2)

    saved = Wrapper().state_dict()
    assert list(saved) == ["module.weight", "module.bias"]
    loaded = load_checkpoint(Wrapper(), _saved(tmp_path, saved))
    assert torch.equal(loaded.module.weight, saved["module.weight"])


def test_meta_json_records_the_checkpoint_hash(tmp_path, capsys, monkeypatch):
    import zoo

    path = tmp_path / "swiftnet.pth"
    torch.save(zoo.create_model("swiftnet").state_dict(), path)
    run_dir = tmp_path / "run"
    outcome = run_main(profile_main, [*META, f"model.checkpoint={path}",
                                      f"hydra.run.dir={run_dir}"], capsys, monkeypatch)
    assert outcome.code == 0, outcome.stderr
    meta = json.loads((run_dir / "meta.json").read_text())
    import hashlib
    assert meta["checkpoint"] == {"path": str(path),
                                  "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
