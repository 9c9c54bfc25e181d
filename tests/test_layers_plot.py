"""layers.png: up to 60 leaf layers one bar each; more grouped by block, summed, labelled with
their module types, names slanted (issue 35)."""

from __future__ import annotations

import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from profiling.reports.layers_plot import _grouped, layer_groups, plot_layers  # noqa: E402


def _layers(count: int) -> pd.DataFrame:
    names = [f"encoder.block{i // 7}.{'conv' if i % 7 < 4 else 'relu'}{i % 7}"
             for i in range(count)]
    return pd.DataFrame({"module name": names + ["total"], "params": 10.0,
                         "memory(MB)": 1.0, "duration[%]": 0.01})


def test_sixty_layers_keep_a_bar_each_and_more_are_grouped_by_block():
    assert layer_groups([f"a.{i}" for i in range(60)]) == [f"a.{i}" for i in range(60)]
    names = list(_layers(70)["module name"][:-1])
    groups = layer_groups(names)
    assert len(set(groups)) == 10 and groups[:8] == ["encoder.block0"] * 7 + ["encoder.block1"]
    assert layer_groups([f"layer{i}" for i in range(70)])[69] == "layer69"  # nothing to group


def test_a_block_sums_its_layers_and_names_their_types():
    table = _layers(70)
    types = {name: ("Conv2d" if ".conv" in name else "ReLU") for name in table["module name"]}
    panels = [("params", "parameters", 1.0), ("duration[%]", "share of the time (%)", 100.0)]
    labels, values, grouped = _grouped(table.iloc[:-1], panels, types)
    assert grouped and len(labels) == 10
    assert labels[0] == "0 encoder.block0 (Conv2d x4, ReLU x3)"
    assert values["params"][0] == 70.0  # 7 layers of 10 parameters
    assert values["duration[%]"][0] == pytest.approx(7.0)  # 7 x 0.01 as a percentage
    assert plot_layers(table, types)[:8] == b"\x89PNG\r\n\x1a\n"
