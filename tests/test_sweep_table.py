"""The table a sweep prints at its end (issue 25 §4): one row per job, failures with their
reason."""

import pandas as pd

from tests.cli_runner import run_main
from zoo.profile import main as profile_main
from zoo.tools.sweep_table import format_sweep_table


def _collected() -> pd.DataFrame:
    """summary.csv's columns as profiling.reports.collect_runs orders them: two stage rows and
    an 'other' row for each finished job, one row for the failed job."""
    head = ["run", "status", "error", "model", "input.size", "device_name", "parameters",
            "forward_ms_median", "stage", "kind", "depth", "flops"]
    rows = [["0_net", "ok", None, "net", "[64,64]", "cpu", 10, 12.345, "a", "stage", 0, 2e9],
            ["0_net", "ok", None, "net", "[64,64]", "cpu", 10, 12.345, "a.b", "stage", 1, 1e9],
            ["0_net", "ok", None, "net", "[64,64]", "cpu", 10, 12.345, "other", "other", 0, 5e8],
            ["1_net", "failed", "ConfigError: input size 60x60 does not fit\n net", "net",
             "[60,60]", None, None, None, None, None, None, None],
            ["2_net", "ok", None, "net", "[128,128]", "cpu", 10, 51.0, "a", "stage", 0, 8e9]]
    return pd.DataFrame(rows, columns=head)


def test_one_row_per_job_with_the_swept_options_and_the_failures_reason():
    # model is the same in every job, so only input.size is shown; GFLOPs: 2 + 0.5 (other)
    assert format_sweep_table(_collected()) == [
        "job    input.size  status  forward ms  GFLOPs",
        "0_net  [64,64]     ok            12.3    2.50",
        "1_net  [60,60]     failed: ConfigError: input size 60x60 does not fit net",
        "2_net  [128,128]   ok            51.0    8.00"]


def test_a_job_with_unreliable_timings_is_marked_and_its_noise_shown():
    table = _collected().assign(noise=["reliable (CV 1.0%)"] * 3 + [None]
                                + ["UNRELIABLE (CV 105.0%)"])
    lines = format_sweep_table(table)
    assert lines[0] == "job    input.size  status  forward ms  noise                   GFLOPs"
    assert lines[1] == "0_net  [64,64]     ok            12.3  reliable (CV 1.0%)        2.50"
    assert lines[3] == "2_net  [128,128]   ok !          51.0  UNRELIABLE (CV 105.0%)    8.00"
    assert lines[4].startswith("! unreliable timings")


def test_a_sweep_prints_its_table_at_the_end(tmp_path, capsys, monkeypatch):
    outcome = run_main(profile_main, ["-m", "model=gmflow", "device=meta", "summary=false",
                                      "input.size=[64,64],[60,60]",
                                      f"hydra.sweep.dir={tmp_path / 'sweep'}"],
                       capsys, monkeypatch)
    assert outcome.code == 1
    table = outcome.stdout.split("job       input.size  status  forward ms  GFLOPs\n")[1]
    assert table.splitlines()[:2] == [
        "0_gmflow  [64,64]     ok               -    2.00",
        "1_gmflow  [60,60]     failed: ConfigError: input size 60x60 does not fit GMFlow: height "
        "and width must be multiples of 16 (upsample_factor=8, attn_splits_list=[2]); nearest "
        "valid sizes: 64x64, 48x64, 64x48, 48x48; or set input.pad=true"]
