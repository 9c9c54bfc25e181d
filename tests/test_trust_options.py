"""No option value runs code (issue 23, section 1): every option has a declared type, an
instantiation key anywhere in a user's value is refused with exit 2 before any model is built,
and the model is built from plain values only."""

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import zoo
from cli_runner import run_main
from zoo.tools import split
from zoo.tools.job import run_profile
from zoo.tools.model_build import build_model
from zoo.tools.composition import check_overrides, compose_config
from zoo.options import ConfigError
from zoo.options.declared import NULL_DEFAULT_OPTIONS, model_option_checker
from zoo.options.schema import Anything, checker_for_annotation
from zoo.tools.profile import main
from zoo.options import check_plain_config

META = ["device=meta", "summary=false", "input.size=[32,32]"]


def _opener(target: Path) -> str:
    """A value that, if instantiated, creates ``target`` (the proof that code ran)."""
    return f"{{_target_: builtins.open, file: '{target}', mode: w}}"


@pytest.mark.parametrize("template", [
    "model.num_classes={code}",                       # an int-or-null option
    "model.checkpoint={code}",                        # a path option
    "model.stage_paths=[layer1,{code}]",              # inside a list
    "model.arch_options={{depth: {code}}}",           # inside a mapping
    "model.arch_options={{a: [1, {code}]}}",          # a list inside a mapping
    "+model.extra={code}",                            # a new key
    "run.seed={code}",                                # a typed app option
    "model.arch=resnet18,{code}",                     # one value of a sweep
])
def test_a_target_in_any_value_is_refused_and_nothing_runs(template, tmp_path, capsys,
                                                           monkeypatch):
    pwned = tmp_path / "pwned"
    override = template.format(code=_opener(pwned))
    arguments = ["-m"] if "," in template.split("=", 1)[1] and "[" not in template else []
    outcome = run_main(main, [*arguments, "model=torchvision", override, *META,
                              f"hydra.run.dir={tmp_path / 'run'}",
                              f"hydra.sweep.dir={tmp_path / 'sweep'}"], capsys, monkeypatch)
    assert outcome.code == 2, outcome
    assert "_target_" in outcome.line or "is not accepted" in outcome.line
    assert not pwned.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("override, expected", [
    ("model._target_=builtins.print", "'model._target_' is not an option"),
    ("+model._args_=[1]", "'model._args_' is not an option"),
    ("+model._partial_=true", "'model._partial_' is not an option"),
    ("+hydra.callbacks.evil._target_=builtins.print", "is not an option"),
    ("hydra.job_logging.root.level=DEBUG", "'hydra.job_logging.root.level' is not an option"),
])
def test_targets_and_hydra_callables_are_not_options(override, expected):
    assert expected in check_overrides(["model=torchvision", override])


def test_a_target_from_an_experiment_or_a_python_config_is_refused_before_the_build(
        tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(zoo.tools.model_build, "create_model", lambda *a, **k: built.append(a))
    cfg = compose_config(["model=torchvision", *META])
    OmegaConf.update(cfg, "model._target_", "builtins.print", force_add=True)
    with pytest.raises(ConfigError, match="model._target_=builtins.print"):
        run_profile(cfg, tmp_path / "run")
    cfg = compose_config(["model=torchvision", *META])
    OmegaConf.update(cfg, "input.extra", {"x": {"_target_": "os.getcwd"}}, force_add=True)
    with pytest.raises(ConfigError, match="input.extra.x._target_"):
        run_profile(cfg, tmp_path / "run")
    with pytest.raises(ConfigError, match="model.arch_options.a._target_"):
        build_model({"_target_": "zoo.create_model", "name": "torchvision",
                     "arch_options": {"a": {"_target_": "os.getcwd"}}}, seed=0)
    assert built == [] and not (tmp_path / "run").exists()


def test_a_run_folder_cannot_smuggle_a_target_into_zoo_split(tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    run_profile(compose_config(["model=torchvision", "model.arch=resnet18", *META]), run)
    meta = json.loads((run / "meta.json").read_text())
    meta["config"]["model"]["num_classes"] = {"_target_": "builtins.open", "mode": "w",
                                              "file": str(tmp_path / "x")}
    (run / "meta.json").write_text(json.dumps(meta))
    outcome = run_main(lambda: split.main(["--device-run", str(run), "--server-run", str(run),
                                           "--out", str(tmp_path / "out")]),
                       [], capsys, monkeypatch)
    assert outcome.code == 2 and "model.num_classes._target_" in outcome.line, outcome
    assert not (tmp_path / "x").exists() and not (tmp_path / "out").exists()


def test_check_plain_config_allows_only_the_shipped_model_target():
    check_plain_config({"model": {"_target_": "zoo.create_model", "name": "swiftnet"}})
    for bad in ({"model": {"_target_": "os.system"}}, {"run": {"x": [{"_target_": "a"}]}},
                {"input": {"()": "logging.Handler"}}):
        with pytest.raises(ConfigError):
            check_plain_config(bad)


@pytest.mark.parametrize("overrides, expected", [
    (["model=torchvision", "model.num_classes=abc"],
     "model.num_classes='abc' is not accepted; accepted: null or an integer >= 1"),
    (["model=torchvision", "model.num_classes=0"], "model.num_classes=0 is not accepted"),
    (["model=torchvision", "model.stage_paths=5"],
     "model.stage_paths=5 is not accepted; accepted: null or a non-empty list of non-empty "
     "texts"),
    (["model=torchvision", "model.checkpoint=[a,b]"], "model.checkpoint=['a', 'b'] is not"),
    (["model=torchvision", "model.arch_options={a: {b: 1}}"],
     "accepted: null or a mapping {key: value, ...} of plain values"),
    (["model=timm", "model.arch_options=[1]"], "model.arch_options=[1] is not accepted"),
    (["model=swiftnet", "model.img_mean=1"], "model.img_mean=1 is not accepted"),
    (["model=swiftnet", "model.img_std=[58,0,57]"],
     "accepted: null or a non-empty list of finite numbers > 0"),
    (["model=swiftnet", "model.img_std=[58,-1,57]"], "model.img_std=[58, -1, 57] is not"),
    (["input.images=5"], "input.images=5 is not accepted"),
])
def test_null_default_options_have_declared_types(overrides, expected):
    assert expected in check_overrides(overrides)


def test_every_model_option_has_a_declared_type_as_strict_as_its_builder():
    import typing

    from zoo.models.registry import _builder

    probes = ["x", "", 1, 0, -1, 1.5, True, None, [], [1], ["a"], [0.0], {"a": 1},
              {"a": {"b": 1}}, {"_target_": "os.system"}, [{"_target_": "os.system"}]]
    from zoo.tools.model_configs import model_configs

    for name, defaults in model_configs().items():
        hints = typing.get_type_hints(_builder(defaults["name"]))
        for option, default in defaults.items():
            if option.startswith("_") or option == "name":
                continue
            declared = model_option_checker(option, default)
            assert not isinstance(declared, Anything), (name, option)
            assert not declared.ok({"_target_": "os.system"}), (name, option)
            if default is None and option in hints:
                assert option in NULL_DEFAULT_OPTIONS, (name, option)
                builder = checker_for_annotation(hints[option])
                loose = [p for p in probes if declared.ok(p) and not builder.ok(p)]
                assert loose == [], (name, option, loose)


def _user_configs(folder: Path, files: dict[str, str]) -> str:
    """A user's config folder holding ``files`` (relative path -> YAML), and the
    ``hydra.searchpath`` override that adds it."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return f"hydra.searchpath=[file://{folder}]"


@pytest.mark.parametrize("body, expected", [
    ("model:\n  num_classes: {code}\n", "model.num_classes._target_ in experiment file"),
    ("run:\n  seed: [1, {code}]\n", "run.seed[1]._target_ in experiment file"),
    ("hydra:\n  callbacks:\n    evil: {code}\n", "'hydra.callbacks' is not an option in "
                                                  "experiment file"),
    ("hydra:\n  launcher: {code}\n", "hydra.launcher._target_' is not an option in experiment"),
    ("hydra:\n  sweeper:\n    params:\n      run.seed: [{code}]\n",
     "hydra.sweeper.params.run.seed[0]._target_ in experiment file"),
    ("run:\n  repeats: {{a: 1}}\n", "run.repeats={'a': 1} is not accepted"),
])
def test_an_experiment_from_a_search_path_folder_is_checked_like_a_shipped_one(
        body, expected, tmp_path, capsys, monkeypatch):
    built = []
    monkeypatch.setattr(zoo.tools.model_build, "create_model", lambda *a, **k: built.append(a))
    pwned = tmp_path / "pwned"
    search = _user_configs(tmp_path / "mine", {"experiment/mine.yaml": "# @package _global_\n"
                                               + body.format(code=_opener(pwned))})
    outcome = run_main(main, ["model=torchvision", *META, search, "experiment=mine",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2, outcome
    assert expected in outcome.line
    assert str(tmp_path / "mine" / "experiment" / "mine.yaml") in outcome.line
    assert built == [] and not pwned.exists() and not (tmp_path / "run").exists()


def test_an_experiment_from_a_search_path_folder_runs(tmp_path, capsys, monkeypatch):
    search = _user_configs(tmp_path / "mine", {
        "experiment/mine.yaml": "# @package _global_\nrun:\n  seed: 3\nmodel:\n  num_classes: 5\n"})
    outcome = run_main(main, ["model=swiftnet", *META, search, "experiment=mine",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 0, outcome
    config = json.loads((tmp_path / "run" / "meta.json").read_text())["config"]
    assert (config["run"]["seed"], config["model"]["num_classes"]) == (3, 5)


@pytest.mark.parametrize("files, expected", [
    ({"hydra/job_logging/mine.yaml": "root:\n  level: INFO\n",
      "experiment/mine.yaml": "# @package _global_\n"},
     "holds hydra/: Hydra's own settings (launchers, logging, callbacks) come from the shipped"),
    ({"experiment/mine.yaml": "# @package _global_\ndefaults:\n  - override /model: mine\n",
      "model/mine.yaml": "# @package _global_\ndefaults:\n  - swiftnet@model\nhydra:\n"
                         "  callbacks:\n    evil: {code}\n"},
     "hydra.callbacks is set by a config in a hydra.searchpath folder"),
    ({"experiment/mine.yaml": "# @package _global_\ndefaults:\n  - override /model: mine\n",
      "model/mine.yaml": "_target_: {code}\nname: swiftnet\n"},
     "model._target_="),
])
def test_a_search_path_folder_cannot_change_what_hydra_runs(files, expected, tmp_path, capsys,
                                                            monkeypatch):
    """Whatever file of the user's folder sets it: a nested defaults list, Hydra's own
    groups, a model config of the user's."""
    pwned = tmp_path / "pwned"
    search = _user_configs(tmp_path / "mine", {name: text.format(code=_opener(pwned))
                                               for name, text in files.items()})
    outcome = run_main(main, [*META, search, "experiment=mine",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2, outcome
    assert expected in outcome.line
    assert not pwned.exists() and not (tmp_path / "run").exists()
