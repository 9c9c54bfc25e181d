"""The PNG plots' faults named in issue 27: every layer name shown at a readable size, every
latency curve its own colour, zero-byte stages and the best cut visible."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")
from PIL import Image  # noqa: E402

from profiling.reports.plots import distinct_colours, plot_layers, plot_payload  # noqa: E402


def test_every_latency_curve_has_its_own_colour():
    from matplotlib.colors import to_hex

    for count in (3, 10, 11, 40):
        colours = [to_hex(c) for c in distinct_colours(count)]
        assert len(set(colours)) == count


def test_the_layer_plot_grows_to_give_every_name_its_room():
    layers = pd.DataFrame({"module name": [f"layer{i}" for i in range(150)] + ["total"],
                           "params": 1.0, "memory(MB)": 1.0, "duration[%]": np.nan})
    width, _ = Image.open(io.BytesIO(plot_layers(layers))).size
    assert width >= 150 * 0.15 * 110  # 0.15 inch per name at 110 dpi: 8-point names, none left out


def test_a_stage_of_zero_bytes_gets_a_mark_on_the_axis():
    stages = pd.DataFrame({"stage": ["a", "b", "c"], "kind": "stage", "depth": 0,
                           "call_index": 0, "order": [0, 1, 2],
                           "out_bytes": [4_000_000, 0, 1_000]})

    def marked(table) -> int:  # pixels of the mark's colour, #c51b7d
        image = np.asarray(Image.open(io.BytesIO(plot_payload(table))).convert("RGB"))
        return int((np.abs(image.astype(int) - [197, 27, 125]).max(axis=2) <= 2).sum())

    assert marked(stages) > 30
    assert marked(stages.assign(out_bytes=[4_000_000, 5, 1_000])) == 0


@pytest.mark.parametrize("low, high", [(1.9, 48.0), (3e9, 9e10), (0.2, 0.9)])
def test_log_axes_label_in_between_ticks_as_plain_numbers(low, high):
    """A log axis of a decade or two labels some in-between ticks; written as 3 x 10^0 they ran
    into each other on the roofline's intensity axis."""
    from matplotlib.figure import Figure

    from profiling.reports.plots import _log_axes

    axes = Figure().add_subplot()
    _log_axes(axes)
    axes.set_xlim(low, high)
    axes.figure.canvas.draw()
    minor = [t.get_text() for t in axes.xaxis.get_minorticklabels() if t.get_text()]
    assert minor, "no in-between tick labelled"
    assert not any("times" in text or "^" in text for text in minor), minor
