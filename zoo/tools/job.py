"""The profile job behind ``python -m zoo.profile``, callable from Python and tests: the
config described as a frozen job (:mod:`.job_description`), run into a result
(:mod:`.job_runner`), written (:mod:`.job_writer`) and printed (:mod:`.job_printer`), in that
order, each reading only what the step before it returned."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from omegaconf import DictConfig

from .job_description import prepare_job
from .job_printer import summary_lines
from .job_runner import run_job
from .job_writer import RunFolder, write_job
from .progress import ForwardProgress

__all__ = ["run_profile"]


def run_profile(cfg: DictConfig, run_dir: Union[str, Path], *,
                print_summary: Optional[bool] = None, checked: bool = False) -> RunFolder:
    """Build the model, profile it, write the run's files into ``run_dir`` and print the
    summary (unless ``summary=false`` or ``print_summary=False``).

    Every input is checked before anything is written (unless ``checked``: see
    :func:`~zoo.tools.job_description.prepare_job`); the files appear all together at the end
    (see :func:`profiling.files.write_folder`).
    """
    job = prepare_job(cfg, checked=checked)
    printing = print_summary if print_summary is not None else bool(cfg.get("summary", True))
    if printing:
        for warning in job.deployment.warnings(job.device):
            print(f"note: {warning}", flush=True)
    with ForwardProgress(str(cfg.model.name)) as progress:
        result = run_job(job, progress=progress)
    folder = write_job(job, result, run_dir)
    if printing:
        print("\n".join(summary_lines(result, folder)))
    return folder
