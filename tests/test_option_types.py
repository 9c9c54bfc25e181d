"""Options are strictly typed (zoo/options/user_values.py, zoo/options/schema.py) and checked before any work.

Through the profile tool each bad value ends with one ``error:`` line naming what is accepted,
exit status 2, and no run folder; booleans are ``true``/``True``/``false``/``False`` only, on the
command line and in files; a refused value is shown as it was typed; Python's
``zoo.create_model`` refuses the same values."""

import pytest

import zoo
from cli_runner import run_main
from meta_overrides import ANY_MODEL_META as META
from zoo.options import ConfigError
from zoo.tools.composition import CONFIG_DIR, check_overrides
from zoo.tools.profile import main
from zoo.options import check_yaml_booleans


@pytest.mark.parametrize("overrides, expected", [
    (["input.batch=abc"], "input.batch='abc' is not accepted; accepted: an integer >= 1"),
    (["input.batch=0"], "input.batch=0 is not accepted; accepted: an integer >= 1"),
    (["run.repeats=five"], "run.repeats='five' is not accepted; accepted: an integer >= 1"),
    (["run.warmup=1.5"], "run.warmup=1.5 is not accepted; accepted: an integer >= 0"),
    (["run.seed=99999999999999999999999"],
     "run.seed=99999999999999999999999 is not accepted; accepted: an integer from 0 to "
     "9223372036854775807"),
    (["run.seed=-1"], "run.seed=-1 is not accepted"),
    (["input.size=[0,64]"], "input.size=[0, 64] is not accepted"),
    (["input.size=[64]"], "input.size=[64] is not accepted"),
    (["input.pad=yes"], "input.pad='yes' is not accepted; accepted: true or false"),
    (["plots=1"], "plots=1 is not accepted; accepted: true or false"),
    (["trace=no"], "trace='no' is not accepted; accepted: true or false"),
    (["collectors=cpu_time"], "collectors='cpu_time' is not accepted; accepted: null or a "
                              "non-empty list of"),
    (["collectors=[]"], "collectors=[] is not accepted"),
    (["model=gmflow", "model.pred_bidir_flow=maybe"],
     "model.pred_bidir_flow='maybe' is not accepted; accepted: true or false"),
    (["model=swiftnet", "model.spp_grids=[]"], "model.spp_grids=[] is not accepted; accepted: "
                                               "a non-empty list of integers"),
    (["model=swiftnet", "model.num_features=2"], "num_features=2 is not accepted with 3 "
                                                 "spp_grids"),
    (["model.checkpoint_allow_pickle=off"], "model.checkpoint_allow_pickle='off' is not "
                                            "accepted"),
    (["+run.bogus=1"], "unknown option 'run.bogus'"),
    (["+bogus=1"], "unknown option 'bogus'"),
    (["+model.bogus=1"], "unknown option 'model.bogus'"),
    (["inptu.size=[64,64]"], "unknown option 'inptu.size' (did you mean input?)"),
    (["run.repets=3"], "unknown option 'run.repets' (did you mean run.repeats?)"),
    (["roofline.ceilings=nope"], "no device ceilings named 'nope'"),
    (["hydra.run.dir="], "hydra.run.dir is empty"),
])
def test_bad_options_are_one_line_exit_2_and_no_folder(overrides, expected, tmp_path, capsys,
                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    folder = [] if any(o.startswith("hydra.run.dir") for o in overrides) else [
        f"hydra.run.dir={run_dir}"]
    outcome = run_main(main, [*overrides, *META, *folder], capsys, monkeypatch)
    assert outcome.code == 2, outcome
    assert expected in outcome.line
    assert list(tmp_path.iterdir()) == [] or not run_dir.exists()
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("override, shown", [("model.num_classes=null", "null"),
                                             ("model.batch_norm=null", "null"),
                                             ("model.spp_grids=[8,null]", "[8, null]")])
def test_a_refused_value_is_shown_as_it_was_typed(override, shown):
    """Before: ``model.num_classes=None is not accepted``."""
    problem = check_overrides(["model=swiftnet", override])
    assert problem.startswith(f"{override.split('=')[0]}={shown} is not accepted; accepted: ")


@pytest.mark.parametrize("override", ["run.overwrite=TRUE", "plots=yes", "trace=tRuE",
                                      "input.pad=FALSE", "model.batch_norm=off",
                                      "summary=False,fALSE"])
def test_booleans_accept_only_true_and_false_as_yaml_spells_them(override):
    problem = check_overrides(["model=swiftnet", override])
    assert problem and ("is not a boolean" in problem or "true or false" in problem), problem


def test_booleans_in_files_are_spelled_the_same_way(tmp_path):
    for spelling, ok in (("true", True), ("False", True), ("yes", False), ("ON", False),
                         ("TRUE", False), ("'yes'", True)):
        path = tmp_path / "experiment.yaml"
        path.write_text(f"# @package _global_\nrun:\n  overwrite: {spelling}\n")
        if ok:
            check_yaml_booleans(path)
        else:
            with pytest.raises(ConfigError, match="line 3: .* is not a boolean"):
                check_yaml_booleans(path)
    for shipped in CONFIG_DIR.rglob("*.yaml"):
        check_yaml_booleans(shipped)


def test_a_zero_std_is_refused_in_python_too():
    with pytest.raises(zoo.ConfigError, match="model.img_std=.* accepted: null or a non-empty "
                                               "list of finite numbers > 0"):
        zoo.create_model("swiftnet", img_std=[58.0, 0.0, 57.0])
