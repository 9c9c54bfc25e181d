"""Each model's options are written once: the builder's signature is the truth, its YAML in
``configs/model/`` repeats exactly those options and defaults, and checkpoints are handled by
``create_model`` for every model (issue: the house)."""

from pathlib import Path

import pytest
import torch
import yaml

import zoo
from zoo.models.registry import COMMON_OPTIONS

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "model"


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


@pytest.mark.parametrize("name", zoo.list_models())
def test_the_yaml_lists_the_builders_options_and_defaults(name):
    config = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())
    assert config.pop("_target_") == "zoo.create_model" and config.pop("name") == name
    options = {k: _plain(v) for k, v in zoo.model_options(name).items()}
    assert config == options
    assert set(COMMON_OPTIONS) <= set(options)


def test_every_yaml_is_a_registered_model():
    assert sorted(p.stem for p in CONFIGS.glob("*.yaml")) == zoo.list_models()


@pytest.mark.parametrize("name", zoo.list_models())
def test_no_builder_handles_checkpoints_itself(name):
    import inspect

    builder = zoo.models.registry._builder(name)
    source = inspect.getsource(builder)
    assert "load_checkpoint" not in source and "read_state_dict" not in source
    assert not {"checkpoint", "checkpoint_allow_pickle"} & set(
        inspect.signature(builder).parameters)


def test_a_checkpoint_loads_through_create_model_with_the_registered_key_map(tmp_path):
    from reference_weights import load_reference
    from zoo.models.networks.swiftnet.checkpoint import official_key

    official_names = load_reference("swiftnet_64x128.pt")["official_entries"]
    ours = zoo.create_model("swiftnet").state_dict()
    official = {name: ours[official_key(name)] for name in official_names
                if official_key(name) in ours}
    assert len(official) == len(ours) and set(official) != set(ours)
    path = tmp_path / "swiftnet_official.pth"
    torch.save({"state_dict": official}, path)
    loaded = zoo.create_model("swiftnet", checkpoint=str(path))
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in ours.items())
    assert loaded.checkpoint_file["path"] == str(path)
