"""The config of a run is composed once and checked once (issue 24 §3, issue 34): Hydra composes
it and the job checks it before torch loads; what needs no composition is checked before Hydra
starts. A sweep composes and checks every variant before its first job, and each job checks
the config Hydra composed for it."""

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
    """The overrides of every composition (by the tools' compose_config and by Hydra itself:
    both go through Hydra's config loader), and the schema checks and job starts in order."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from zoo.tools import job

    compositions: list[list[str]] = []
    events: list[str] = []
    load, check, run = ConfigLoaderImpl.load_configuration, zoo.options.check_config, \
        job.run_profile

    def counting_load(self, config_name, overrides, *args, **kwargs):
        compositions.append([o for o in overrides if not o.startswith(("hydra.", "++hydra."))])
        return load(self, config_name, overrides, *args, **kwargs)

    def counting_check(plain, *args, **kwargs):
        events.append(f"check {plain['input']['size']}")
        return check(plain, *args, **kwargs)

    def counting_run(cfg, *args, **kwargs):
        events.append(f"run {list(cfg.input.size)}")
        return run(cfg, *args, **kwargs)

    monkeypatch.setattr(ConfigLoaderImpl, "load_configuration", counting_load)
    monkeypatch.setattr(zoo.options, "check_config", counting_check)
    monkeypatch.setattr(job, "run_profile", counting_run)
    changed_options._defaults.cache_clear()  # what an earlier test in this process composed
    return compositions, events


def test_one_profile_run_composes_and_checks_its_config_once(counted, tmp_path, capsys,
                                                             monkeypatch):
    compositions, events = counted
    outcome = run_main(profile_main, [*RUN, f"hydra.run.dir={tmp_path / 'run'}"], capsys,
                       monkeypatch)
    assert outcome.code == 0, outcome.stderr
    assert (tmp_path / "run" / "stages.csv").is_file()
    assert events == ["check [64, 128]", "run [64, 128]"]  # Hydra's config, checked in the job
    assert compositions.count(RUN) == 1  # by Hydra, for the run
    # besides, the options line composes the defaults it compares with (not this run's config)
    assert [c for c in compositions if c != RUN] == [[], ["model=swiftnet", "device=meta"]]
    assert outcome.stdout.startswith("options: model=swiftnet device=meta input.size=[64,128]")


def test_a_sweep_checks_every_job_before_the_first_runs(counted, tmp_path, capsys,
                                                        monkeypatch):
    """Every variant is composed and checked before any job starts; each job then checks the
    config Hydra composed for it (the two jobs here are exactly the two variants)."""
    _, events = counted
    outcome = run_main(profile_main, ["-m", "model=swiftnet", "device=meta",
                                      "input.size=[64,128],[32,64]", "summary=false",
                                      f"hydra.sweep.dir={tmp_path / 'sweep'}"], capsys,
                       monkeypatch)
    assert outcome.code == 0, outcome.stderr
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir()) == [
        "0_swiftnet", "1_swiftnet"]
    assert events == ["check [64, 128]", "check [32, 64]", "check [64, 128]", "run [64, 128]",
                      "check [32, 64]", "run [32, 64]"]


def test_a_job_built_from_python_is_checked_unless_said_otherwise(counted, monkeypatch):
    """prepare_job checks what it is given; checked_config's result goes in as checked."""
    from zoo.tools.job_description import prepare_job

    _, events = counted
    cfg = tool_cli.checked_config(RUN)
    assert events == ["check [64, 128]"]
    prepare_job(cfg, checked=True)
    assert events == ["check [64, 128]"]
    prepare_job(cfg)
    assert events == ["check [64, 128]", "check [64, 128]"]


def test_an_a_b_side_is_composed_and_checked_once(counted):
    compositions, events = counted
    job = ab_sides.prepared_side(" ".join(RUN), "A")
    assert job.cfg.model.name == "swiftnet"
    assert events == ["check [64, 128]"] and compositions == [RUN]


def test_a_sweep_where_one_configuration_belongs_is_refused():
    from zoo.options import ConfigError

    with pytest.raises(ConfigError, match="is a sweep; give one value per option"):
        tool_cli.checked_config(["model=swiftnet", "input.batch=1,2"])
