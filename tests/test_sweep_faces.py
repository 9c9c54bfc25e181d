"""One sweep, many faces (issue 35): the table a multirun prints, its summary.csv and the sweep's
page state the same jobs in the same order with the same swept values, forward times, GFLOPs
and noise; a job whose forward varied a lot is marked on every face; the forward's whiskers are
the interval of its median, labelled with its true coverage; the metric chart starts on the
first swept option. Every expected figure is recomputed here from each job's meta.json."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from profiling.reports.html import write_report
from profiling.reports.html.page import page_data
from profiling.reports.numbers import significant
from page_tables import page_rows

pytest.importorskip("plotly")

ROOT = Path(__file__).resolve().parents[1]
JOBS = ["0_torchvision-resnet18", "1_torchvision-resnet18"]
SIZES = ["[32,32]", "[48,48]"]


def _columns(line: str) -> list[str]:
    return re.split(r" {2,}", line.strip())


def _terminal_table(out: str) -> tuple[list[str], dict[str, list[str]]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("job "))
    rows = {}
    for line in lines[start + 1:]:
        if not line.startswith(tuple(JOBS)):
            break
        cells = _columns(line)
        rows[cells[0]] = cells
    return _columns(lines[start]), rows


def _meta(sweep: Path, job: str) -> dict:
    return json.loads((sweep / job / "meta.json").read_text())


def _faces(sweep: Path, out: str) -> tuple:
    header, terminal = _terminal_table(out)
    summary = pd.read_csv(sweep / "summary.csv", keep_default_na=False).drop_duplicates("run")
    page = write_report([sweep]).read_text()
    return header, terminal, summary, page


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sweep") / "sweep"
    done = subprocess.run(
        [sys.executable, "-m", "zoo.profile", "-m", "model=torchvision", "model.arch=resnet18",
         "run.warmup=1", "run.repeats=3", "summary=false", "input.size=[32,32],[48,48]",
         f"hydra.sweep.dir={folder}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return folder, done.stdout


@pytest.mark.slow
def test_every_face_of_a_sweep_states_the_same_jobs_and_numbers(sweep):
    folder, out = sweep
    header, terminal, summary, page = _faces(folder, out)
    shown = page_rows(page, "jobs")
    # jobs and order, named alike, with their swept values
    assert list(terminal) == list(summary["run"]) == [name for name, _ in shown] == JOBS
    assert header[:2] == ["job", "input.size"] and "noise" in header
    assert [terminal[job][1] for job in JOBS] == SIZES
    assert [str(v) for v in summary["input.size"]] == SIZES
    assert [cells["input.size"] for _, cells in shown] == SIZES
    for (job, cells), (_, row) in zip(shown, summary.iterrows()):
        meta = _meta(folder, job)
        forward = float(np.median(meta["forward_ms"]))
        gflops = meta["totals"]["flops"] / 1e9
        line = dict(zip(header, terminal[job]))
        # the forward's median and the GFLOPs, from meta.json
        assert line["forward ms"] == significant(forward)
        assert row["forward_ms_median"] == pytest.approx(forward)
        assert float(cells["forward ms"]) == pytest.approx(forward)
        assert line["GFLOPs"] == significant(gflops)
        assert float(cells["GFLOPs"]) == pytest.approx(gflops)
        # the noise: the forward's CV on every face, and one verdict
        cv = meta["noise"]["forward_cv"]
        assert f"CV {cv:.1%}" in line["noise"] == row["noise"] == cells["noise"]
        assert row["forward_cv"] == pytest.approx(cv)
        marked = row["noise"].startswith("UNRELIABLE")
        assert (line["status"] == "ok !") == marked == (cells["status"] == "ok !")
        assert line["status"] in ("ok", "ok !")

    # the whiskers: each job's interval of its median, 3 repeats: the lowest and highest
    data = page_data(page)
    for job, row in zip(JOBS, data["sweep_plot"]["rows"]):
        forward = _meta(folder, job)["forward_ms"]
        assert row["whisker"] == pytest.approx([min(forward), max(forward)])
    assert "interval of its median (75% CI: its true coverage" in page
    # the metric chart starts on the forward against the first swept option
    x = re.search(r'<select id="sweep-x">(.*?)</select>', page).group(1)
    y = re.search(r'<select id="sweep-y">(.*?)</select>', page).group(1)
    assert re.findall(r'value="([^"]*)"', x) == ["input.size"]
    assert re.findall(r'value="([^"]*)"', y)[0] == "forward ms"


def _set_noise(meta_path: Path, forward_ms: list[float]) -> None:
    meta = json.loads(meta_path.read_text())
    cv = float(np.std(forward_ms, ddof=1) / np.mean(forward_ms))
    meta["forward_ms"] = forward_ms
    meta["noise"].update(forward_cv=cv, cores=2, load_average_before=[0.1, 0.1, 0.1],
                         load_average_after=[0.1, 0.1, 0.1])
    meta_path.write_text(json.dumps(meta))


@pytest.mark.slow
def test_a_job_whose_forward_varied_is_marked_on_every_face(sweep, tmp_path):
    import shutil

    from zoo.tools.sweep_summary import summarise_sweep
    from zoo.tools.sweep_table import UNRELIABLE_LEGEND, format_sweep_table

    folder = tmp_path / "sweep"
    shutil.copytree(sweep[0], folder)
    _set_noise(folder / JOBS[0] / "meta.json", [10.0, 30.0, 12.0])  # CV 65%: varied a lot
    _set_noise(folder / JOBS[1] / "meta.json", [10.0, 10.1, 10.05])  # CV 0.5%
    outcome = summarise_sweep(folder)  # what the multirun's end does: summary.csv, the table
    out = "\n".join(format_sweep_table(outcome.table))
    header, terminal, summary, page = _faces(folder, out)
    shown = dict(page_rows(page, "jobs"))
    statuses = [(dict(zip(header, terminal[job]))["status"], shown[job]["status"],
                 summary.set_index("run").loc[job, "noise"].split(" ")[0]) for job in JOBS]
    assert statuses == [("ok !", "ok !", "UNRELIABLE"), ("ok", "ok", "reliable")]
    assert UNRELIABLE_LEGEND in out
