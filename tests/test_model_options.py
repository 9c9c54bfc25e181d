"""Each model's options are written once: the builder's signature. The config node that
``model=NAME`` composes is made from it (zoo/tools/model_configs.py, read without importing
torch) and no YAML repeats it; checkpoints are handled by ``create_model`` for every model
(issue: the house)."""

from pathlib import Path

import pytest
import torch

import zoo
from zoo.models.registry import COMMON_OPTIONS

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _plain(value):
    return [_plain(v) for v in value] if isinstance(value, (list, tuple)) else value


@pytest.mark.parametrize("name", zoo.list_models())
def test_model_name_composes_the_builders_options_and_defaults(name):
    """What the source reader makes of a builder is what Python's signature says."""
    from omegaconf import OmegaConf

    from zoo.tools.composition import compose_config

    config = OmegaConf.to_container(compose_config([f"model={name}"]).model)
    assert config.pop("_target_") == "zoo.create_model" and config.pop("name") == name
    options = {k: _plain(v) for k, v in zoo.model_options(name).items()}
    assert config == options and list(config) == list(options)
    assert list(options)[-len(COMMON_OPTIONS):] == list(COMMON_OPTIONS)


def test_the_model_group_is_the_registry_and_no_yaml_repeats_a_builder():
    from zoo.tools.composition import config_options

    assert config_options("model") == zoo.list_models()
    assert not (CONFIGS / "model").exists()


def test_a_model_registered_in_the_process_composes_without_a_yaml():
    from zoo.models import registry
    from zoo.tools.composition import check_overrides, compose_config

    @zoo.register_model
    def tiny_for_options(*, width: int = 4, gain: float = 0.5) -> torch.nn.Module:
        return torch.nn.Linear(width, width)

    try:
        cfg = compose_config(["model=tiny_for_options", "model.width=8"])
        assert (cfg.model.width, cfg.model.gain, cfg.model.stage_depth) == (8, 0.5, 1)
        assert "model.width='x' is not accepted; accepted: an integer" in check_overrides(
            ["model=tiny_for_options", "model.width=x"])
    finally:
        del registry._BUILDERS["tiny_for_options"], registry._REGISTRATIONS["tiny_for_options"]


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
