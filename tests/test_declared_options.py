"""Every app option is declared once (zoo/options/declared.py, issue 34): the defaults Hydra
composes, the checks and their refusal lines, ``--help``'s list and the README's table all
come from (or are held to) the one declaration."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from zoo.options import DEVICE_OPTIONS, MODEL_OPTIONS, OPTIONS, SCHEMA, options_help
from zoo.tools.composition import CONFIG_DIR, check_overrides, compose_config

ROOT = Path(__file__).resolve().parents[1]

#: A value of the wrong kind for each kind of checker (the first one it refuses is used).
PROBES = ["not-a-value", -3, 0, 1.5, True, None, [1, 2, 3], []]


def _select(tree, key):
    for part in key.split("."):
        tree = tree[part]
    return tree


def test_hydra_composes_the_declared_defaults():
    from omegaconf import OmegaConf

    composed = OmegaConf.to_container(compose_config([]))
    assert {o.key: _select(composed, o.key) for o in OPTIONS} == {o.key: o.default
                                                                   for o in OPTIONS}
    assert composed["run"]["warmup"] == 1 and composed["input"]["max_pixels"] == 100_000_000


def test_the_primary_config_holds_no_option_value():
    """profile.yaml lists the configs to compose and sets Hydra; no option is written there."""
    primary = yaml.safe_load((CONFIG_DIR / "profile.yaml").read_text())
    assert set(primary) == {"defaults", "hydra"}
    assert "zoo_options" in primary["defaults"] and {"input": "default"} in primary["defaults"]
    assert not (CONFIG_DIR / "input").exists()


def _typed(value) -> str:
    """``value`` as an override's text."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, list):
        return "[" + ",".join(_typed(v) for v in value) + "]"
    return str(value)


@pytest.mark.parametrize("option", OPTIONS, ids=lambda option: option.key)
def test_a_bad_value_is_refused_with_what_the_declaration_accepts(option):
    bad = next(value for value in PROBES if not option.checker.ok(value))
    problem = check_overrides([f"{option.key}={_typed(bad)}"])
    assert problem is not None and "\n" not in problem
    assert problem.endswith(f"is not accepted; accepted: {option.checker.accepts}"), problem
    assert check_overrides([f"{option.key}={_typed(option.default)}"]) is None


def test_help_lists_every_declared_option_with_its_default_and_help():
    text = " ".join(options_help().split())
    for option in OPTIONS:
        default = option.default if isinstance(option.default, str) else _typed(option.default)
        assert f"{option.key}={default} {option.help}; accepted: " \
               f"{option.checker.accepts}" in text, option.key
    assert text.count("accepted: ") == len(OPTIONS)


def test_the_schema_is_the_declarations():
    declared = [o.key for o in (*OPTIONS, *DEVICE_OPTIONS)]
    assert list(SCHEMA) == declared and len(set(declared)) == len(declared)


def test_every_option_the_readme_names_is_declared():
    """The README's table of options names declared options only (``run.repeats=N``)."""
    table = (ROOT / "README.md").read_text(encoding="utf-8").split("## Options", 1)[1]
    table = table.split("\n\n", 2)[1]
    named = set(re.findall(r"`((?:run|input|roofline|device|model)\.[A-Za-z_]+)(?:=|`)", table))
    models = {o.key for o in MODEL_OPTIONS} | {"model.OPTION", "model.arch"}
    assert named <= set(SCHEMA) | models, named - set(SCHEMA) - models
    assert {"run.warmup", "run.runtime", "input.images", "roofline.ceilings"} <= named
