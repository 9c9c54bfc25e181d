"""The config of a run is composed and checked once (issue 24 §3): the command line composes
and checks it before Hydra starts (the one-line errors, every variant of a sweep before any
job), and hands it to the job as checked; the job that Hydra composes again from the same
overrides is not checked a second time."""

from __future__ import annotations

import pytest

import zoo.options
from tests.cli_runner import run_main
from zoo.tools import ab_sides, changed_options
from zoo.tools import composition as tool_cli
from zoo.tools.profile import main as profile_main

RUN = ["model=swiftnet", "device=meta", "input.size=[64,128]"]


@pytest.fixture
def counted(monkeypatch):
    """The overrides of every composition by the tools, and how often the schema check ran."""
    compositions: list[list[str]] = []
    checks: list[str] = []
    compose, check = tool_cli.compose_config, zoo.options.check_config

    def counting_compose(overrides, *args, **kwargs):
        compositions.append(list(overrides))
        return compose(overrides, *args, **kwargs)

    def counting_check(plain, *args, **kwargs):
        checks.append(plain["model"]["name"])
        return check(plain, *args, **kwargs)

    monkeypatch.setattr(tool_cli, "compose_config", counting_compose)
    monkeypatch.setattr(changed_options, "compose_config", counting_compose)
    monkeypatch.setattr(zoo.options, "check_config", counting_check)
    changed_options._defaults.cache_clear()  # what an earlier test in this process composed
    return compositions, checks


def test_one_profile_run_composes_and_checks_its_config_once(counted, tmp_path, capsys,
                                                             monkeypatch):
    compositions, checks = counted
    outcome = run_main(profile_main, [*RUN, f"hydra.run.dir={tmp_path / 'run'}"], capsys,
                       monkeypatch)
    assert outcome.code == 0, outcome.stderr
    assert (tmp_path / "run" / "stages.csv").is_file()
    assert checks == ["swiftnet"]  # before Hydra; the job is handed over as checked
    assert compositions.count(RUN) == 1  # the options line reuses it
    # besides, the options line composes the defaults it compares with (not this run's config)
    assert [c for c in compositions if c != RUN] == [[], ["model=swiftnet", "device=meta"]]
    assert outcome.stdout.startswith("options: model=swiftnet device=meta input.size=[64,128]")


def test_a_sweep_checks_each_job_once(counted, tmp_path, capsys, monkeypatch):
    """Every variant is checked before any job starts; each job Hydra composes is one of them,
    and none is checked again (the two jobs here are exactly the two variants)."""
    compositions, checks = counted
    outcome = run_main(profile_main, ["-m", "model=swiftnet", "device=meta",
                                      "input.size=[64,128],[32,64]", "summary=false",
                                      f"hydra.sweep.dir={tmp_path / 'sweep'}"], capsys,
                       monkeypatch)
    assert outcome.code == 0, outcome.stderr
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir()) == [
        "0_swiftnet", "1_swiftnet"]
    assert checks == ["swiftnet", "swiftnet"]


def test_a_job_built_from_python_is_checked_unless_said_otherwise(counted, monkeypatch):
    """prepare_job checks what it is given; checked_config's result goes in as checked."""
    from zoo.tools.job_description import prepare_job

    _, checks = counted
    cfg = tool_cli.checked_config(RUN)
    assert checks == ["swiftnet"]
    prepare_job(cfg, checked=True)
    assert checks == ["swiftnet"]
    prepare_job(cfg)
    assert checks == ["swiftnet", "swiftnet"]


def test_an_a_b_side_is_composed_and_checked_once(counted):
    compositions, checks = counted
    job = ab_sides.prepared_side(" ".join(RUN), "A")
    assert job.cfg.model.name == "swiftnet"
    assert checks == ["swiftnet"] and compositions == [RUN]


def test_a_sweep_where_one_configuration_belongs_is_refused():
    from zoo.options import ConfigError

    with pytest.raises(ConfigError, match="is a sweep; give one value per option"):
        tool_cli.checked_config(["model=swiftnet", "input.batch=1,2"])
