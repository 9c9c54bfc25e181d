"""The profile job behind ``python -m zoo.profile``, callable from Python and tests: the
config described as a frozen job (:mod:`.job_description`), run into a result
(:mod:`.job_runner`), written (:mod:`.job_writer`) and printed (:mod:`.job_printer`), in that
order, each reading only what the step before it returned."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

from omegaconf import DictConfig

from ..options import ConfigError
from .job_description import prepare_job
from .job_printer import summary_lines
from .job_runner import JobResult, run_job
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
    try:
        job = prepare_job(cfg, checked=checked)
        printing = print_summary if print_summary is not None else bool(cfg.get("summary", True))
        if printing:
            for warning in job.deployment.warnings(job.device):
                print(f"note: {warning}", flush=True)
        with ForwardProgress(str(cfg.model.name)) as progress:
            result = run_job(job, progress=progress)
        _check_counts_fit(result)
    except (MemoryError, RuntimeError) as error:
        from .cli import allocation_tried, is_out_of_memory

        if str(cfg.device.get("name")) == "meta" and is_out_of_memory(error):
            # nothing is computed on meta: the options asked for it (a builder makes its
            # weights before they move to meta: model.num_classes=1e9 asked torch for 8 TB)
            tried = allocation_tried(error) or "more than there is"
            raise ConfigError(f"device=meta: with these options torch ran out of memory (it "
                              f"tried to allocate {tried}); {_SMALLER}") from None
        raise
    folder = write_job(job, result, run_dir)
    if printing:
        print("\n".join(summary_lines(result, folder)))
    return folder


#: The largest count a table holds (a 64-bit integer).
LARGEST_COUNT = 2 ** 63 - 1
_SMALLER = "give a smaller model.num_classes, input.batch or input.size"


def _check_counts_fit(result: JobResult) -> None:
    """Refuse counts past :data:`LARGEST_COUNT` before anything is written: only sizes no
    machine runs make them (``input.batch=3e11`` on the meta device), and no table holds them
    (pandas raised ``OverflowError`` or ``TypeError`` deep inside the module table)."""
    counter = result.profile.collectors.get("op_counts")
    counts = dict(counter.total.as_dict()) if counter is not None else {}
    for column in ("in_bytes", "out_bytes"):
        values = [v for v in result.profile.stages.get(column, ()) if isinstance(v, (int, float))]
        counts[column] = max(values, default=0)
    for name, value in counts.items():
        if value > LARGEST_COUNT:
            raise ConfigError(f"with these options the {name} reach {float(value):.3g}, past "
                              f"2**63 - 1, the largest count a table holds; {_SMALLER}")
