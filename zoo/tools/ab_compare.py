"""``zoo.compare --run "OVERRIDES A" --run "OVERRIDES B"``: two configurations timed in one
process, in alternation, so that the machine's drift hits both alike.

Both models are built and analysed first (payload, counts, warm-up, one timed forward each);
then each round times one forward of each, in the order A B, B A, A B, ... (so that neither
always goes first). Round ``i``'s two forwards are row ``repeat = i`` of each run's
``times.csv``; :func:`profiling.reports.comparison.compare_paired_runs` compares them round
by round. When a side names a runtime (``run.runtime=onnxruntime``), the rounds time plain
forwards of sessions opened once instead (:mod:`.ab_forwards`). The output folder holds
``a/`` and ``b/`` (run folders, as ``zoo.profile`` writes them) and ``compare.csv``, and
appears whole or not at all.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Optional, Sequence

import pandas as pd

from profiling.files import check_replaceable, check_writable, holds_files, write_folder
from profiling.reports import RunRecord, compare_paired_runs
from profiling.statistics import AB_MIN_CHANGE, AB_ROUNDS, machine_state, noise_report

from .ab_forwards import plain_rounds
from .ab_sides import ProfileJob, prepared_side
from .job_runner import JobResult, run_job, with_more_rounds
from .job_writer import write_job
from ..options import ConfigError
from .progress import ForwardProgress
from .resolvers import run_stamp

__all__ = ["run_ab", "AB_ROUNDS", "COMPARE_FILE", "default_compare_folder"]

#: The fewest rounds accepted: 10 rounds let the range of the ratios cover 99.8%, the
#: confidence that the Bonferroni correction asks of each of 25 rows.
MIN_ROUNDS = 10
#: The comparison table's file in the output folder.
COMPARE_FILE = "compare.csv"
_TIMERS = ("cpu_time", "cuda_time")


def default_compare_folder() -> Path:
    """``results/compare/STAMP``: a folder no other comparison uses."""
    return Path("results") / "compare" / run_stamp()


def run_ab(overrides: Sequence[str], out: Optional[Path] = None, *, rounds: int = AB_ROUNDS,
           overwrite: bool = False, min_change: float = AB_MIN_CHANGE
           ) -> tuple[pd.DataFrame, RunRecord, RunRecord, Path]:
    """Profile the two configurations ``overrides`` (``zoo.profile`` overrides, one string
    each) in alternation for ``rounds`` rounds, write ``out`` (default
    :func:`default_compare_folder`) and return the comparison table (significance with
    ``min_change``), both runs and the folder."""
    if len(overrides) != 2:
        raise ConfigError(f"--run takes two configurations (A and B), got {len(overrides)}")
    if rounds < MIN_ROUNDS:
        raise ConfigError(f"--rounds={rounds} is not accepted; accepted: an integer >= "
                          f"{MIN_ROUNDS} (with fewer, no interval over a dozen stages reaches "
                          f"its confidence)")
    out = Path(out) if out is not None else default_compare_folder()
    if holds_files(out) and not overwrite:
        raise ConfigError(f"{out} already holds files; choose another --out, or replace it "
                          f"whole with --overwrite")
    check_writable("--out", out)  # a file, a device or a read-only disk: before the work
    check_replaceable(out, overwrite, option="--overwrite")
    jobs = [prepared_side(text, side) for text, side in zip(overrides, "AB")]
    for job, side in zip(jobs, "AB"):
        if job.deployment.runtime == "torch" and not set(_TIMERS) & set(job.collectors):
            raise ConfigError(f"--run {side} measures no time (device={job.device.type}); an "
                              f"A/B comparison times forwards: use device=cpu or device=cuda")
    if any(job.deployment.runtime != "torch" for job in jobs):
        with ForwardProgress("A/B") as progress:
            results = plain_rounds(jobs, rounds, progress)
        return _write(jobs, results, out, overwrite, min_change)
    timers = [[c for c in job.collectors if c in _TIMERS] for job in jobs]
    with ForwardProgress("A/B") as progress:
        firsts = [run_job(job, repeats=1) for job in jobs]
        before = machine_state()
        more: list[list] = [[], []]
        for index in range(1, rounds):
            for side in ((1, 0) if index % 2 else (0, 1)):
                more[side].append(run_job(jobs[side], collectors=timers[side], warmup=0,
                                          repeats=1, trace=False))
            progress("rounds", index + 1, rounds)
        after = machine_state()
    results = []
    for first, extra in zip(firsts, more):
        forward_ms = [*first.profile.forward_ms,
                      *(ms for e in extra for ms in e.profile.forward_ms)]
        results.append(with_more_rounds(first, extra, noise_report(before, after, forward_ms)))
    return _write(jobs, results, out, overwrite, min_change)


def _write(jobs: Sequence[ProfileJob], results: Sequence[JobResult], out: Path, overwrite: bool,
           min_change: float) -> tuple[pd.DataFrame, RunRecord, RunRecord, Path]:
    out.absolute().parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".ab-", dir=out.absolute().parent) as staging:
        folders = [Path(staging) / side for side in "ab"]
        records = [write_job(job, result, folder).record
                   for job, result, folder in zip(jobs, results, folders)]
        table = compare_paired_runs(*records, min_change=min_change)
        files = {f"{folder.name}/{path.relative_to(folder)}": path.read_bytes()
                 for folder in folders for path in sorted(folder.rglob("*")) if path.is_file()}
        files[COMPARE_FILE] = table
        write_folder(out, files, overwrite=overwrite)
    for record, side in zip(records, "ab"):
        record.directory = out / side
    return table, records[0], records[1], out
