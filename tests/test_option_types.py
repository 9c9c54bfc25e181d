"""Adversarial: every option strictly typed and checked before any work, through the CLI.

Each bad value ends with one ``error:`` line naming what is accepted, exit status 2, and no
run folder. The cases are those of a hostile or careless user (issue: reliability and
security)."""

import pytest

from cli_runner import run_main
from zoo.tools.profile import main

META = ["device=meta", "summary=false"]


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


@pytest.mark.parametrize("content, expected", [
    ("name: x\npeak_flops_per_s: {float32: 1e12}\nmemory_bandwidth_bytes_per_s: 0\n",
     "memory_bandwidth_bytes_per_s must hold finite values above 0, got 0.0"),
    ("name: x\npeak_flops_per_s: {float32: -5}\nmemory_bandwidth_bytes_per_s: 1e9\n",
     "peak_flops_per_s.float32 must hold finite values above 0, got -5.0"),
    ("name: x\npeak_flops_per_s: {float32: .inf}\nmemory_bandwidth_bytes_per_s: 1e9\n",
     "must hold finite values above 0"),
    ("name: [unclosed\n", "is not valid YAML (line 2)"),
    ("just text\n", "is not a ceilings file"),
])
def test_bad_ceilings_fail_before_the_profile(content, expected, tmp_path, capsys, monkeypatch):
    ceilings = tmp_path / "ceilings.yaml"
    ceilings.write_text(content)
    run_dir = tmp_path / "run"
    outcome = run_main(main, ["model=swiftnet", *META, f"roofline.ceilings={ceilings}",
                              f"hydra.run.dir={run_dir}"], capsys, monkeypatch)
    assert outcome.code == 2 and expected in outcome.line
    assert not run_dir.exists()
