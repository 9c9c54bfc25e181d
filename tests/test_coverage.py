"""``other`` rows and the coverage line: stage rows plus ``other`` add up to the whole forward
at every depth, in the stage table, times.csv, meta.json and the terminal."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import torch

from profiling import profile_model
from tests.test_iterated_containers import Iterated
from zoo.tools.job import run_profile
from zoo.tools.composition import compose_config

#: The MACs of Iterated's unattached parts at 5 rows: stem 8->16 and neck 16->16 (the blocks
#: and head.0 are staged).
UNSTAGED_MACS = 5 * (8 * 16 + 16 * 16)


@pytest.fixture(scope="module")
def toy():
    model = Iterated().eval()
    return profile_model(model, (torch.rand(5, 8),), collectors=["payload", "op_counts",
                                                                  "cpu_time"],
                         attach={"blocks": "blocks", "head.0": "head.0"}, warmup=1, repeats=4)


def test_the_top_level_other_row_holds_what_no_stage_counts(toy):
    rows = toy.stages.set_index("stage")
    assert list(toy.stages["stage"]) == ["blocks.0", "blocks.1", "blocks.2", "head.0", "other"]
    assert rows.loc["other", "kind"] == "other" and rows.loc["other", "depth"] == 0
    assert rows.loc["other", "macs"] == UNSTAGED_MACS == toy.totals["macs"] - 3 * 5 * 256 \
        - 5 * 64
    top = toy.stages[toy.stages["depth"] == 0]
    for count in ("macs", "flops", "bytes_read", "bytes_written"):
        assert top[count].sum() == toy.totals[count]


def test_times_add_up_to_the_forward_in_every_repeat(toy):
    times = pd.DataFrame([{"repeat": r, "stage": c.name, "depth": c.depth, **c.metrics}
                          for r, forward in enumerate(toy.timed) for c in forward])
    per_repeat = times[times["depth"] == 0].groupby("repeat")["cpu_time_ms"].sum()
    assert np.allclose(per_repeat.to_numpy(), toy.forward_ms, rtol=1e-9)
    assert (times.loc[times["stage"] == "other", "cpu_time_ms"] > 0).all()
    means = toy.stages[toy.stages["depth"] == 0]["cpu_time_ms_mean"].sum()
    assert means == pytest.approx(np.mean(toy.forward_ms), rel=1e-9)
    assert toy.coverage["flops"] == pytest.approx(1 - UNSTAGED_MACS * 2 / toy.totals["flops"],
                                                  abs=0.05)
    assert 0 < toy.coverage["time"] < 1


def test_a_nested_other_row_follows_its_parents_children():
    model = Iterated().eval()
    result = profile_model(model, (torch.rand(5, 8),), collectors=["payload", "op_counts"],
                           attach={"head": "head", "head.0": "head.0"})
    assert list(result.stages["stage"]) == ["head", "head.0", "head/other", "other"]
    rows = result.stages.set_index("stage")
    assert rows.loc["head/other", "parent"] == "head" and rows.loc["head/other", "depth"] == 1
    assert rows.loc["head/other", "macs"] == 0  # the ReLU after head.0
    assert rows.loc["head/other", "flops"] == rows.loc["head", "flops"] \
        - rows.loc["head.0", "flops"] > 0


def test_a_flow_network_s_glue_is_its_other_row(tmp_path, capsys):
    # RAFT's forward computes the correlation pyramid and upsamples the flow in its own code:
    # FLOPs outside its four top-level modules
    cfg = compose_config(["model=torchvision", "model.arch=raft_small", "device=meta",
                          "input.size=[128,128]", "hydra.run.dir=" + str(tmp_path)])
    run = run_profile(cfg, tmp_path / "run", print_summary=True)
    stages = pd.read_csv(tmp_path / "run" / "stages.csv")
    top = stages[stages["depth"] == 0]
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert top["flops"].sum() == meta["totals"]["flops"]
    other = top.set_index("stage").loc["other", "flops"]
    assert other > 0
    assert meta["coverage"]["flops"] == pytest.approx(1 - other / meta["totals"]["flops"])
    assert run.result.coverage == meta["coverage"]
    printed = capsys.readouterr().out
    share = f"{math.floor(1000 * meta['coverage']['flops']) / 10:.1f}%"  # rounded down
    assert f"coverage: {share} of the FLOPs in named stages" in printed
    assert "\nother " in printed
