"""Command-line overrides as the tools read them (zoo/tools/composition.py, ``check_overrides``):
deleting an option (``~KEY``) or a group, ``+`` before an existing option, a group set to null,
overrides Hydra cannot parse (look-alike non-ASCII letters), interpolations that cannot be
resolved, and an option given twice. Each mistake is one line and exit 2, before the work."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_main
from meta_overrides import ANY_MODEL_META_32 as META
from zoo.tools.composition import check_overrides
from zoo.tools.profile import main
from zoo.tools.profile import main as profile_main


@pytest.mark.parametrize("override", ["~run", "~run.repeats", "~summary", "~input.size",
                                      "~model.num_classes", "~roofline.ceilings"])
def test_options_cannot_be_deleted(override):
    """Before: ``~run.repeats`` passed the checks and the job died on the missing key (exit 1,
    a traceback in a log); ``~model.num_classes`` quietly fell back to a builder default."""
    problem = check_overrides(["model=swiftnet", override])
    assert problem == (f"{override}: options cannot be deleted, every option has a value; set "
                       f"it instead ({override[1:]}=VALUE, or {override[1:]}=null where null "
                       f"is accepted)")


def test_only_the_optional_group_may_be_deleted():
    assert check_overrides(["model=swiftnet", "~experiment"]) is None
    assert check_overrides(["~device"]).startswith("the device group is required and cannot "
                                                   "be deleted (~device); choose one of: cpu, ")


@pytest.mark.parametrize("overrides, key", [(["+run.repeats=3"], "run.repeats"),
                                            (["+summary=false"], "summary"),
                                            (["model=swiftnet", "+model.in_channels=1"],
                                             "model.in_channels")])
def test_a_plus_before_an_existing_option_says_to_drop_it(overrides, key):
    """Before: "unknown option 'run.repeats' (did you mean run.repeats?)"."""
    assert check_overrides(overrides) == (f"{key} is an option already: set it without '+' "
                                          f"({key}=VALUE)")


@pytest.mark.parametrize("overrides, group", [(["model=null"], "model"),
                                              (["device=null"], "device"),
                                              (["input=null"], "input"),
                                              (["model=swiftnet,null"], "model")])
def test_a_group_set_to_null_lists_its_configs(overrides, group):
    """Before: "Config group override must be a string or a list. Got NoneType"."""
    problem = check_overrides(overrides)
    assert problem is not None and "choose one of: " in problem and "NoneType" not in problem
    assert problem.split("choose one of: ")[1].split(", ")[0] in {"faster_rcnn", "cpu",
                                                                  "default"}


@pytest.mark.parametrize("override, named", [
    ("model=swіftnet", "'і' is CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I, not ASCII"),
    ("model=swiftnеt", "'е' is CYRILLIC SMALL LETTER IE, not ASCII"),
    ("model.checkpoint=/tmp/wéights.pth", "'é' is LATIN SMALL LETTER E WITH ACUTE, not ASCII"),
    ("run.seed", "missing EQUAL at '<EOF>'"),
    ("run.seed=[1", "no viable alternative at input '[1'"),
])
def test_an_override_that_cannot_be_parsed_names_why_and_what_is_accepted(override, named):
    """Before: "cannot parse the overrides: LexerNoViableAltException: model=swіftnet", with
    nothing to see in a look-alike letter."""
    problem = check_overrides(["model=swiftnet", override])
    assert problem.startswith(f"cannot parse {override!r}: ")
    assert named in problem and problem.endswith(
        "accepted: KEY=VALUE as Hydra's override grammar reads it (quote a value that holds "
        "spaces, non-ASCII letters or symbols: KEY='...')")


def test_a_quoted_non_ascii_value_is_accepted():
    assert check_overrides(["model=swiftnet", "model.checkpoint='/tmp/wéights.pth'"]) is None


def test_a_deleted_option_is_refused_by_the_tool_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = run_main(profile_main, ["model=swiftnet", "device=meta", "~run.repeats",
                                      f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2 and "~run.repeats: options cannot be deleted" in outcome.line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("overrides, expected", [
    (["~model"], "the model group is required and cannot be deleted (~model); choose one of: "),
    (["~device"], "the device group is required"),
    (["~input"], "the input group is required"),
    (["model.arch=${oc.env:ZOO_NOT_SET_ANYWHERE}", "model=torchvision"],
     "model.arch: cannot resolve the interpolation: KeyError raised while resolving "
     "interpolation: \"Environment variable 'ZOO_NOT_SET_ANYWHERE' not found\""),
    (["input.batch=${nowhere.key}"], "input.batch: cannot resolve the interpolation"),
    (["run.seed=${oc.decode:'[1'}"], "run.seed: cannot resolve the interpolation"),
    (["plots=${oc.env:ZOO_NOT_SET_ANYWHERE}"], "plots: cannot resolve the interpolation"),
    (["summary=false", "summary=${oc.env:ZOO_NOT_SET_ANYWHERE}"],
     "summary: cannot resolve the interpolation"),  # the last value given counts
    (["input.size=5"], "input.size=5 is not accepted; accepted: null or [height, width] with "),
    (["collectors=5"], "collectors=5 is not accepted"),
    (["model=swiftnet", "model.spp_grids=8"], "model.spp_grids=8 is not accepted"),
    (["model=torchvision", "model.stage_paths=3"], "model.stage_paths=3 is not accepted"),
    (["model=swiftnet", "model.img_std=[0,1,1]"], "model.img_std=[0, 1, 1] is not accepted"),
    (["model=swiftnet", "model.img_std=[1,1,0.0]"], "model.img_std=[1, 1, 0.0] is not"),
    (["model=swiftnet", "model.img_std=[1,nan,1]"], "is not accepted"),
])
def test_input_mistakes_are_one_line_and_exit_2(overrides, expected, tmp_path, capsys,
                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    deleted = [o[1:] for o in overrides if o.startswith("~")]
    common = [m for m in META if not any(m.startswith(group) for group in deleted)]
    outcome = run_main(main, [*common, *overrides, f"hydra.run.dir={tmp_path / 'run'}"], capsys,
                       monkeypatch)
    assert outcome.code == 2, outcome
    assert expected in outcome.line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("overrides, key, value", [
    (["summary=${oc.env:ZOO_NOT_SET_ANYWHERE}", "summary=false"], "summary", False),
    (["run.seed=${oc.env:ZOO_NOT_SET_ANYWHERE}", "run.seed=7"], "run.seed", 7),
    (["input.size=${nowhere.key}", "input.size=[32,48]"], "input.size", [32, 48]),
    (["run.repeats=abc", "run.repeats=2"], "run.repeats", 2),
])
def test_an_option_given_twice_takes_its_last_value(overrides, key, value, tmp_path, capsys,
                                                    monkeypatch):
    """As Hydra composes the config, whatever the first value was, even one that cannot be
    resolved; ``meta.json`` records the overrides as they were typed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZOO_NOT_SET_ANYWHERE", raising=False)
    outcome = run_main(main, [*META, "model=swiftnet", *overrides,
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 0, outcome
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    node = meta["config"]
    for part in key.split("."):
        node = node[part]
    assert node == value
    assert meta["overrides"][-2:] == overrides
