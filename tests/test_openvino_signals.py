"""A stop signal after OpenVINO sessions come and go still reaches its handler: compiling
a model points the thread's alternate signal stack at the Core's memory, and with a Core per
session a freed one left it dangling (the next Ctrl-C in the process was a segmentation fault,
found when the stop-signal tests ran after the executor tests in one pytest process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from runtime_models import needs_openvino

ROOT = Path(__file__).resolve().parents[1]

#: Three sessions open at once, then freed, as an executor test does; then SIGINT to a Python handler.
SCRIPT = textwrap.dedent("""
    import gc, signal, sys
    from pathlib import Path
    import numpy as np, torch
    from profiling.runtimes import executor

    folder = Path(sys.argv[1])
    torch.onnx.export(torch.nn.Conv2d(3, 4, 3), (torch.randn(1, 3, 8, 8),),
                      str(folder / "conv.onnx"), dynamo=False)
    feeds = [np.ones((1, 3, 8, 8), np.float32)]
    sessions = [executor("openvino").open(folder / "conv.onnx", folder, "cpu",
                                          profile=profile, dtype="float32")
                for profile in (True, False, False)]
    for session in sessions:
        session.run(feeds)
    del sessions, session
    gc.collect()
    signal.signal(signal.SIGINT, lambda number, frame: print("handled", number, flush=True))
    signal.raise_signal(signal.SIGINT)
""")


@needs_openvino
def test_a_signal_after_openvino_sessions_were_freed_reaches_its_handler(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert (done.returncode, done.stdout.strip()) == (0, "handled 2"), done.stderr[-2000:]
