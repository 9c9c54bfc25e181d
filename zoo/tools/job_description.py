"""A profile job described: every option checked, the model and its inputs built, nothing run.

:class:`ProfileJob` is frozen: the runner (:mod:`.job_runner`) reads it and returns a result,
and the writer and the printer read that result; nothing is gathered into the job as it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

import torch
from omegaconf import DictConfig

from profiling.counting import Ceilings
from profiling.runner import check_run_options
from profiling.statistics import AutoRepeats

from ..deploy import Deployment
from ..options import ConfigError
from .composition import check_composed
from .device import device_ceilings, resolve_device
from .extras import check_plot_support, check_report_support
from .job_inputs import prepare

__all__ = ["ProfileJob", "prepare_job", "run_repeats"]


@dataclass(frozen=True)
class ProfileJob:
    """A run checked and built, ready to profile: the composed config, the device, the
    deployed model with its inputs and attached stages, the notes of building it, and the
    profile's options (``zoo.compare --run A --run B`` runs two jobs in alternation, each
    with other options per call: :func:`~zoo.tools.job_runner.run_job`)."""

    cfg: DictConfig
    device: torch.device
    model: torch.nn.Module
    inputs: tuple[Any, ...]
    attach: dict[str, str]
    notes: tuple[str, ...]
    deployment: Deployment
    collectors: tuple[str, ...]
    warmup: int
    repeats: Union[int, AutoRepeats]
    ceilings: Optional[Ceilings]
    threads: Optional[int] = None


def run_repeats(run: Any) -> Union[int, AutoRepeats]:
    """``run.repeats`` as :func:`~profiling.runner.profile_model` takes it: a count, or for
    ``auto`` the stopping rule made of ``run.target_ci``, ``run.max_time_s`` and
    ``run.min_repeats``."""
    if run.repeats == "auto":
        return AutoRepeats(target_ci=float(run.get("target_ci", 0.02)),
                           max_time_s=float(run.get("max_time_s", 60.0)),
                           min_repeats=int(run.get("min_repeats", 5)))
    return int(run.repeats)


def prepare_job(cfg: DictConfig, *, checked: bool = False) -> ProfileJob:
    """Check every option of ``cfg``, then build the model and its inputs (nothing written).

    ``checked``: ``cfg`` was checked already (:func:`~zoo.tools.composition.checked_config`, or
    the command line before Hydra composed it again), and is not checked twice."""
    if not checked:
        check_composed(cfg)
    device = resolve_device(cfg.device)
    repeats, warmup = run_repeats(cfg.run), int(cfg.run.warmup)
    check_run_options(warmup, repeats)  # before the model is built: fail fast
    collectors = tuple(str(name) for name in cfg.get("collectors") or cfg.device.collectors)
    if cfg.get("report"):
        check_report_support()  # before the profile: a missing plotly fails at once
    ceilings = device_ceilings(cfg.get("roofline"), device)  # a bad file fails before
    if cfg.get("plots"):
        check_plot_support()
    deployment = Deployment.from_config(cfg.run)
    if cfg.get("trace") and deployment.runtime != "torch":  # whether or not it is installed
        raise ConfigError(f"trace=true traces the PyTorch forward with torch.profiler and "
                          f"run.runtime={deployment.runtime} runs the exported model; drop "
                          f"trace=true (stages.csv has the runtime's own node times per stage) "
                          f"or use run.runtime=torch")
    deployment.check(device, timed=bool({"cpu_time", "cuda_time"} & set(collectors)),
                     warmup=warmup)
    model, inputs, attach, notes = prepare(cfg, device, deployment)
    return ProfileJob(cfg, device, model, inputs, attach, tuple(notes), deployment, collectors,
                      warmup, repeats, ceilings, threads=cfg.run.get("threads"))
