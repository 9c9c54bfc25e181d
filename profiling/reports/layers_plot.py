"""``layers.png``: the torchstat table along the forward, the way its users read it ("params
bulge in the middle, memory at both ends").

Up to :data:`MAX_BARS` leaf layers get a bar each. A deeper network's layers are grouped by
block, the longest common module path that leaves at most :data:`MAX_BARS` groups in forward
order (``encoder.layer1.0``), each group's figures summed and labelled with its module types
(``Conv2d x2, BatchNorm2d x2, ReLU``) where they are known. Names are slanted, never
vertical.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Optional

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .plot_style import log_if_wide, plot_label, png

__all__ = ["plot_layers", "layer_groups", "MAX_BARS"]

#: The most bars ``layers.png`` draws before it groups the layers by block.
MAX_BARS = 60
#: the torchstat table's columns drawn, their axis labels and scales (its memory(MB) is MiB:
#: shown in MB, 1e6 bytes, as everywhere else).
_PANELS = (("params", "parameters", 1.0),
           ("memory(MB)", "output per sample (MB)", 2 ** 20 / 1e6),
           ("duration[%]", "share of the time (%)", 100.0))
#: the width each bar gets (inches): room for its slanted name at 8 points.
_BAR_WIDTH_IN = 0.15


def _blocks(names: list[str], depth: int) -> list[str]:
    return [".".join(name.split(".")[:depth]) for name in names]


def _runs(keys: list[str]) -> int:
    return sum(1 for i, key in enumerate(keys) if i == 0 or key != keys[i - 1])


def layer_groups(names: list[str], max_bars: int = MAX_BARS) -> list[str]:
    """The group of each leaf layer: itself when there are at most ``max_bars``, else its
    module path cut to the deepest level that leaves at most ``max_bars`` runs of
    consecutive layers (a name without dots stays itself)."""
    if len(names) <= max_bars:
        return list(names)
    deepest = max(name.count(".") for name in names) + 1
    for depth in range(deepest - 1, 0, -1):
        keys = _blocks(names, depth)
        if _runs(keys) <= max_bars:
            return keys
    return list(names)


def _type_label(types: list[str]) -> str:
    counts = Counter(types)
    shown = [f"{name} x{count}" if count > 1 else name for name, count in counts.most_common(3)]
    return ", ".join(shown) + (", ..." if len(counts) > 3 else "")


def _grouped(rows: pd.DataFrame, panels: list, types: Optional[Mapping[str, str]]
             ) -> tuple[list[str], dict[str, np.ndarray], bool]:
    names = [str(name) for name in rows["module name"]]
    groups = layer_groups(names)
    grouped = groups != names
    starts = [i for i in range(len(groups)) if i == 0 or groups[i] != groups[i - 1]]
    ends = starts[1:] + [len(groups)]
    labels, values = [], {column: [] for column, _, _ in panels}
    for number, (start, end) in enumerate(zip(starts, ends)):
        kinds = [types[name] for name in names[start:end] if types and name in types]
        label = f"{number} {plot_label(groups[start])}"
        if grouped or kinds:
            label += f" ({_type_label(kinds) if kinds else f'{end - start} layers'})"
        labels.append(label)
        for column, _, scale in panels:
            part = rows[column].astype(float).fillna(0).to_numpy()[start:end]
            values[column].append(part.sum() * scale)
    return labels, {k: np.asarray(v) for k, v in values.items()}, grouped


def plot_layers(layers: pd.DataFrame, types: Optional[Mapping[str, str]] = None
                ) -> Optional[bytes]:
    """The torchstat table (:func:`~profiling.reports.layers_table`, or its ``layers.csv``)
    along the forward: parameters, output memory and share of the time, one panel each (time
    only when measured), by leaf layer or, above :data:`MAX_BARS` layers, by block.
    ``types``: module path -> type name (for the labels). ``None`` for an empty table."""
    rows = layers[layers["module name"] != "total"]
    panels = [(column, label, scale) for column, label, scale in _PANELS
              if rows[column].astype(float).notna().any()]
    if rows.empty or not panels:
        return None
    labels, values, grouped = _grouped(rows, panels, types)
    longest = max(map(len, labels))
    figure = Figure(figsize=(max(6.0, _BAR_WIDTH_IN * len(labels) + 2),
                             2.4 * len(panels) + 1 + 0.045 * longest))
    axes_list = np.atleast_1d(figure.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0])
    x = np.arange(len(labels))
    for index, (axes, (column, label, _)) in enumerate(zip(axes_list, panels)):
        axes.bar(x, values[column], color=f"C{index}")
        axes.set_ylabel(label + (", summed" if grouped else ""), fontsize=8)
        log_if_wide(axes, values[column])
        axes.grid(axis="y", alpha=0.3)
    axes_list[-1].set_xticks(x, labels, rotation=60, ha="right", rotation_mode="anchor",
                             fontsize=8)
    axes_list[-1].set_xlim(-0.7, len(labels) - 0.3)
    axes_list[-1].set_xlabel(f"{'block' if grouped else 'leaf layer'} in order of first call"
                             + (f" ({len(rows)} layers grouped by module path)" if grouped
                                else " (layers.csv row and module)"))
    axes_list[0].set_title("Leaf layers along the forward (the torchstat table; memory "
                           "converted from its MiB to MB)")
    figure.tight_layout()
    return png(figure)
