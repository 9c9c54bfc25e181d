"""Every run folder a writer makes reads back through every tool (``zoo.compare``, ``zoo.plot``,
``zoo.report``, ``zoo.collect``), and a hand-edited one is one line naming its file, exit 2.

Runtime runs wrote ``other`` rows of -4.4e-17 ms (the same node times added in two orders),
which the readers refused as "a negative number where none can be": a writer made what the
readers refuse. Here runs of every kind are written for real (each model family on the meta
device, zoo and torchvision models on the CPU, ONNX Runtime and OpenVINO in float32 and int8, a
sweep with a failed job) and each is read back by each tool.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cli_runner import run_main
from profiling import ProfilingError
from profiling.files.reading import ROUND_OFF, read_table
from profiling.reports.html.page import shown_html
from profiling.runtimes import missing_packages
from profiling.statistics.coverage import remainder
from report_runs import tiny_run, tiny_sweep
from zoo.tools import collect, compare, plot, report
from zoo.tools.composition import compose_config
from zoo.tools.job import run_profile

ROOT = Path(__file__).resolve().parents[1]
#: A small CPU run: resnet18 on one 32x32 image, its layers' blocks as nested stages.
RESNET = ["model=torchvision", "model.arch=resnet18", "model.stage_depth=2", "device=cpu",
          "input.size=[32,32]", "run.warmup=0", "run.repeats=2"]
RUNTIMES = [pytest.param(runtime, dtype, marks=[pytest.mark.runtimes, pytest.mark.skipif(
    bool(missing_packages(runtime, "int8")), reason=f"{runtime} is not installed")])
    for runtime in ("onnxruntime", "openvino") for dtype in ("float32", "int8")]


def _profile(folder: Path, *overrides: str) -> Path:
    run_profile(compose_config([*overrides, "summary=false"]), folder, print_summary=False)
    return folder


def _top_stages(folder: Path) -> list[str]:
    stages = pd.read_csv(folder / "stages.csv")
    return list(stages.loc[(stages["depth"] == 0) & (stages["kind"] == "stage"), "stage"])


def _read_back(folder: Path, reference: Path, out: Path, capsys, monkeypatch) -> None:
    """``folder`` through every tool: each exits 0 and shows every stage of the run."""
    written = pd.read_csv(folder / "stages.csv")
    table = out / f"{folder.name}-compare.csv"
    outcome = run_main(compare.main, [str(reference), str(folder), "--out", str(table)],
                       capsys, monkeypatch)
    assert outcome.code == 0, outcome.stderr
    assert set(written["stage"]) <= set(pd.read_csv(table)["stage"])
    outcome = run_main(plot.main, [str(folder)], capsys, monkeypatch)
    assert outcome.code == 0, outcome.stderr
    assert (folder / "plots" / "payload.png").is_file()
    timed = "cpu_time_ms_mean" in written
    assert (folder / "plots" / "time.png").is_file() == timed
    page = out / f"{folder.name}.html"
    outcome = run_main(report.main, [str(folder), "--out", str(page)], capsys, monkeypatch)
    assert outcome.code == 0, outcome.stderr
    html = shown_html(page.read_text())
    assert all(json.dumps(name) in html for name in _top_stages(folder))
    summary = out / f"{folder.name}-summary.csv"
    outcome = run_main(collect.main, [str(reference), str(folder), "--out", str(summary)],
                       capsys, monkeypatch)
    assert outcome.code == 0, outcome.stderr
    collected = pd.read_csv(summary)
    assert list(collected.loc[collected["run"] == str(folder), "stage"]) == \
        list(written["stage"])


def _never_negative_as_written(folder: Path) -> None:
    """No time in ``stages.csv`` or ``times.csv`` below 0, as written, but the top-level
    ``other`` row's (a runtime's node times may overlap its measured forward)."""
    for name in ("stages.csv", "times.csv"):
        table = pd.read_csv(folder / name)
        rows = table[table["stage"] != "other"]
        times = [c for c in table if "_ms" in c]
        assert times and (rows[times].fillna(0) >= 0).all().all(), (name, rows[times].min())


def test_a_negative_difference_within_round_off_is_zero_and_a_measured_one_is_kept():
    assert remainder(0.1 + 0.2, 0.3) == pytest.approx(5.55e-17, rel=1e-3)  # above 0: kept
    assert remainder(0.3, 0.1 + 0.2) == 0.0  # -5.6e-17
    assert remainder(1.0, 1.0 + 4e-10) == 0.0  # within 1e-9 of the sum
    assert remainder(1.0, 1.01) == pytest.approx(-0.01)  # measured: node times overlap
    assert remainder(10 ** 12, 10 ** 12 + 1) == -1  # counts are exact
    assert ROUND_OFF == 1e-9


def test_the_readers_take_round_off_as_zero_and_an_other_row_may_be_negative(tmp_path):
    path = tmp_path / "stages.csv"
    path.write_text("stage,kind,cpu_time_ms\nconv,stage,2.5\nconv/other,other,-4.4e-17\n"
                    "other,other,-0.03\n")
    table = read_table(path, numeric=lambda c: c != "stage" and c != "kind",
                       non_negative=lambda c: c == "cpu_time_ms",
                       signed_rows=lambda t: t["stage"] == "other")
    assert list(table["cpu_time_ms"]) == [2.5, 0.0, -0.03]
    path.write_text("stage,kind,cpu_time_ms\nconv,stage,2.5\nhead,stage,-0.03\n")
    with pytest.raises(ProfilingError, match=r"row 3 holds -0.03, a negative number"):
        read_table(path, numeric=lambda c: c == "cpu_time_ms",
                   non_negative=lambda c: c == "cpu_time_ms")


@pytest.mark.slow
def test_a_written_run_a_meta_run_and_a_sweep_with_a_failed_job_read_back(tmp_path, capsys,
                                                                          monkeypatch):
    reference = tiny_run(tmp_path / "reference")
    out = tmp_path / "out"
    out.mkdir()
    for folder in (tiny_run(tmp_path / "tiny", width=4),
                   _profile(tmp_path / "swiftnet-meta", "model=swiftnet", "device=meta",
                            "input.size=[64,64]")):
        _read_back(folder, reference, out, capsys, monkeypatch)
    sweep = tiny_sweep(tmp_path / "sweep")
    outcome = run_main(report.main, [str(sweep), "--out", str(out / "sweep.html")], capsys,
                       monkeypatch)
    assert outcome.code == 0
    assert "input.size=[1,1] is below" in shown_html((out / "sweep.html").read_text())
    outcome = run_main(collect.main, [str(sweep), "--out", str(out / "sweep.csv")], capsys,
                       monkeypatch)
    summary = pd.read_csv(out / "sweep.csv")
    assert outcome.code == 0 and list(summary.groupby("run")["status"].first()) == \
        ["ok", "ok", "failed"]
    for tool in (compare.main, plot.main):  # nothing to compare or draw: said, not a crash
        arguments = [str(reference), str(sweep / "2_tiny")][tool is plot.main:]
        outcome = run_main(tool, arguments, capsys, monkeypatch)
        assert outcome.code == 2 and "is a failed run (RuntimeError: input.size" in outcome.line


def test_a_call_no_timed_forward_made_reads_back_without_a_time(tmp_path, capsys, monkeypatch):
    # what the aggregation writes for a call of the first forward that no timed forward made:
    # every time statistic empty; it reads back as missing (no bar), never as 0 ms
    from profiling.reports import read_run

    folder = tiny_run(tmp_path / "untimed", width=4)
    stages = pd.read_csv(folder / "stages.csv")
    stages.loc[stages["stage"] == "body", [c for c in stages if "_ms_" in c]] = math.nan
    stages.to_csv(folder / "stages.csv", index=False)
    times = pd.read_csv(folder / "times.csv")
    times[times["stage"] != "body"].to_csv(folder / "times.csv", index=False)
    body = read_run(folder).stages.set_index("stage").loc["body"]
    assert body[["cpu_time_ms_mean", "cpu_time_ms_median"]].isna().all()
    _read_back(folder, tiny_run(tmp_path / "reference"), tmp_path, capsys, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["faster_rcnn", "gmflow", "gmflow_refine", "gmflow_unet",
                                   "swin_unet", "timm", "torchvision"])
def test_every_model_family_on_the_meta_device_reads_back(model, tmp_path, capsys,
                                                          monkeypatch):
    reference = tiny_run(tmp_path / "reference")
    folder = _profile(tmp_path / f"{model}-meta", f"model={model}", "device=meta")
    _read_back(folder, reference, tmp_path, capsys, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [["model=swiftnet", "device=cpu", "input.size=[32,32]",
                                        "run.warmup=0", "run.repeats=2"], RESNET],
                         ids=["swiftnet", "resnet18"])
def test_cpu_runs_read_back(overrides, tmp_path, capsys, monkeypatch):
    reference = tiny_run(tmp_path / "reference")
    folder = _profile(tmp_path / "cpu", *overrides)
    _never_negative_as_written(folder)
    _read_back(folder, reference, tmp_path, capsys, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("runtime, dtype", RUNTIMES)
def test_runtime_runs_write_no_round_off_below_zero_and_read_back(runtime, dtype, tmp_path,
                                                                  capsys, monkeypatch):
    # main at 8a0d5fd wrote layerN/other rows of -4.4e-17 to -1.1e-16 ms in all four
    reference = tiny_run(tmp_path / "reference")
    folder = _profile(tmp_path / f"{runtime}-{dtype}", *RESNET, f"run.runtime={runtime}",
                      f"run.dtype={dtype}")
    stages = pd.read_csv(folder / "stages.csv")
    assert {"layer1/other", "layer4/other", "other"} <= set(stages["stage"])
    _never_negative_as_written(folder)
    _read_back(folder, reference, tmp_path, capsys, monkeypatch)


@pytest.mark.slow
def test_a_real_sweep_with_a_failed_job_reads_back(tmp_path, capsys, monkeypatch):
    sweep = tmp_path / "sweep"
    done = subprocess.run([sys.executable, "-m", "zoo.profile", "-m", *RESNET[:2],
                           "input.size=[32,32]", "run.warmup=0", "run.repeats=1",
                           "summary=false", "model.in_channels=0,3",
                           f"hydra.sweep.dir={sweep}"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 1, done.stderr  # one of two jobs failed
    finished = sweep / "1_torchvision-resnet18"
    _read_back(finished, tiny_run(tmp_path / "reference"), tmp_path, capsys, monkeypatch)
    outcome = run_main(report.main, [str(sweep), "--out", str(tmp_path / "sweep.html")],
                       capsys, monkeypatch)
    assert outcome.code == 0 and "in_channels=0 is not accepted" in \
        shown_html((tmp_path / "sweep.html").read_text())


def _drop(column: str):
    def edit(folder: Path) -> str:
        table = pd.read_csv(folder / "stages.csv", dtype=str, keep_default_na=False)
        table.drop(columns=[column]).to_csv(folder / "stages.csv", index=False)
        return "stages.csv"
    return edit


def _cell(column: str, value: str):
    def edit(folder: Path) -> str:
        table = pd.read_csv(folder / "stages.csv", dtype=str, keep_default_na=False)
        table.loc[0, column] = value
        table.to_csv(folder / "stages.csv", index=False)
        return "stages.csv"
    return edit


def _meta(change):
    def edit(folder: Path) -> str:
        meta = json.loads((folder / "meta.json").read_text())
        change(meta)
        (folder / "meta.json").write_text(json.dumps(meta))  # NaN as JSON's NaN
        return "meta.json"
    return edit


#: Hand edits no writer makes, and what the line says about them.
HAND_EDITED = {
    "no call_index": (_drop("call_index"), "lacks the columns ['call_index']"),
    "no depth": (_drop("depth"), "lacks the columns ['depth']"),
    "no kind": (_drop("kind"), "lacks the columns ['kind']"),
    "a metric without a name": (_meta(lambda m: m["metrics"][0].pop("name")),
                                "'metrics[0].name' is missing"),
    "a metric of an unknown kind": (_meta(lambda m: m["metrics"][0].update(kind="speed")),
                                    "'metrics[0]': metric 'tensor_retained_mb': kind='speed'; "
                                    "accepted: time, memory"),
    "metrics not a list": (_meta(lambda m: m.update(metrics=5)),
                           "'metrics' must be a list of mappings, got int 5"),
    "a NaN coefficient of variation": (_meta(lambda m: m["noise"].update(forward_cv=math.nan)),
                                       "'noise.forward_cv' must be a finite number >= 0"),
    "an empty median beside its mean": (_cell("cpu_time_ms_median", ""),
                                        "column cpu_time_ms_median, row 2 (stem) is empty where "
                                        "the row's other statistics of cpu_time_ms are not"),
    "a time of 1e308": (_cell("cpu_time_ms_mean", "1e308"),
                        "column cpu_time_ms_mean, row 2 holds 1e+308, larger than 1e+12"),
}


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> Path:
    return tiny_run(tmp_path_factory.mktemp("runs") / "reference")


@pytest.mark.parametrize("case", list(HAND_EDITED))
def test_a_hand_edited_folder_is_one_line_naming_its_file_and_nothing_is_written(
        case, reference_run, tmp_path, capsys, monkeypatch):
    # before: KeyError 'call_index' / 'depth' / 'name' (exit 1), "reliable (CV nan%)" on the
    # page, the empty median drawn as 0 ms, 62 lines of numpy overflow warnings
    edit, problem = HAND_EDITED[case]
    folder = tmp_path / "edited"
    shutil.copytree(reference_run, folder)
    wrong = folder / edit(folder)
    out = tmp_path / "out"
    for tool, arguments in ((compare.main, [reference_run, folder, "--out", out / "c.csv"]),
                            (plot.main, [folder]),
                            (report.main, [folder, "--out", out / "page.html"]),
                            (collect.main, [reference_run, folder, "--out", out / "s.csv"])):
        outcome = run_main(tool, [str(argument) for argument in arguments], capsys,
                           monkeypatch)
        assert outcome.code == 2, (tool.__module__, outcome.stderr)
        assert f"{wrong} is broken" in outcome.line and problem in outcome.line
        assert not out.exists() and not (folder / "plots").exists()
        assert "Warning" not in outcome.stderr
