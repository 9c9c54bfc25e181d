"""A meta-device analysis allocates no tensor data: SwiftNet at 40000x40000 stays under 1.5 GB of
resident memory (the figure in docs/benchmarks.md)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_meta_analysis_at_40000_squared_stays_under_1_5_gb(tmp_path):
    code = ("import resource, subprocess, sys; subprocess.run([sys.executable, '-m', "
            "'zoo.profile', 'model=swiftnet', 'device=meta', 'input.size=[40000,40000]', "
            f"'summary=false', 'hydra.run.dir={tmp_path / 'run'}'], check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) * 1024 < 1.5e9
