"""What the command-line tools (zoo.compare, zoo.collect, zoo.plot, zoo.calibrate, zoo.split) do
with arguments they cannot use and run folders they cannot read: one line and exit 2, naming
what is accepted, and nothing written."""

import pandas as pd
import pytest
import torch

from cli_runner import run_main
from meta_overrides import SWIFTNET_META as META
from zoo.tools import calibrate, collect, compare, plot, split


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    from zoo.tools.job import run_profile
    from zoo.tools.composition import compose_config

    folder = tmp_path_factory.mktemp("runs") / "good"
    run_profile(compose_config(META), folder, print_summary=False)
    return folder


def _broken_copy(good_run, tmp_path, name, breaking):
    folder = tmp_path / name
    folder.mkdir()
    for file in ("meta.json", "stages.csv"):
        (folder / file).write_bytes((good_run / file).read_bytes())
    breaking(folder)
    return folder


BREAKS = {
    "corrupt meta.json": lambda f: (f / "meta.json").write_text("{not json"),
    "meta.json not an object": lambda f: (f / "meta.json").write_text("[1, 2]"),
    "empty stages.csv": lambda f: (f / "stages.csv").write_text(""),
    "header-only stages.csv": lambda f: (f / "stages.csv").write_text("stage,calls\n"),
}


@pytest.mark.parametrize("name", BREAKS)
def test_compare_with_a_broken_run_is_one_line(good_run, tmp_path, name, capsys, monkeypatch):
    broken = _broken_copy(good_run, tmp_path, "broken", BREAKS[name])
    monkeypatch.chdir(tmp_path)
    outcome = run_main(compare.main, [str(good_run), str(broken)], capsys, monkeypatch)
    assert outcome.code == 2 and f"{broken}" in outcome.line and "is broken" in outcome.line
    assert not (tmp_path / "compare.csv").exists()


@pytest.mark.parametrize("name", ["corrupt meta.json", "header-only stages.csv"])
def test_collect_names_a_broken_run_exits_2_and_writes_nothing(good_run, tmp_path, name, capsys,
                                                               monkeypatch):
    root = tmp_path / "runs"
    root.mkdir()
    _broken_copy(good_run, root, "a_good", lambda f: None)
    broken = _broken_copy(good_run, root, "b_broken", BREAKS[name])
    out = tmp_path / "all.csv"
    outcome = run_main(collect.main, [str(root), "--out", str(out)], capsys, monkeypatch)
    assert outcome.code == 2 and str(broken) in outcome.line and "nothing written" in outcome.line
    assert not out.exists()
    # the good run alone is collected
    outcome = run_main(collect.main, [str(root / "a_good"), "--out", str(out)], capsys,
                       monkeypatch)
    assert outcome.code == 0
    table = pd.read_csv(out)
    assert set(table.run) == {str(root / "a_good")} and (table.status == "ok").all()


def test_collect_writes_to_a_new_folder_by_default(good_run, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = run_main(collect.main, [str(good_run)], capsys, monkeypatch)
    assert outcome.code == 0
    (written,) = (tmp_path / "results" / "collect").glob("*/summary.csv")
    assert str(written.relative_to(tmp_path)) in outcome.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]


@pytest.mark.parametrize("argv, expected", [
    (["--out", "x.xlsx"], "--out x.xlsx: accepted extensions are .csv, .parquet"),
    (["--bogus"], "unrecognized arguments: --bogus (see python -m zoo.collect --help)"),
])
def test_collect_arguments(good_run, tmp_path, argv, expected, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = run_main(collect.main, [str(good_run), *argv], capsys, monkeypatch)
    assert outcome.code == 2 and expected in outcome.line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("content, expected", [
    ("name: [broken", "is not valid YAML (line 1)"),
    ("name: x\npeak_flops_per_s: 3\n", "is not a ceilings file"),
    ("name: x\npeak_flops_per_s: {float32: 1}\nmemory_bandwidth_bytes_per_s: 0\n",
     "must hold finite values above 0"),
])
def test_plot_checks_the_ceilings_first(good_run, tmp_path, content, expected, capsys,
                                        monkeypatch):
    ceilings = tmp_path / "bad.yaml"
    ceilings.write_text(content)
    outcome = run_main(plot.main, [str(good_run), "--ceilings", str(ceilings)], capsys,
                       monkeypatch)
    assert outcome.code == 2 and expected in outcome.line
    assert not (good_run / "plots").exists()


@pytest.mark.parametrize("argv, expected", [
    (["--seconds", "inf"], "--seconds=inf is not accepted"),
    (["--seconds", "nan"], "--seconds=nan is not accepted"),
    (["--seconds", "0"], "--seconds=0.0 is not accepted"),
    (["--dtypes", "nope"], "--dtypes=['nope'] is not accepted"),
    (["--device", "meta"], "--device meta cannot be measured"),
    (["--device", "tpu"], "--device 'tpu' is not a device"),
    (["--size", "0"], "--size=0 is not accepted"),
    pytest.param(["--device", "cuda"], "this machine has no CUDA GPU", marks=pytest.mark.skipif(
        torch.cuda.is_available(), reason="this machine has a GPU")),
])
def test_calibrate_rejects_what_it_cannot_measure(argv, expected, capsys, monkeypatch):
    outcome = run_main(calibrate.main, argv, capsys, monkeypatch)
    assert outcome.code == 2 and expected in outcome.line


@pytest.mark.parametrize("argv, option", [(["--size", "1000000"], "--size"),
                                          (["--size", "99999999999"], "--size"),
                                          (["--megabytes", "100000000"], "--megabytes")])
def test_calibrate_refuses_buffers_larger_than_the_memory(tmp_path, capsys, monkeypatch, argv,
                                                          option):
    """Before: the allocation failed (exit 1, 'out of memory ... try a smaller input.size',
    an option calibrate does not have)."""
    from zoo.tools import calibrate

    outcome = run_main(lambda: calibrate.main(["--device", "cpu", "--seconds", "0.01", *argv]),
                       [], capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.line.startswith(f"error: {option}={argv[1]} needs ")
    assert outcome.line.endswith(f"GiB of cpu memory; give a smaller {option}")


@pytest.mark.parametrize("tool", [compare, collect, plot, calibrate, split])
def test_every_tool_reports_usage_errors_in_one_line(tool, capsys, monkeypatch):
    outcome = run_main(tool.main, ["--no-such-flag"], capsys, monkeypatch)
    command = tool.__name__.replace("zoo.tools.", "zoo.")
    assert outcome.code == 2 and f"(see python -m {command} --help)" in outcome.line


@pytest.mark.parametrize("argv, expected", [
    (["--rtt", "nan"], "the RTT must be a finite number of ms >= 0, got nan"),
    (["--rtt", "-1"], "the RTT must be a finite number of ms >= 0, got -1.0"),
    (["--bandwidth", "0"], "--bandwidth"),
])
def test_split_rejects_bad_link_figures(argv, expected, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcome = run_main(split.main, [*argv, *META], capsys, monkeypatch)
    assert outcome.code == 2 and expected in outcome.line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("after, problem", [
    (["~run.seed"], "~run.seed: options cannot be deleted"),
    (["run.seed=1,2"], "is a sweep; give one value per option"),
    (["model.in_channels=0.5"], "model.in_channels=0.5 is not accepted"),
])
def test_split_reads_overrides_given_after_its_flags(tmp_path, capsys, monkeypatch, after,
                                                     problem):
    """Before: ``zoo.split model=swiftnet --meta run.seed=1`` was refused as 'unrecognized
    arguments: run.seed=1' (argparse stops gathering positionals at a flag)."""
    from zoo.tools import split

    monkeypatch.chdir(tmp_path)
    outcome = run_main(lambda: split.main(["model=swiftnet", "--meta", "--depth", "1", *after]),
                       [], capsys, monkeypatch)
    assert outcome.code == 2 and problem in outcome.line, outcome
    assert list(tmp_path.iterdir()) == []
