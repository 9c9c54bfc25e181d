"""The run folder of a job's result: its files made from the :class:`JobResult` and the
job's description alone (no forward runs here), written all together."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from profiling.files import write_folder
from profiling.reports import RunRecord, run_files
from profiling.runner import ProfileResult

from ..deploy import TF32_NOTE, roofline_dtype
from .composition import command_line_overrides
from .device import ceilings_reference, torch_threads
from .job_description import ProfileJob
from .job_runner import JobResult

__all__ = ["RunFolder", "job_files", "write_job"]


@dataclass
class RunFolder:
    """The run folder a job wrote: where it is, its files, the result they were written from,
    notes on what was done, and the record the files hold (what
    :func:`profiling.reports.read_run` reads back)."""

    result: ProfileResult
    run_dir: Path
    files: list[Path]
    notes: list[str] = field(default_factory=list)
    record: Optional[RunRecord] = None


def job_files(job: ProfileJob, result: JobResult, run_dir: Union[str, Path]
              ) -> tuple[dict[str, Any], RunRecord]:
    """The files of the run folder of ``job``'s ``result`` (the trace among them when the
    run traced one), and the record they hold, for ``run_dir``; nothing is written."""
    cfg, device = job.cfg, job.device
    notes = list(result.notes)
    dtype = roofline_dtype(cfg, device.type)
    if dtype == "tf32" and (cfg.get("roofline") or {}).get("dtype") is None:
        notes.append(TF32_NOTE)
    ceilings = job.ceilings
    files, record = run_files(
        result.profile, result.model, config=OmegaConf.to_container(cfg, resolve=True),
        notes=notes, ceilings=ceilings, roofline_dtype=dtype, plots=bool(cfg.get("plots")),
        report=bool(cfg.get("report")),
        ceilings_source=(ceilings_reference(cfg.get("roofline"), ceilings)
                         if ceilings is not None else None),
        metadata={"device": str(device), "overrides": _job_overrides(),
                  "options": _changed_options(cfg),
                  "checkpoint": getattr(result.model, "checkpoint_file", None),
                  "deployment": dict(result.deployed)}, directory=run_dir)
    files.update(result.files)
    return files, record


def write_job(job: ProfileJob, result: JobResult, run_dir: Union[str, Path]) -> RunFolder:
    """Write the run folder of ``job``'s ``result`` into ``run_dir`` (all files together, see
    :func:`profiling.files.write_folder`)."""
    with torch_threads(job.threads):  # meta.json's cpu_threads: the run's
        files, record = job_files(job, result, run_dir)
    run_dir = Path(run_dir)
    paths = write_folder(run_dir, files, overwrite=bool(job.cfg.run.get("overwrite", False)))
    return RunFolder(result.profile, run_dir, paths, record.notes, record)


def _changed_options(cfg: DictConfig) -> list[str]:
    """The options of the Hydra job running now that differ from the defaults, as the run's
    page lists them (``model=faster_rcnn`` is left out where it is the default)."""
    overrides = _job_overrides()
    if not overrides:
        return []
    from .changed_options import changed_options

    search = list(HydraConfig.get().searchpath)  # Hydra keeps hydra.* apart from the task's
    if search:
        overrides = [f"hydra.searchpath=[{','.join(search)}]", *overrides]
    return changed_options(overrides, cfg)


def _job_overrides() -> list[str]:
    """The command-line overrides of the Hydra job running now (``[]`` outside Hydra)."""
    return command_line_overrides(HydraConfig.get().overrides.task) \
        if HydraConfig.initialized() else []
