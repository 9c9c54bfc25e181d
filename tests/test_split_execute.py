"""zoo.split --execute: cuts run for real, head here and tail in a zoo.serve process, and the
estimate's terms.

The shaped tests need root and iproute2 (CI runs as root) and skip cleanly elsewhere.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from profiling.split.executed import (INITIAL_WINDOW, MSS, SEGMENT_OVERHEAD, executed_row,
                                      framing_bytes, slow_start_ms)
from profiling.split.link import TBF_BURST_BYTES, Link, unshaped_reason

TINY = ["model=torchvision", "model.arch=mobilenet_v3_small", "input.size=[32,32]"]
needs_namespaces = pytest.mark.skipif(unshaped_reason() is not None,
                                      reason=f"no shaped link here: {unshaped_reason()}")


def _split(argv, capsys):
    from zoo.tools.split import main

    try:
        main(argv)
    except SystemExit as stopped:
        return stopped.code, capsys.readouterr()
    return 0, capsys.readouterr()


def _executed(tmp_path, capsys, codec="zlib"):
    out = tmp_path / "split"
    code, printed = _split([*TINY, "--execute", "--bandwidth", "20", "--codec", codec,
                            "--repeats", "1", "--out", str(out)], capsys)
    assert code == 0, printed.err
    return pd.read_csv(out / "executed.csv"), pd.read_csv(out / "cuts.csv"), printed.out


def _check_rows(executed, cuts, encodings=("raw", "zlib")):
    """Every cut and encoding once, the unsplit output bit-exact, and the payload sent the
    analysis's bytes exactly (raw and zlib: the same codec on the same ranges)."""
    executed_cuts = list(cuts[cuts["kind"].isin(["input", "stage", "output"])]["cut"])
    assert list(executed["cut"]) == [c for c in executed_cuts for _ in encodings]
    assert executed["output_exact"].all() and (executed["output_max_abs_diff"] == 0).all()
    table = cuts.set_index("cut")
    for _, row in executed.iterrows():
        analysed = table.loc[row["cut"], f"{row['encoding']}_bytes"]
        assert row["sent_bytes"] - row["header_bytes"] == analysed == row["analysis_bytes"]


def test_an_executed_cut_over_a_shaped_link_where_root(tmp_path, capsys):
    """Shaped where namespaces can be made (CI runs as root), else over loopback, said."""
    executed, cuts, printed = _executed(tmp_path, capsys, "none")
    _check_rows(executed, cuts, ("raw",))
    if unshaped_reason() is not None:
        assert not executed["shaped"].any() and "link: unshaped loopback (" in printed
        return
    assert executed["shaped"].all() and (executed["bandwidth_mbps"] == 20).all()
    # no transfer beats the wire: tbf lets 16 KiB through at once, the rest at 20 Mbit/s
    assert (executed["transfer_min_ms"] >= executed["wire_floor_ms"]).all()
    # a 1 MiB probe: TCP's payload share of the wire, plus the bucket's head start at most
    goodput = 20 * MSS / (MSS + SEGMENT_OVERHEAD)
    assert 17 < executed["throughput_mbps"].iloc[0] <= goodput / (1 - TBF_BURST_BYTES / 2**20)
    assert "link: tbf 20 Mbit/s" in printed
    assert (tmp_path / "split" / "split_latency.png").stat().st_size > 10_000


@pytest.mark.slow
def test_without_namespaces_the_run_says_it_is_unshaped(tmp_path, capsys, monkeypatch):
    import zoo.tools.split_execute as split_execute

    monkeypatch.setattr(split_execute, "unshaped_reason", lambda: "not root (test)")
    executed, cuts, printed = _executed(tmp_path, capsys)
    _check_rows(executed, cuts)
    assert not executed["shaped"].any() and executed["bandwidth_mbps"].isna().all()
    assert "link: unshaped loopback (not root (test))" in printed


@pytest.mark.slow
@needs_namespaces
def test_serve_and_server_in_two_namespaces(tmp_path):
    """stagezoo serve in one namespace, zoo.split --execute --server in the other."""
    python = sys.executable
    environment = {**os.environ, "PYTHONPATH": os.getcwd(), "PYTHONUNBUFFERED": "1"}
    with Link(f"szt{os.getpid() % 10000}") as link:
        server = subprocess.Popen(link.command(python, "-m", "zoo", "serve", *TINY, "--host",
                                               link.server_address, "--token", "t0ken"),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=environment)
        try:
            assert server.stdout.readline().startswith(
                f"serving torchvision mobilenet_v3_small on {link.server_address}:5577")
            head = subprocess.run(
                ["ip", "netns", "exec", link.head, python, "-m", "zoo.split", *TINY,
                 "--execute", "--server", f"{link.server_address}:5577", "--token", "t0ken",
                 "--codec", "none", "--repeats", "1", "--out", str(tmp_path / "remote")],
                capture_output=True, text=True, env=environment, timeout=600)
            assert head.returncode == 0, head.stderr
            wrong = subprocess.run(
                ["ip", "netns", "exec", link.head, python, "-m", "zoo.split", *TINY[:2],
                 "input.size=[64,64]", "--execute", "--server",
                 f"{link.server_address}:5577", "--token", "t0ken", "--codec", "none",
                 "--out", str(tmp_path / "other")],
                capture_output=True, text=True, env=environment, timeout=600)
        finally:
            server.terminate()
            server.wait(10)
    executed = pd.read_csv(tmp_path / "remote" / "executed.csv")
    assert executed["output_exact"].all() and not executed["shaped"].any()
    assert executed["link"].iloc[0] == f"server {link.server_address}:5577"
    assert wrong.returncode == 2 and "the client's config hash" in wrong.stderr
    assert "both sides must run the same model, overrides and weights" in wrong.stderr


def test_a_server_bound_beyond_localhost_needs_a_token(capsys, monkeypatch):
    from zoo.tools.serve import main

    monkeypatch.delenv("STAGEZOO_TOKEN", raising=False)
    with pytest.raises(SystemExit) as stopped:
        main([*TINY, "--host", "0.0.0.0"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "error: --host 0.0.0.0 is reachable from other machines: give a shared token "
        "(--token or $STAGEZOO_TOKEN)")


@pytest.mark.parametrize("argv, message", [
    (["--execute", "--meta"], "--execute runs the forward for real: drop --meta"),
    (["--server", "h:1"], "--server and --token go with --execute"),
    (["--execute", "--server", "nohost"], "--server must be HOST:PORT"),
    (["--execute", "--every-op"], "--execute runs the stage cuts and the --depth cuts"),
    (["--execute", "--repeats", "0"], "--repeats must be an integer >= 1, got 0"),
])
def test_execute_options_are_checked_first(argv, message, capsys):
    code, printed = _split([*TINY, *argv], capsys)
    assert code == 2 and message in printed.err and printed.err.count("\n") == 1


def test_model_identity_tells_models_and_weights_apart():
    import torch

    from zoo.tools.composition import checked_config
    from zoo.tools.job_inputs import prepare
    from zoo.tools.serve import model_identity

    def identity(overrides):
        cfg = checked_config(overrides)
        return model_identity(cfg, prepare(cfg, torch.device("cpu"))[0])

    same = identity(TINY)
    assert identity(TINY) == same
    assert identity(TINY + ["run.repeats=9"]) == same  # how a run is timed is not the model
    resized = identity([*TINY[:2], "input.size=[48,48]"])
    assert resized["config"] != same["config"] and resized["weights"] == same["weights"]
    reseeded = identity(TINY + ["run.seed=1"])
    assert reseeded["weights"] != same["weights"]


def test_framing_and_slow_start_by_hand():
    assert framing_bytes(MSS) == MSS + SEGMENT_OVERHEAD
    assert framing_bytes(MSS + 1) == MSS + 1 + 2 * SEGMENT_OVERHEAD
    # 20 Mbit/s = 2500 bytes/ms; RTT 20 ms: the pipe holds 50,000 bytes. The first window is
    # 10 x 1514 = 15,140 bytes: rounds of 15,140 and 30,280 bytes wait out their RTT
    # (20 - 6.056 and 20 - 12.112 ms), then 60,560 > 50,000 fills the pipe.
    window = INITIAL_WINDOW * (MSS + SEGMENT_OVERHEAD)
    assert math.isclose(slow_start_ms(1e6, 20, 20), (20 - window / 2500) + (20 - 2 * window
                                                                                 / 2500))
    assert slow_start_ms(window, 20, 20) == 0  # fits in the first window
    assert slow_start_ms(1e6, 20, 0) == 0


def test_an_executed_row_by_hand():
    samples = {"head_ms": [10, 12, 11], "encode_ms": [1, 1, 1], "transfer_ms": [41, 40, 42],
               "decode_ms": [2, 2, 2], "skip_ms": [0.5, 0.5, 0.5], "tail_ms": [30, 30, 30],
               "end_to_end_ms": [90, 95, 100]}
    row = executed_row(samples, sent_bytes=100_000, header_bytes=500, bandwidth_mbit=20,
                       rtt_ms=1.0)
    assert row["measured_ms_median"] == 95 and (row["measured_ms_low"],
                                                row["measured_ms_high"]) == (90, 100)
    assert row["estimated_ms"] == 11 + 1.0 + 40 + 30  # head + RTT + 100 kB at 2500 B/ms + tail
    framing = math.ceil(100_000 / MSS) * SEGMENT_OVERHEAD / 2500
    assert math.isclose(row["estimated_terms_ms"], 82 + 3 + 0.5 + framing)
    assert math.isclose(row["error"], (82 - 95) / 95) and row["differs"] == ""
