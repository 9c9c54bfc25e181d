"""``results/reference/`` stays small and the README's tables are the ones its runs give
(``benchmarks/reference_results.py`` prints them)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from benchmarks.reference_results import reference_table

ROOT = Path(__file__).resolve().parents[1]


def _readme_table(device: str) -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(rf"<!-- reference table: {device} -->\n((?:\|.*\n)+)", text)
    assert found, f"the README has no reference table for {device}"
    return found.group(1).strip()


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_the_readme_tables_are_the_reference_runs(device):
    assert _readme_table(device) == reference_table(ROOT / "results" / "reference" / device)


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
