"""``results/reference/`` stays small and the tables that show it are the ones its runs give
(``benchmarks/reference_results.py`` prints them): the CPU's in the README, the H100's in
docs/gpu.md."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from benchmarks.reference_results import reference_table

ROOT = Path(__file__).resolve().parents[1]


#: where each device's reference table is shown
SHOWN_IN = {"cpu": "README.md", "cuda": "docs/gpu.md"}


def _shown_table(device: str) -> str:
    text = (ROOT / SHOWN_IN[device]).read_text()
    found = re.search(rf"<!-- reference table: {device} -->\n((?:\|.*\n)+)", text)
    assert found, f"{SHOWN_IN[device]} has no reference table for {device}"
    return found.group(1).strip()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_shown_tables_are_the_reference_runs(device):
    assert _shown_table(device) == reference_table(ROOT / "results" / "reference" / device)


def test_the_reference_table_reads_the_runs():
    rows = reference_table(ROOT / "results" / "reference" / "cpu").splitlines()
    assert rows[0] == ("| model | input | parameters | forward (ms) | GMACs | GFLOPs | "
                       "input payload (MB) | peak (MB) | slowest stage |")
    # Faster R-CNN: 41,755,286 parameters, 134.38 GMACs and 269.79 GFLOPs at 224x224 (as
    # tests/test_faster_rcnn.py counts them), the input 1x3x224x224 float32 = 602,112 bytes
    assert rows[2].startswith("| `faster_rcnn` | [1, 3, 224, 224] | 41,755,286 | ")
    assert rows[2].split(" | ")[4:7] == ["134", "270", "0.602"]


def test_tracked_results_stay_under_2_mb():
    files = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    if not files:
        pytest.skip("not a git checkout")
    assert sum((ROOT / f).stat().st_size for f in files if (ROOT / f).is_file()) < 2e6
