"""The torchstat-compatible layer table: torchstat's numbers by hand, its layout, the seed."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

from profiling.counting import OpCounting, count_ops
from profiling.files import write_files
from profiling.reports.layers_table import (LAYER_COLUMNS, layers_table, render_layers_text,
                                            layers_files)

#: the users' seed logs the tests compare with, copied from ../shared/seeds
SEEDS_DIR = Path(__file__).resolve().parent / "data" / "seeds"
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "configs")
F32 = 4


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.act = nn.GELU()         # no torchstat definition: the dispatcher's counts
        self.fc = nn.Linear(64, 5)
        self.unused = nn.Linear(1, 1)

    def forward(self, x):
        x = self.pool(self.relu(self.conv(x)))
        return self.fc(self.act(x.flatten(1)))


@pytest.fixture(scope="module")
def table():
    model = _Net().eval()
    with torch.no_grad():
        counting = count_ops(model, torch.randn(2, 3, 8, 8))
    return model, counting, layers_table(model, counting.modules)


def test_rows_follow_torchstat_definitions(table):
    _, _, frame = table
    assert list(frame.columns) == LAYER_COLUMNS
    rows = frame.set_index("module name")
    assert list(rows.index) == ["conv", "relu", "pool", "act", "fc", "total"]  # unused: not run
    conv = rows.loc["conv"]
    assert (conv["input shape"], conv["output shape"]) == ("  3   8   8", "  4   8   8")
    assert conv["params"] == 4 * 27 + 4
    assert conv["memory(MB)"] == 4 * 8 * 8 * F32 / 2 ** 20
    assert conv["MAdd"] == (27 + 27) * 8 * 8 * 4       # per sample: 27 mul, 26 add + bias
    assert conv["Flops"] == 27 * 4 * 2 * 64 + 4 * 2 * 64  # with the batch, plus bias
    assert conv["MemRead(B)"] == 2 * (3 * 64 + 112) * F32
    assert conv["MemWrite(B)"] == 2 * 4 * 64 * F32
    assert (rows.loc["relu", "MAdd"], rows.loc["relu", "Flops"]) == (256, 512)
    assert (rows.loc["pool", "MAdd"], rows.loc["pool", "Flops"]) == (3 * 64, 512)
    assert (rows.loc["pool", "MemRead(B)"], rows.loc["pool", "MemWrite(B)"]) == (2048, 512)
    assert (rows.loc["act", "MAdd"], rows.loc["act", "Flops"]) == (128, 128)
    assert (rows.loc["act", "MemRead(B)"], rows.loc["act", "MemWrite(B)"]) == (512, 512)
    fc = rows.loc["fc"]
    assert (fc["MAdd"], fc["Flops"]) == (5 * (2 * 64 - 1), 2 * 64 * 5)
    assert (fc["MemRead(B)"], fc["MemWrite(B)"]) == (2 * (64 + 325) * F32, 10 * F32)
    assert fc["MemR+W(B)"] == fc["MemRead(B)"] + fc["MemWrite(B)"]


def test_total_row_is_torchstats(table):
    _, _, frame = table
    layers, total = frame.iloc[:-1], frame.iloc[-1]
    for column in ("params", "memory(MB)", "MAdd", "Flops", "MemR+W(B)"):
        assert total[column] == pytest.approx(layers[column].sum())
    # torchstat's report repeats the last layer's MemRead and MemWrite in the total row
    assert total["MemRead(B)"] == layers.iloc[-1]["MemRead(B)"]
    assert total["MemWrite(B)"] == layers.iloc[-1]["MemWrite(B)"]
    assert pd.isna(total["duration[%]"])


def test_text_has_torchstats_layout_and_footer(table):
    _, _, frame = table
    text = render_layers_text(frame)
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["module", "name", "input", "shape"]
    assert lines[1].split()[:2] == ["0", "conv"]
    assert "13,824.0" in lines[1]  # MAdd with thousands separators
    assert lines[6].startswith("total")
    assert lines[7] == "=" * len(lines[0])
    assert lines[8] == "Total params: 437"
    assert lines[9] == "-" * len(lines[0])
    assert lines[12] == "Total Flops: 16.13KFlops"  # 14,336 + 512 + 512 + 128 + 640
    assert lines[14] == "-" * len(lines[0])
    assert lines[15].startswith("Conventions (torchstat's): memory(MB) and Total memory are MiB")
    assert len(lines) == 16
    with_totals = render_layers_text(frame, {"macs": 7_000_000, "flops": 16_130_000_000})
    assert with_totals.splitlines()[16] == (
        "Dispatcher totals (every operator; modules.txt, stages.csv, meta.json): 0.007 GMACs, "
        "16.13 GFLOPs (1e9; FLOPs: 2 per MAC plus every other floating-point operation; for "
        "convolutions and linear layers torchstat's Flops are close to these MACs).")


def test_durations_become_percentages(table, tmp_path):
    model, counting, _ = table
    durations = {"conv": 3.0, "relu": 1.0, "fc": 1.0}
    frame = layers_table(model, counting.modules, durations)
    assert frame.set_index("module name").loc["conv", "duration[%]"] == pytest.approx(0.6)
    assert frame.iloc[-1]["duration[%]"] == pytest.approx(1.0)
    paths = write_files(tmp_path, layers_files(frame))
    assert sorted(p.name for p in paths) == ["layers.csv", "layers.txt"]
    assert "60.00%" in (tmp_path / "layers.txt").read_text()
    assert list(pd.read_csv(tmp_path / "layers.csv").columns) == LAYER_COLUMNS


def test_a_layer_called_twice_shows_its_last_call():
    relu = nn.ReLU()
    model = nn.ModuleDict({"relu": relu})
    with OpCounting(model) as counting:
        relu(torch.randn(1, 2, 2))
        relu(torch.randn(1, 3, 4))
    row = layers_table(model, counting.modules).iloc[0]
    assert (row["input shape"], row["MAdd"]) == ("  3   4", 12)


def test_a_layer_with_two_inputs_shows_the_first():
    class Pair(nn.Module):
        def forward(self, a, b):
            return a * b

    model = nn.Sequential()
    model.add_module("pair", Pair())
    with OpCounting(model) as counting:
        model.pair(torch.randn(2, 3, 5), torch.randn(1, 5))
    row = layers_table(model, counting.modules).iloc[0]
    assert (row["input shape"], row["output shape"]) == ("  3   5", "  3   5")
    assert (row["MAdd"], row["Flops"]) == (30, 30)  # no torchstat definition: dispatcher's


def _seed_table() -> tuple[list[list[str]], list[str]]:
    paths = sorted(SEEDS_DIR.glob("000_*.txt"))
    assert len(paths) == 1, f"the torchstat seed table belongs in {SEEDS_DIR}"
    rows, total = [], None
    for line in paths[0].read_text().splitlines():
        tokens = line.split()
        if len(tokens) == 16 and tokens[0].isdigit():
            rows.append(tokens)
        elif tokens and tokens[0] == "total":
            total = tokens
    return rows, total


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def test_swiftnet_4ch_reproduces_the_seed_table():
    zoo = pytest.importorskip("zoo")
    if "swiftnet" not in zoo.list_models():
        pytest.skip("the swiftnet model is not registered")
    from hydra import compose, initialize_config_dir
    from zoo.tools.composition import store_declared_configs
    from hydra.utils import instantiate

    seed_rows, seed_total = _seed_table()
    store_declared_configs()  # the declared options' defaults, for Hydra
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        config = compose("profile", overrides=["experiment=swiftnet_4ch"])
    with torch.device("meta"):
        model = instantiate(config.model).eval()
        image = model.example_inputs(1, config.input.size, device="meta")[0]
    with torch.no_grad():
        counting = count_ops(model, image)
    frame = layers_table(model, counting.modules)
    assert len(frame) == len(seed_rows) + 1
    columns = ["params", "memory(MB)", "MAdd", "Flops", "MemRead(B)", "MemWrite(B)"]
    for seed, (_, row) in zip(seed_rows, frame.iterrows()):
        assert row["module name"] == seed[1]
        assert row["input shape"].split() == seed[2:5]
        assert row["output shape"].split() == seed[5:8]
        expected = [_number(t) for t in seed[8:14]]
        actual = [round(row["memory(MB)"], 2) if c == "memory(MB)" else row[c] for c in columns]
        assert actual == expected, seed[1]
    total = frame.iloc[-1]
    expected_total = [_number(t) for t in seed_total[1:7]]
    assert [round(total[c], 2) if c == "memory(MB)" else total[c] for c in columns] == \
        expected_total
    assert total["MemR+W(B)"] == pytest.approx(_number(seed_total[8]), rel=1e-6)
    text = render_layers_text(frame).splitlines()
    footer = text[text.index("Total params: 11,789,377"):]
    assert footer[2:6] == ["Total memory: 528.80MB", "Total MAdd: 105.03GMAdd",
                           "Total Flops: 52.62GFlops", "Total MemR+W: 1.12GB"]
