"""The hierarchical per-module table and the annotated architecture print."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch import nn

from profiling.counting import count_ops
from profiling.files import write_files
from profiling.reports.modules_table import (MODULE_COLUMNS, modules_table,
                                             render_modules_text, modules_files)


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.scale = nn.Parameter(torch.ones(6))

    def forward(self, x):
        return torch.relu(self.fc(x)) * self.scale


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = _Block()
        self.head = nn.Linear(6, 2, bias=False)
        self.spare = nn.Linear(2, 2)  # never called

    def forward(self, x):
        return self.head(self.block(x))


@pytest.fixture(scope="module")
def counted():
    model = _Net()
    counting = count_ops(model, torch.randn(3, 4))
    return model, counting, modules_table(model, counting.modules)


def test_rows_nest_modules_and_list_parameters(counted):
    _, _, table = counted
    assert list(table.columns) == MODULE_COLUMNS
    assert list(zip(table["module"], table["depth"], table["kind"])) == [
        ("model", 0, "module"),
        ("block", 1, "module"),
        ("block.scale", 2, "parameter"),
        ("block.fc", 2, "module"),
        ("block.fc.weight", 3, "parameter"),
        ("block.fc.bias", 3, "parameter"),
        ("head", 1, "module"),
        ("head.weight", 2, "parameter"),
        ("spare", 1, "module"),
        ("spare.weight", 2, "parameter"),
        ("spare.bias", 2, "parameter"),
    ]


def test_figures_are_inclusive(counted):
    _, _, table = counted
    rows = table.set_index("module")
    assert rows.loc["model", "params"] == 4 * 6 + 6 + 6 + 6 * 2 + 2 * 2 + 2
    assert rows.loc["block", "params"] == 4 * 6 + 6 + 6
    assert rows.loc["block.fc.weight", "shape"] == "(6, 4)"
    assert rows.loc["block.fc", "macs"] == 3 * 4 * 6
    # block: linear (2 per MAC + bias), relu and the scale, one per element each
    assert rows.loc["block", "flops"] == 2 * 72 + 18 + 18 + 18
    assert rows.loc["model", "macs"] == 72 + 3 * 6 * 2
    assert rows.loc["model", "activations"] == 18 + 6
    assert rows.loc["head", "calls"] == 1
    assert rows.loc["spare", "calls"] == 0 and pd.isna(rows.loc["spare", "macs"])


def test_text_states_conventions_and_annotates_the_architecture(counted, tmp_path):
    model, counting, table = counted
    text = render_modules_text(model, table)
    assert text.startswith("Modules of _Net\n")
    assert "#MACs: multiply-accumulates" in text and "bias excluded" in text
    assert "| model " in text and "|  block " in text and "|    block.fc.weight " in text
    assert "(6, 4)" in text
    architecture = text[text.index("_Net(\n"):]
    assert "(fc): Linear(\n" in architecture
    assert "in_features=4, out_features=6, bias=True" in architecture
    assert "#params: 30, #MACs: 72, #FLOPs: 162, #acts: 18" in architecture
    assert "(spare): Linear(" in architecture and "#MACs: -" in architecture
    shallow = render_modules_text(model, table, max_depth=1)
    assert "block.fc.weight" not in shallow.split("_Net(")[0]
    paths = write_files(tmp_path, modules_files(model, counting.modules))
    assert sorted(p.name for p in paths) == ["modules.csv", "modules.txt"]
    written = pd.read_csv(tmp_path / "modules.csv")
    assert written["module"].iloc[0] == "model" and written["macs"].iloc[0] == 108
