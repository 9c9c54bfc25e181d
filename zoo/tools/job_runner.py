"""A described job run: the profile (in PyTorch or in the job's runtime), the trace when
asked for, and everything the run folder and the summary say, returned as one
:class:`JobResult` that the writer and the printer read (they run no forward and ask the
model nothing)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional, Sequence, Union

import torch

from profiling import add_context
from profiling.reports import TRACE_FILE, RunTotals, run_totals
from profiling.runner import ProfileResult, profile_model, with_more_repeats
from profiling.stages import iter_tensors
from profiling.statistics import AutoRepeats

from ..deploy import profile_in_runtime
from .device import torch_threads
from .job_description import ProfileJob

__all__ = ["JobResult", "run_job", "with_more_rounds"]


@dataclass(frozen=True)
class JobResult:
    """What one run of a :class:`~zoo.tools.job_description.ProfileJob` gave.

    Attributes:
        profile: the stage-by-stage measurements.
        model: the profiled model (the run folder's layer and module tables list its modules).
        totals: the whole forward (time, parameters, counts, input and output bytes), for the
            summary's total row.
        notes: the job's notes, then the runtime's and the deployment's.
        deployed: ``meta.json``'s ``deployment`` entry (options, compiler and runtime facts).
        files: the run folder's files beside the reports: the runtime's exported models, the
            trace (``trace=true``).
        runtime: the :class:`profiling.runtimes.RuntimeProfile` of a runtime run (its model
            in memory, for ``zoo.compare --run`` to open its session again); ``None`` in
            PyTorch.
    """

    profile: ProfileResult
    model: torch.nn.Module
    totals: RunTotals
    notes: tuple[str, ...] = ()
    deployed: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, Any] = field(default_factory=dict)
    runtime: Any = None


def run_job(job: ProfileJob, *, collectors: Optional[Sequence[str]] = None,
            warmup: Optional[int] = None, repeats: Optional[Union[int, AutoRepeats]] = None,
            progress: Any = None, trace: Optional[bool] = None) -> JobResult:
    """Profile ``job``'s model (in its runtime), with the job's options unless given here,
    and trace one more forward when ``trace`` (by default the config's ``trace``) asks."""
    cfg, deployment, device, model = job.cfg, job.deployment, job.device, job.model
    options = {"collectors": list(job.collectors if collectors is None else collectors),
               "warmup": job.warmup if warmup is None else warmup,
               "repeats": job.repeats if repeats is None else repeats,
               "attach": job.attach, "progress": progress}
    notes, files, deployed = list(job.notes), {}, deployment.metadata(model)
    profiled = None
    try:
        with torch_threads(job.threads), deployment.running(device, str(cfg.model.name)), \
                deployment.byte_view(device, model):
            if deployment.runtime != "torch":
                profiled, runtime_notes, files = profile_in_runtime(
                    cfg, deployment, model, job.inputs, **options)
                notes += runtime_notes
                deployed.update(profiled.deployment)
                result = profiled.result
            else:
                result = profile_model(model, job.inputs, **options,
                                       timed_model=deployment.timed_model(model))
                # the compiler's graph counts exist only once the warm-up has compiled
                deployed = deployment.metadata(model)
            if cfg.get("trace", False) if trace is None else trace:
                from profiling.trace import trace_forward

                files = {**files, TRACE_FILE: trace_forward(model, job.inputs,
                                                            attach=job.attach)}
    except BaseException as error:
        add_context(error, "input " + " + ".join(
            "x".join(map(str, t.shape)) for t in iter_tensors(job.inputs)))
        raise
    notes += deployment.notes(model, device)
    return JobResult(result, model, run_totals(result, model, job.inputs), tuple(notes),
                     deployed, files, profiled)


def with_more_rounds(first: JobResult, more: Sequence[JobResult],
                     noise: Mapping[str, Any]) -> JobResult:
    """``first`` with the timed forwards of ``more`` (runs of the same job, timers only) as
    further repeats (:func:`profiling.runner.with_more_repeats`), and ``noise`` as the noise
    of them all."""
    profile = with_more_repeats(first.profile, [m.profile for m in more], dict(noise))
    return replace(first, profile=profile,
                   totals=replace(first.totals, forward_ms=list(profile.forward_ms)))
