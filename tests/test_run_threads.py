"""``run.threads``: torch's intra-op threads for the run, recorded in ``meta.json``, torch's
own default when ``null``, strictly an integer >= 1, and restored after the run."""

import json

import pytest
import torch

from cli_runner import run_main
from zoo.tools.composition import compose_config
from zoo.tools.job import run_profile
from zoo.tools.profile import main

RUN = ["model=torchvision", "model.arch=resnet18", "device=cpu", "input.size=[32,32]",
       "run.repeats=1", "run.warmup=0", "summary=false"]


@pytest.mark.parametrize("threads", [None, 1, 3])
def test_the_runs_threads_are_used_recorded_and_restored(threads, tmp_path):
    before = torch.get_num_threads()
    value = "null" if threads is None else threads
    run_profile(compose_config([*RUN, f"run.threads={value}"]), tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    used = before if threads is None else threads
    assert meta["config"]["run"]["threads"] == threads
    assert meta["cpu_threads"] == used and meta["noise"]["threads"] == used
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("value", ["0", "-2", "1.5", "true", "abc", "[2]", "2.0"])
def test_a_thread_count_that_is_not_an_integer_from_1_is_refused(value, tmp_path, capsys,
                                                                 monkeypatch):
    outcome = run_main(main, [*RUN, f"run.threads={value}",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 2
    shown = {"abc": "'abc'", "[2]": "[2]"}.get(value, value)
    assert outcome.line == (f"error: run.threads={shown} is not accepted; accepted: null or "
                            f"an integer >= 1")
    assert not (tmp_path / "run").exists()
