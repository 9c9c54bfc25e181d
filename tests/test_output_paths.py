"""Exit codes that tell the truth (issue 23, section 7): every input mistake is one line and
exit 2, checked before the work, and a failure inside a library network is exit 1 naming the
stage and the input shape."""

import json
import os
from pathlib import Path

import pytest
import torch

import zoo
from cli_runner import run_main
from profiling import reports
from profiling.reports.html import report as report_page_module
from zoo.tools import calibrate, collect, compare, report, split
from zoo.tools import job
from zoo.tools.composition import compose_config
from zoo.tools.profile import main

META = ["device=meta", "summary=false", "input.size=[32,32]"]


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


def test_the_output_folder_given_last_is_the_one_checked_before_the_work(tmp_path, capsys,
                                                                          monkeypatch):
    """``hydra.run.dir`` given twice: Hydra writes into the last, so the check made before
    the work (a long run is not lost at its end) looks at that one too."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("keep")
    started, real = [], job.create_model
    monkeypatch.setattr(job, "create_model", lambda *a, **k: started.append(a))
    outcome = run_main(main, [*META, "model=swiftnet", f"hydra.run.dir={tmp_path / 'new'}",
                              f"hydra.run.dir={tmp_path / 'theirs'}", "run.overwrite=true"],
                       capsys, monkeypatch)
    assert outcome.code == 2 and "did not write" in outcome.line, outcome
    assert started == [] and (tmp_path / "theirs" / "notes.txt").read_text() == "keep"
    monkeypatch.setattr(job, "create_model", real)
    outcome = run_main(main, ["device=meta", "summary=false", "summary=true", "model=swiftnet",
                              "input.size=[32,32]", f"hydra.run.dir={tmp_path / 'run'}"],
                       capsys, monkeypatch)
    assert outcome.code == 0 and outcome.stdout.startswith("options: "), outcome


def test_an_unresolvable_output_folder_is_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for key in ("hydra.run.dir", "hydra.sweep.dir"):
        outcome = run_main(main, [*(["-m"] if "sweep" in key else []), *META,
                                  f"{key}=${{oc.env:ZOO_NOT_SET_ANYWHERE}}"], capsys,
                           monkeypatch)
        assert outcome.code == 2 and "cannot resolve the interpolation" in outcome.line
    assert list(tmp_path.iterdir()) == []


def test_a_zero_std_is_refused_in_python_too():
    with pytest.raises(zoo.ConfigError, match="model.img_std=.* accepted: null or a non-empty "
                                               "list of finite numbers > 0"):
        zoo.create_model("swiftnet", img_std=[58.0, 0.0, 57.0])


@pytest.mark.parametrize("folder", ["/dev/null", "/dev/null/run", "/dev/zero", "/proc/self"])
def test_a_device_path_is_not_an_output_folder(folder, capsys, monkeypatch):
    outcome = run_main(main, [*META, "model=swiftnet", f"hydra.run.dir={folder}"], capsys,
                       monkeypatch)
    assert outcome.code == 2, outcome
    assert "not a folder" in outcome.line or "never written" in outcome.line \
        or "cannot be written" in outcome.line


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs") / "run"
    config = compose_config(["model=torchvision", "model.arch=resnet18", *META])
    job.run_profile(config, folder, print_summary=False)
    return folder


def _tools(run: Path, out: str) -> dict:
    """Each tool's command line writing to ``out``."""
    return {
        "compare": (compare.main, [str(run), str(run), "--out", out]),
        "collect": (collect.main, [str(run), "--out", out]),
        "split": (split.main, ["model=torchvision", "model.arch=resnet18", "input.size=[32,32]",
                               "--meta", "--out", out]),
        "calibrate": (calibrate.main, ["--device", "cpu", "--seconds", "0.01", "--size", "8",
                                       "--megabytes", "1", "--output", out]),
        "report": (report.main, [str(run), "--out", out.replace(".csv", ".html")]),
    }


@pytest.mark.parametrize("tool", ["compare", "collect", "split", "calibrate", "report"])
@pytest.mark.parametrize("out", ["/dev/null", "/dev/full", "{tmp}/file.txt/below.csv",
                                 "{tmp}", "{tmp}/read-only/x.csv"])
def test_an_output_that_cannot_be_written_is_refused_before_the_work(tool, out, run_dir,
                                                                     tmp_path, capsys,
                                                                     monkeypatch):
    (tmp_path / "file.txt").write_text("a file")
    (tmp_path / "keep.txt").write_text("keep")
    (tmp_path / "read-only").mkdir()
    out = out.format(tmp=tmp_path)
    if tool == "collect" and not out.endswith(".csv"):
        out += "/x.csv" if out.startswith("/dev") else ""
    access = os.access  # root may write anywhere: the read-only folder is one to os.access
    monkeypatch.setattr(os, "access", lambda path, mode: access(path, mode) and Path(
        path) != tmp_path / "read-only")
    worked = []
    for name in ("read_run", "compare_runs"):
        monkeypatch.setattr(reports, name, lambda *a, **k: worked.append(name))
    monkeypatch.setattr(calibrate, "calibrate", lambda *a, **k: worked.append("calibrate"))
    monkeypatch.setattr(reports, "collect_runs", lambda *a, **k: worked.append("collect"))
    monkeypatch.setattr(split, "split_config", lambda *a, **k: worked.append("split"))
    monkeypatch.setattr(report_page_module, "report_page", lambda *a, **k: worked.append("r"))
    main_function, argv = _tools(run_dir, out)[tool]
    outcome = run_main(lambda: main_function(argv), [], capsys, monkeypatch)
    assert outcome.code == 2, outcome
    assert worked == []
    assert (tmp_path / "keep.txt").read_text() == "keep" and Path("/dev/null").exists()


def _break_layer(model: torch.nn.Module, path: str, error: Exception) -> None:
    """Make the module at ``path`` raise ``error`` when called."""
    module = model.get_submodule(path)

    def raising(*args, **kwargs):
        raise error

    module.forward = raising


@pytest.mark.parametrize("overrides, path, stage, error", [
    (["model=torchvision", "model.arch=resnet18"], "layer2.0.conv1", "layer2",
     RuntimeError("Given groups=1, weight of size [1]")),
    (["model=torchvision", "model.arch=mobilenet_v3_small"], "features.3", "features",
     IndexError("index 7 is out of bounds")),
    (["model=timm", "model.arch=resnet18"], "layer3", "layer3",
     ValueError("expected 4D input")),
])
def test_a_failure_inside_a_library_network_names_the_stage_and_the_input(
        overrides, path, stage, error, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ZOO_LOG_DIR", str(tmp_path / "logs"))
    original = job.build_model

    def broken(*args, **kwargs):
        model = original(*args, **kwargs)
        _break_layer(model, path, error)
        return model

    monkeypatch.setattr(job, "build_model", broken)
    outcome = run_main(main, [*overrides, "device=cpu", "input.size=[32,48]", "summary=false",
                              "run.repeats=1", "run.warmup=0",
                              f"hydra.run.dir={tmp_path / 'run'}"], capsys, monkeypatch)
    assert outcome.code == 1, outcome
    assert outcome.line.startswith(f"error: {type(error).__name__} in stage '{stage}' at input "
                                   f"1x3x32x48: {error}"), outcome.line
    assert not (tmp_path / "run").exists()
    log = json.dumps(outcome.line)
    assert "traceback in" in log
