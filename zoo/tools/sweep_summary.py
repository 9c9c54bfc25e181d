"""The Hydra callback that records failed sweep jobs and writes ``summary.csv`` after a sweep.

Registered in ``configs/profile.yaml`` under ``hydra.callbacks``. In a multirun:

- a job that raises (a size the model cannot take, an out-of-memory error) leaves
  ``error.json`` in its job directory and is reported to Hydra as finished, so the other jobs
  run and the sweep reaches its end, whatever the launcher (basic, joblib, submitit);
- at the end, ``summary.csv`` at the sweep's root holds every job's stages in one table, with
  the options of each job as columns and failed jobs as rows with their error (see
  :func:`profiling.reports.collect_runs`);
- a progress bar counts the finished jobs when stderr is a terminal.

With ``outcome_file``, the outcome (the summary's path, the runs, the failed ones) is written
there as JSON, so that ``python -m zoo.profile -m``, which gives that file, can exit non-zero
when a job failed: the outcome goes from the callback to the tool through a file the tool
owns, not through state of this module.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf


__all__ = ["SweepSummary", "SweepOutcome", "summarise_sweep", "read_outcome"]


@dataclass
class SweepOutcome:
    """A finished sweep: where its summary is, how many jobs ran and how many failed, and the
    summary's table."""

    summary: Path
    runs: int
    failed: int
    table: Any = field(default=None, repr=False)


def summarise_sweep(sweep_dir: Path, file_name: str = "summary.csv") -> SweepOutcome:
    """Write the summary table of the runs below ``sweep_dir`` and return the outcome."""
    from profiling.reports import collect_runs, find_runs, write_table

    table = collect_runs(find_runs(sweep_dir), root=sweep_dir)
    path = write_table(table, Path(sweep_dir) / file_name)
    runs = table.drop_duplicates("run") if len(table) else table
    return SweepOutcome(path, len(runs), int((runs.get("status") == "failed").sum())
                        if len(runs) else 0, table)


def read_outcome(path: Path) -> Optional[SweepOutcome]:
    """The outcome a :class:`SweepSummary` wrote to ``path`` (without its table), or ``None``
    when no sweep ended there."""
    if not Path(path).is_file() or not Path(path).read_text():
        return None
    fields = json.loads(Path(path).read_text())
    return SweepOutcome(Path(fields["summary"]), int(fields["runs"]), int(fields["failed"]))


def _job_count(config: DictConfig) -> Optional[int]:
    """How many jobs the basic sweeper will launch (``None`` for other sweepers)."""
    from .composition import command_line_overrides

    if "BasicSweeper" not in str(OmegaConf.select(config, "hydra.sweeper._target_")):
        return None
    return len(sweep_jobs(command_line_overrides(config.hydra.overrides.task)))


class _SweepProgress:
    """A tqdm bar over the finished jobs, polled from the sweep directory.

    Jobs run in other processes with the joblib and submitit launchers, so the bar counts the
    job directories that hold ``meta.json`` or ``error.json`` rather than relying on callbacks.
    """

    def __init__(self, sweep_dir: Path, total: Optional[int]) -> None:
        from tqdm.auto import tqdm

        from profiling.reports import find_runs
        self.sweep_dir = sweep_dir
        self.known = set(find_runs(sweep_dir)) if sweep_dir.is_dir() else set()
        self.bar = tqdm(total=total, desc="sweep", unit="run", file=sys.stderr)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stop.wait(0.5):
            self._update()

    def _update(self) -> None:
        from profiling.reports import find_runs

        if self.sweep_dir.is_dir():
            done = len(set(find_runs(self.sweep_dir)) - self.known)
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self._update()
        self.bar.close()


def _progress(config: DictConfig) -> Optional[_SweepProgress]:
    if not sys.stderr.isatty():
        return None
    try:
        return _SweepProgress(Path(config.hydra.sweep.dir), _job_count(config))
    except ImportError:  # tqdm is an optional dependency (the sweeps extra)
        return None


def sweep_jobs(overrides: Sequence[str]) -> list[list[str]]:
    """The overrides of each job that the basic sweeper launches for ``overrides``, in
    order."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return [list(job) for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def check_job_folders(overrides: Sequence[str]) -> None:
    """Refuse a sweep (the command line's ``overrides``) in which two jobs would write into
    one folder, a ``hydra.sweep.subdir`` that does not tell them apart, before anything
    starts: each job's folder is resolved as the basic launcher resolves it."""
    from omegaconf import open_dict

    from .composition import compose_config
    from ..options import ConfigError

    seen: dict[str, int] = {}
    for number, job in enumerate(sweep_jobs(overrides)):
        config = compose_config(job, hydra=True)
        with open_dict(config):
            config.hydra.job.id = number
            config.hydra.job.num = number
        folder = str(OmegaConf.select(config, "hydra.sweep.subdir"))
        if folder in seen:
            raise ConfigError(
                f"hydra.sweep.subdir={config.hydra.sweep.subdir} gives jobs {seen[folder]} "
                f"and {number} the same folder '{folder}'; include ${{hydra.job.num}} or "
                f"${{hydra.job.override_dirname}} in it")
        seen[folder] = number


class SweepSummary(Callback):
    """Record failed jobs, and write the sweep's summary table when the multirun ends.

    Args:
        file_name: the summary's name at the sweep root (``.csv`` or ``.parquet``).
        progress: show a progress bar over the jobs (only when stderr is a terminal).
        outcome_file: where to write the outcome as JSON (:func:`read_outcome` reads it back);
            ``None``: nowhere.
    """

    def __init__(self, file_name: str = "summary.csv", progress: bool = True,
                 outcome_file: Optional[str] = None) -> None:
        self.file_name = file_name
        self.progress = progress
        self.outcome_file = outcome_file
        self._bar: Optional[_SweepProgress] = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from profiling.files import mark_folder

        mark_folder(config.hydra.sweep.dir)  # run.overwrite may replace this sweep later
        self._bar = _progress(config) if self.progress else None

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        """Leave ``error.json`` for a failed job of a multirun and let the sweep go on."""
        if config.hydra.mode != RunMode.MULTIRUN or job_return.status != JobStatus.FAILED:
            return
        from profiling.reports import write_failure

        from .composition import command_line_overrides

        error = job_return._return_value
        task = {k: v for k, v in OmegaConf.to_container(config, resolve=False).items()
                if k != "hydra"}
        write_failure(config.hydra.runtime.output_dir, error,
                      overrides=command_line_overrides(config.hydra.overrides.task),
                      config=_resolved(task))
        job_return.status = JobStatus.COMPLETED
        job_return.return_value = {"status": "failed", "error": f"{type(error).__name__}: "
                                                                f"{error}"}

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        outcome = summarise_sweep(Path(config.hydra.sweep.dir), self.file_name)
        from .sweep_table import format_sweep_table

        print("\n".join(format_sweep_table(outcome.table)))
        failed = f", {outcome.failed} failed" if outcome.failed else ""
        print(f"sweep summary: {outcome.summary.resolve()} ({outcome.runs} runs{failed})")
        if self.outcome_file:
            Path(self.outcome_file).write_text(json.dumps(
                {"summary": str(outcome.summary), "runs": outcome.runs,
                 "failed": outcome.failed}))


def _resolved(task: dict) -> dict:
    """The job's config with interpolations resolved where they can be (best effort)."""
    try:
        return OmegaConf.to_container(OmegaConf.create(task), resolve=True)
    except Exception:  # noqa: BLE001  (an unresolvable value must not hide the job's error)
        return task
