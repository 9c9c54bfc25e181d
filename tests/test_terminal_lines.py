"""The lines zoo.profile prints around its table (issue 25 §4): the options that differ from
the defaults at the top, the files written at the end, a resized image, emulated bfloat16."""

from __future__ import annotations

import pytest
import torch

import zoo.deploy.deployment
from tests.cli_runner import run_main
from zoo.deploy import Deployment, half_emulated_note
from zoo.profile import main as profile_main
from zoo.tools.changed_options import changed_options, options_line


def test_only_options_that_differ_from_the_defaults_are_echoed():
    # device=cpu is the default choice, stage_depth 1 swiftnet's default, warmup 1 the run's
    given = ["model=swiftnet", "device=cpu", "model.stage_depth=1", "input.size=[64,64]",
             "run.warmup=1", "run.repeats=7", "hydra.run.dir=/tmp/elsewhere"]
    assert changed_options(given) == ["model=swiftnet", "input.size=[64,64]", "run.repeats=7"]
    assert options_line([]) == "options: all the defaults (python -m zoo.profile --help lists them)"


def test_a_profile_echoes_its_options_lists_its_files_and_says_an_image_was_resized(
        tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    outcome = run_main(profile_main, ["model=swiftnet", "device=meta", "input.size=[64,64]",
                                      "input.images=sample", f"hydra.run.dir={run}"],
                       capsys, monkeypatch)
    assert outcome.code == 0, outcome.stderr
    lines = outcome.stdout.splitlines()
    assert lines[0] == ("options: model=swiftnet device=meta input.size=[64,64] "
                        "input.images=sample (the rest are the defaults)")
    written = outcome.stdout.split("files written: ")[1].split("\n")[0]
    assert written.split(", ") == ["layers.csv", "layers.txt", "modules.csv", "modules.txt",
                                   "stages.csv", "operators.csv", "payload.log", "meta.json"]
    assert sorted(p.name for p in run.iterdir()) == sorted([".stagezoo", *written.split(", ")])
    # SwiftNet's sample is coffee.jpg, 400x600 (H x W)
    assert ("note: input.images: sample/coffee.jpg (400x600) resized and centre-cropped to "
            "64x64, the model's input size; to keep an image's size, give it as "
            "input.size=[400,600] (input.pad=true if the model needs a multiple)") in lines


@pytest.mark.parametrize("dtype, flag", [("bfloat16", "avx512_bf16"), ("bfloat16", "bf16"),
                                         ("float16", "avx512_fp16"), ("float16", "asimdhp")])
def test_half_types_on_a_cpu_without_them_say_they_will_be_slower(dtype, flag, monkeypatch):
    half = Deployment(dtype=dtype)
    flags = {"avx2", "fma"}
    monkeypatch.setattr("builtins.open", _cpuinfo(lambda: flags))
    note = half_emulated_note(dtype)
    assert half.warnings(torch.device("cpu")) == [note]
    assert f"run.dtype={dtype}: this CPU has no native {dtype}" in note
    assert "will be slower than float32 here" in note and flag in note
    assert half.warnings(torch.device("meta")) == []
    assert Deployment().warnings(torch.device("cpu")) == []
    assert Deployment(dtype=dtype, autocast=True).warnings(torch.device("cpu")) == [note]
    flags.add(flag)
    assert half.warnings(torch.device("cpu")) == []


def _cpuinfo(flags):
    """``open`` that answers /proc/cpuinfo with one 'flags' line of ``flags()``."""
    import builtins
    import io

    real_open = builtins.open

    def fake_open(path, *args, **kwargs):
        if str(path) == "/proc/cpuinfo":
            return io.StringIO(f"flags\t\t: {' '.join(sorted(flags()))}\n")
        return real_open(path, *args, **kwargs)
    return fake_open


def test_the_bfloat16_line_comes_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(zoo.deploy.deployment, "cpu_has_native", lambda dtype: False)
    outcome = run_main(profile_main, ["model=swiftnet", "input.size=[64,64]", "run.warmup=0",
                                      "run.repeats=1", "run.dtype=bfloat16",
                                      f"hydra.run.dir={tmp_path / 'run'}"],
                       capsys, monkeypatch)
    assert outcome.code == 0, outcome.stderr
    lines = outcome.stdout.splitlines()
    assert lines[1] == f"note: {half_emulated_note('bfloat16')}"
    assert lines[2].startswith("stage ")
