"""The export cache's key (profiling.runtimes.cache_key): everything that decides the exported
graph changes it, every option of every registered model included; a changed model is
exported again, never taken from the cache."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from export_cache_models import output_matches, run_cached, tiny_model
from profiling.runtimes.cache import MANIFEST, export_key
from runtime_models import needs_onnxruntime

def _changed(value):
    """A value of the same kind that differs from ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "_other"
    if isinstance(value, (list, tuple)):
        return [*value, value[0] if value else 1]
    if isinstance(value, dict):
        return {**value, "other": 1}
    return 1  # None


def _all_models() -> list[str]:
    import zoo

    return zoo.list_models()


@pytest.mark.parametrize("name", _all_models())
def test_every_model_option_changes_the_export_key(name):
    import zoo
    from omegaconf import OmegaConf
    from zoo.deploy import export_identity
    from zoo.tools.composition import compose_config

    model, x = tiny_model()
    composed = compose_config([f"model={name}"])
    key = export_key(model, (x,), identity=export_identity(composed))
    options = zoo.model_options(name)
    assert len(options) >= 8  # its own and the common ones (stage_depth, checkpoint, ...)
    for option in options:
        assert option in composed.model, option
        changed = OmegaConf.to_container(composed, resolve=True)
        changed["model"][option] = _changed(changed["model"][option])
        other = export_key(model, (x,), identity=export_identity(OmegaConf.create(changed)))
        assert other != key, f"model={name}: model.{option} does not change the key"


@pytest.mark.parametrize("name", ["torchvision", "timm"])
def test_each_arch_options_entry_changes_the_export_key(name):
    from omegaconf import OmegaConf
    from zoo.deploy import export_identity
    from zoo.tools.composition import compose_config

    model, x = tiny_model()
    composed = OmegaConf.to_container(compose_config([f"model={name}"]), resolve=True)
    keys = set()
    for arch_options in (None, {"transform_input": True}, {"transform_input": False},
                         {"transform_input": False, "aux_logits": False}):
        composed["model"]["arch_options"] = arch_options
        keys.add(export_key(model, (x,), identity=export_identity(OmegaConf.create(composed))))
    assert len(keys) == 4


@pytest.mark.parametrize("option, value", [
    ("attn_splits_list", [1]), ("corr_radius_list", [4]), ("prop_radius_list", [1]),
    ("pred_bidir_flow", True), ("attention_impl", "math"), ("position_encoding", "none"),
    ("attention_type", "full")])
def test_a_setting_that_a_module_keeps_changes_the_key_without_the_options(option, value):
    """The library's own key sees GMFlow's forward options (plain attributes of its modules)
    where no caller passes the options: the same weights, another graph."""
    import zoo
    from profiling.runtimes.cache_key import module_settings

    torch.manual_seed(0)
    default = zoo.create_model("gmflow", feature_channels=16, num_transformer_layers=1)
    torch.manual_seed(0)
    other = zoo.create_model("gmflow", feature_channels=16, num_transformer_layers=1,
                             **{option: value})
    inputs = (torch.zeros(1, 3, 32, 32), torch.zeros(1, 3, 32, 32))
    if set(other.state_dict()) == set(default.state_dict()):
        other.load_state_dict(default.state_dict())
    assert module_settings(default) != module_settings(other)
    assert export_key(default, inputs) != export_key(other, inputs)


def test_the_exporter_versions_code_and_opset_and_the_models_source_are_in_the_key(
        monkeypatch, tmp_path):
    from profiling.runtimes import cache_key as keys

    model, x = tiny_model()
    key = export_key(model, (x,))
    assert export_key(model, (x,)) == key  # the same model and inputs: the same key
    assert export_key(model, (x,), opset=17) != key
    for package in ("torch", "onnx", "onnxscript", "onnx-ir"):
        versions = {**keys.exporter_versions(), package: "0.0.1"}
        monkeypatch.setattr(keys, "exporter_versions", lambda versions=versions: versions)
        assert export_key(model, (x,)) != key, package
        monkeypatch.undo()
    monkeypatch.setattr(keys, "_file_digest", lambda path: "edited")  # any source edited
    assert export_key(model, (x,)) != key
    monkeypatch.undo()
    assert export_key(model, (x.double(),)) != key  # dtype of an input
    assert export_key(model, (x,), identity={"model": {"arch": "resnet18"}}) != key


def test_the_sources_in_the_key_are_the_model_classes_files():
    from profiling.runtimes.cache_key import _source_digests

    model, _ = tiny_model()
    sources = {Path(path).name: digest for path, digest in _source_digests(model).items()}
    assert set(sources) == {"export_cache_models.py", "container.py", "conv.py",
                            "activation.py"}
    defining = (Path(__file__).parent / "export_cache_models.py").read_bytes()
    assert sources["export_cache_models.py"] == hashlib.sha256(defining).hexdigest()


@needs_onnxruntime
@pytest.mark.parametrize("change", ["factor", "weights", "input"])
def test_a_changed_model_is_exported_again_not_taken_from_the_cache(change, tmp_path):
    model, x = tiny_model()
    first = run_cached(model, x, tmp_path / "cache", tmp_path / "a")
    if change == "factor":  # a plain setting: no change in repr or weights
        model.factor = 3.0
    elif change == "weights":
        with torch.no_grad():
            model.head.bias += 1
    else:
        x = torch.randn(1, 3, 8, 12)
    again = run_cached(model, x, tmp_path / "cache", tmp_path / "b")
    assert (first.deployment["export_cache"], again.deployment["export_cache"]) == \
        ("miss", "miss")
    assert output_matches(again, model, x)
    assert len(list((tmp_path / "cache").iterdir())) == 2


@needs_onnxruntime
def test_int8_is_quantised_at_every_run_from_the_float32_export_an_entry_holds(tmp_path):
    """Why the run's dtype and the quantiser's settings are not in the key: an entry holds
    the float32 export only, and int8 taken from the cache is int8 without it."""
    model, x = tiny_model()
    run_cached(model, x, tmp_path / "cache", tmp_path / "a")
    cached = run_cached(model, x, tmp_path / "cache", tmp_path / "b", dtype="int8")
    fresh = run_cached(model, x, None, tmp_path / "c", dtype="int8")
    assert (cached.deployment["export_cache"], fresh.deployment["export_cache"]) == \
        ("hit", "off")
    assert np.array_equal(cached.outputs[0], fresh.outputs[0])
    names = {p.name for p in next((tmp_path / "cache").iterdir()).iterdir()}
    assert names == {"model.onnx", "model.stages.json", MANIFEST}


class Selecting(nn.Module):
    """A branch on a value (the whole model does not export) and a head that gets the rows
    whose first feature is positive: how many depends on the input's values."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.encoder(x)
        if float(x.detach().mean()) > -1e9:
            x = x[x[:, 0] > 0]
        return self.head(x)


@needs_onnxruntime
@pytest.mark.slow
def test_parts_whose_inputs_follow_the_values_are_exported_again_for_other_values(tmp_path):
    """Faster R-CNN's box head gets as many proposals as the scores let through: its part
    was exported for that many, and the same input shape with other values must not reuse
    it (ONNX Runtime refused the other count)."""
    from profiling.runtimes import profile_runtime

    torch.manual_seed(0)
    model, states, notes = Selecting().eval(), [], []
    for index, seed in enumerate((0, 0, 1, 1)):
        x = torch.randn(16, 4, generator=torch.Generator().manual_seed(seed))
        rows = int((model.encoder(x)[:, 0] > 0).sum())
        profiled = profile_runtime(model, (x,), runtime="onnxruntime", warmup=0, repeats=1,
                                   workdir=tmp_path / f"w{index}", cache_folder=tmp_path / "c",
                                   attach={"encoder": "encoder", "head": "head"})
        assert profiled.outputs[0].shape == (rows, 2)
        assert output_matches(profiled, model, x)
        states.append(profiled.deployment["export_cache"])
        notes.append(profiled.deployment.get("export_cache_note"))
    assert states == ["miss", "hit", "miss", "hit"]
    assert notes[:2] == [None, None] and notes[3] is None
    assert "part head was exported for inputs tensor(9, 4):torch.float32:cpu and gets " \
           "tensor(13, 4):torch.float32:cpu in this run" in notes[2]


def test_a_zoo_run_keys_its_export_by_its_composed_model_options(monkeypatch):
    from zoo.deploy import Deployment, export_identity, profile_in_runtime
    from zoo.tools.composition import compose_config

    seen = {}

    class Seen(Exception):
        pass

    def profile_runtime(model, inputs, **options):
        seen.update(options)
        raise Seen

    monkeypatch.setattr("profiling.runtimes.profile_runtime", profile_runtime)
    cfg = compose_config(["model=torchvision", "model.arch=resnet18",
                          "+model.arch_options={zero_init_residual:true}"])
    model, x = tiny_model()
    with pytest.raises(Seen):
        profile_in_runtime(cfg, Deployment(runtime="onnxruntime"), model, (x,),
                           collectors=["payload"], warmup=0, repeats=1, attach={})
    assert seen["identity"] == export_identity(cfg)
    assert seen["identity"]["model"]["arch_options"] == {"zero_init_residual": True}
    assert seen["identity"]["model"]["arch"] == "resnet18"
