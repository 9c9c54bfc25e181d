"""A page's data packed like its plotly.js (gzip, then base64; issue 35): the text round-trips,
a run of 600 stage calls makes a page under 2.5 MB that would be over it unpacked, its data
reads back as the JSON that was packed, and a browser draws it (or shows the error box when
the data cannot be unpacked)."""

from __future__ import annotations

import base64
import gzip
import json
import re

import pytest
import torch
from torch import nn

pytest.importorskip("plotly")

from profiling import profile_model, stage, write_run  # noqa: E402
from profiling.reports.html import page as page_module  # noqa: E402
from profiling.reports.html import write_report  # noqa: E402
from profiling.reports.html.packing import pack, unpack  # noqa: E402
from profiling.reports.html.page import page_data  # noqa: E402

#: 100 blocks, each a stage around five nested ones: 600 stage calls.
BLOCKS, PARTS = 100, ("conv1", "bn1", "relu", "conv2", "downsample")


def test_packed_text_round_trips_in_base64_letters_only():
    text = 'charts: {"name": "</script><b>\u00e9\u4e2d\u2028"}' * 50
    packed = pack(text)
    assert re.fullmatch(r"[A-Za-z0-9+/]+=*", packed)  # nothing that could end a <script>
    assert unpack(packed) == text
    # gzip's own format, stamped with no time: the same text packs to the same page
    raw = base64.b64decode(packed)
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0"
    assert gzip.decompress(raw).decode() == text and pack(text) == packed
    assert len(packed) < len(text) / 10  # repeated text shrinks


def test_a_page_without_packed_data_is_refused():
    with pytest.raises(ValueError, match="holds no packed report-data element"):
        page_data('<script type="application/json" id="report-data">{}</script>')


class Blocks(nn.Module):
    """:data:`BLOCKS` stages ``layerN``, each of the :data:`PARTS` as a nested stage around a
    1x1 convolution of a 1x2x2x2 tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in range(BLOCKS):
            with stage(f"layer{block}", x) as outer:
                for part in PARTS:
                    with stage(f"layer{block}.{part}", x) as inner:
                        x = inner.output(self.conv(x))
                x = outer.output(x)
        return x


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """A run folder of :class:`Blocks` (600 stage calls) and its page, with the text the page
    packed as its data."""
    folder = tmp_path_factory.mktemp("many") / "run"
    torch.manual_seed(0)
    model = Blocks().eval()
    result = profile_model(model, (torch.randn(1, 2, 2, 2),), warmup=0, repeats=2,
                           collectors=["payload", "tensor_memory", "op_counts", "cpu_time"])
    write_run(result, folder, model, config={"model": {"name": "blocks"}})
    packed: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page_module, "pack", lambda text: packed.append(text) or pack(text))
        page = write_report([folder])
    return page, packed


@pytest.mark.slow
def test_a_page_of_600_stage_calls_weighs_under_2_5_mb_and_its_data_round_trips(many):
    page, packed = many
    html = page.read_text(encoding="utf-8")
    assert len(packed) == 1  # the data alone: plotly.js is packed by plotly_bundle
    data = page_data(html)
    assert data == json.loads(packed[0])  # what the page holds unpacks to what was packed
    assert data["kind"] == "run"
    labels = data["charts"]["icicle"]["data"][0]["labels"]
    # the forward, its 600 calls, and what each block and the forward do outside their calls
    calls = BLOCKS * (1 + len(PARTS))
    assert len(labels) == 1 + calls + BLOCKS + 1 and calls == 600
    assert labels[:3] == ["forward", "layer0", "layer0.conv1"]
    assert labels[-3:] == ["layer99.downsample", "layer99/other", "other"]
    size = len(html.encode("utf-8"))
    assert page.stat().st_size == size < 2.5e6
    held = re.search(r'id="report-data">([^<]*)</script>', html).group(1)
    assert size - len(held) + len(packed[0].encode("utf-8")) > 2.5e6  # unpacked, it was over


@pytest.mark.slow
def test_a_page_of_600_stage_calls_draws_in_a_browser_and_shows_a_broken_packing(
        many, tmp_path):
    from browser import chromium, render

    if chromium() is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    page, _ = many
    shown = render(page, tmp_path / "many.png")
    assert [line for line in shown.console if "rror" in line or "Uncaught" in line] == []
    assert re.search(r'<body data-page="run"[^>]* data-charts-drawn="5"', shown.dom)
    assert ">layer99.downsample<" in shown.dom or ">\u2003layer99.downsample<" in shown.dom
    broken = tmp_path / "broken.html"
    broken.write_text(re.sub(r'(id="report-data">)[^<]*', r"\1AAAA", page.read_text()))
    shown = render(broken, tmp_path / "broken.png")
    assert re.search(r'<body[^>]* data-errors="1"', shown.dom)
    box = re.search(r'<div id="report-errors">(.*?)</div>', shown.dom, re.S).group(1)
    assert box.startswith("script error: the page's data could not be unpacked: ")
    assert "data-charts-drawn" not in re.search(r"<body[^>]*>", shown.dom).group(0)
