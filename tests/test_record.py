"""One record, read by every report: two results profiled in memory compare, plot and make a
page exactly as their written run folders do, through one code path (issue 24 §2)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

from profiling import profile_model
from profiling.counting import ceilings
from profiling.files import write_folder
from profiling.reports import as_record, compare_runs, read_run, run_files, run_record, write_run

COLLECTORS = ["payload", "tensor_memory", "op_counts", "cpu_time"]
ATTACH = {"conv": "0", "act": "1", "pool": "2"}


def _profiled(width: int):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1)).eval()
    result = profile_model(model, (torch.ones(1, 3, 8, 8),), collectors=COLLECTORS, warmup=0,
                           repeats=3, attach=ATTACH)
    return model, result


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two models (4 and 8 channels) profiled in memory, and their written folders."""
    root = tmp_path_factory.mktemp("record")
    made = {}
    for name, width in (("a", 4), ("b", 8)):
        model, result = _profiled(width)
        write_run(result, root / name, model, config={"model": {"name": "seq"}})
        made[name] = (model, result)
    return made, root


def _same(first: pd.DataFrame, second: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(first.reset_index(drop=True), second.reset_index(drop=True),
                                  check_dtype=False)


def test_two_results_compare_as_their_folders(runs):
    made, root = runs
    (model_a, a), (model_b, b) = made["a"], made["b"]
    in_memory = compare_runs(run_record(a, model_a, config={"model": {"name": "seq"}}),
                             run_record(b, model_b, config={"model": {"name": "seq"}}))
    _same(in_memory, compare_runs(read_run(root / "a"), read_run(root / "b")))
    # a bare result is a record too, and the stage rows are the same without model or config
    bare = compare_runs(a, b)
    _same(bare.drop(columns=["min_change"]), in_memory.drop(columns=["min_change"]))
    conv = in_memory.set_index("stage").loc["conv"]
    # hand counts: 3x3 conv, 3 -> width channels, 8x8 output: 9*3*64*width MACs
    assert (conv["flops_a"], conv["flops_b"]) == (2 * 9 * 3 * 64 * 4 + 4 * 64,
                                                  2 * 9 * 3 * 64 * 8 + 8 * 64)
    assert (conv["out_bytes_a"], conv["out_bytes_b"]) == (4 * 64 * 4, 4 * 64 * 8)
    assert in_memory["stage"].iloc[0] == "(forward)"
    assert in_memory["time_ratio_ci95_low"].notna().all()  # from the repeats in memory


def test_the_record_in_memory_is_the_one_read_back(tmp_path):
    model, result = _profiled(4)
    files, record = run_files(result, model, ceilings=ceilings("h100"),
                              config={"model": {"name": "seq"}})
    write_folder(tmp_path / "run", files)
    read = read_run(tmp_path / "run")
    assert record.directory is None and record.label == "(in memory)"
    assert read.meta == record.meta and read.config == record.config
    _same(read.stages, record.stages)
    _same(read.times, record.times)
    _same(read.layers, record.layers)
    assert read.ceilings == record.ceilings == ceilings("h100")
    assert list(record.times["repeat"].unique()) == [0, 1, 2]
    assert record.layers["module name"].tolist() == ["0", "1", "2", "total"]
    assert record.layers["params"].tolist() == [3 * 4 * 9 + 4, 0, 0, 3 * 4 * 9 + 4]
    assert "attainable_flops_per_s" in record.stages and "attainable_flops_per_s" not in \
        result.stages  # the roofline columns are the record's, the result is left as it was


def test_a_plot_from_memory_is_the_plot_of_the_folder(runs):
    pytest.importorskip("matplotlib")
    from profiling.reports import render_plots

    made, root = runs
    model, result = made["b"]
    in_memory, notes = render_plots(run_record(result, model))
    from_folder, folder_notes = render_plots(root / "b")
    assert sorted(in_memory) == sorted(from_folder) == [
        "plots/layers.png", "plots/memory.png", "plots/payload.png", "plots/roofline.png",
        "plots/time.png"]
    assert notes == folder_notes == []
    assert in_memory["plots/payload.png"] == from_folder["plots/payload.png"]
    assert in_memory["plots/layers.png"] == from_folder["plots/layers.png"]


def test_a_page_from_memory_is_the_page_of_the_folder(tmp_path):
    pytest.importorskip("plotly")
    from profiling.reports.html import run_page

    model, result = _profiled(4)
    files, record = run_files(result, model, config={"model": {"name": "seq"}})
    write_folder(tmp_path / "run", files)
    assert run_page(record).render() == run_page(tmp_path / "run").render()


def test_anything_else_is_not_a_run():
    with pytest.raises(TypeError, match="RunRecord, a ProfileResult or a run folder"):
        as_record(42)
