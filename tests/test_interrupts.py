"""Ctrl-C during a run (zoo/tools/cli.py): exit 130 with one line and no run folder, also when a
library swallowed the KeyboardInterrupt (the next forward stops the run)."""

import pytest

from cli_runner import run_main
from meta_overrides import SWIFTNET_META as META
from zoo.tools import job_description, job_runner
from zoo.tools.profile import main


def test_ctrl_c_exits_130_with_one_line_and_no_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ZOO_LOG_DIR", str(tmp_path / "logs"))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(job_runner, "profile_model", interrupted)
    outcome = run_main(main, [*META, f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 130 and outcome.line.startswith("error: interrupted")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("swallowed_in", ["resolve_device", "check_run_options", "prepare"])
def test_a_ctrl_c_that_a_library_swallows_still_ends_the_run(swallowed_in, tmp_path, capsys,
                                                             monkeypatch):
    """Ctrl-C's handler raises wherever Python is; an extension's import that clears every
    error swallowed it once and the run went on for minutes. The next forward stops it."""
    from zoo.tools import cli

    original = getattr(job_description, swallowed_in)

    def swallowing(*args, **kwargs):
        try:
            cli._on_interrupt(2, None)  # what the signal does
        except KeyboardInterrupt:
            pass  # what the library did
        return original(*args, **kwargs)

    monkeypatch.setattr(cli, "_interrupted", False)
    monkeypatch.setattr(job_description, swallowed_in, swallowing)
    run_dir = tmp_path / "run"
    outcome = run_main(main, ["model=swiftnet", "device=cpu", "input.size=[64,64]",
                              "run.repeats=3", f"hydra.run.dir={run_dir}"], capsys, monkeypatch)
    assert outcome.code == 130, outcome
    assert outcome.stderr.strip().splitlines()[-1].startswith("error: interrupted"), outcome
    assert not run_dir.exists()
