"""``zoo.compare --run`` when a side runs in an inference runtime: plain forwards, one per side
and round, in alternation.

A runtime side is exported (and quantised) once, by its first, profiled run; its session is
then opened once more with the runtime's profiler off and kept open across the rounds, so no
round times a cold session or the profiler. The PyTorch side runs its model as deployed (no
hooks) under the same autocast and thread settings as its profiled run. Each round times one
forward of each side, the order rotated round by round
(:func:`profiling.statistics.interleaved_ms`); the forward row of the comparison is the
paired ratio of these, the stage rows come from each side's one profiled forward.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence

import torch

from profiling import ProfilingError
from profiling.statistics import interleaved_ms, machine_state, noise_report

from ..deploy import EXPORT_FOLDER
from .device import torch_threads
from .job_description import ProfileJob
from .job_runner import JobResult, run_job

__all__ = ["plain_rounds", "PLAIN_TIMING"]

#: What ``meta.json``'s ``deployment.ab_timing`` says of each side's times.
PLAIN_TIMING = ("forward_ms: one plain forward per round (no hooks; a runtime's profiler off, "
                "its session opened once), both sides in alternation; stage times: the first, "
                "profiled forward")


def plain_rounds(jobs: Sequence[ProfileJob], rounds: int,
                 progress: Callable[[str, int, int], None]) -> list[JobResult]:
    """Each job profiled once, then timed in ``rounds`` interleaved rounds of plain forwards:
    the profiled results with those times as their forward times and noise."""
    firsts = [run_job(job, repeats=1) for job in jobs]
    with tempfile.TemporaryDirectory(prefix="stagezoo-ab-") as folder:
        timers = [_timer(job, first, Path(folder) / side)
                  for job, first, side in zip(jobs, firsts, "ab")]
        before = machine_state()
        times = interleaved_ms(timers, rounds,
                               progress=lambda done, total: progress("rounds", done, total))
        after = machine_state()
    return [_with_forwards(first, ms, noise_report(before, after, ms))
            for first, ms in zip(firsts, times)]


def _with_forwards(first: JobResult, forward_ms: list[float], noise: dict) -> JobResult:
    profile = replace(first.profile, forward_ms=list(forward_ms), noise=dict(noise))
    deployed = {**first.deployed, "ab_timing": PLAIN_TIMING}
    if first.runtime is not None:
        from profiling.runtimes import interleaved_settings

        deployed["ab_session_settings"] = interleaved_settings(deployed["runtime"])
    return replace(first, profile=profile, totals=replace(first.totals, forward_ms=forward_ms),
                   deployed=deployed)


def _timer(job: ProfileJob, first: JobResult, folder: Path) -> Callable[[], float]:
    if first.runtime is None:
        return _torch_timer(job)
    return _runtime_timer(job, first, folder)


def _torch_timer(job: ProfileJob) -> Callable[[], float]:
    """One forward of the job's model as deployed (compiled where it is), in ms."""
    model = job.deployment.timed_model(job.model) or job.model
    cuda = job.device.type == "cuda"
    name = str(job.cfg.model.name)

    def timed() -> float:
        with torch_threads(job.threads), job.deployment.running(job.device, name), \
                torch.inference_mode():
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter_ns()
            model(*job.inputs)
            if cuda:
                torch.cuda.synchronize()
            return (time.perf_counter_ns() - start) / 1e6
    return timed


def _runtime_timer(job: ProfileJob, first: JobResult, folder: Path) -> Callable[[], float]:
    """One forward of the file the runtime ran (or the quantiser's model), its profiler off,
    in a session opened here once, with the settings of sessions that take turns (which the
    side's ``meta.json`` records)."""
    from profiling.runtimes import forward_timer, make_backend, tensor_feeds  # (the extra)

    profiled, runtime = first.runtime, job.deployment.runtime
    if profiled.exported is None:
        raise ProfilingError(f"{job.cfg.model.name} runs in {runtime} only in parts (the rest "
                             f"in PyTorch); zoo.compare --run times a model the runtime runs "
                             f"whole: compare the two run folders of zoo.profile instead")
    folder.mkdir(parents=True)
    path = folder / profiled.run_file.name
    path.write_bytes(first.files[f"{EXPORT_FOLDER}/{profiled.run_file.name}"])
    backend = make_backend(runtime, path, folder, job.device.type, False,
                           profiled.quantised_model, dtype=job.deployment.dtype,
                           interleaved=True)
    return forward_timer(backend, tensor_feeds(job.inputs))
