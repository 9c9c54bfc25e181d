"""What a profile prints on the terminal: its summary table, notes and files, read from the
run's result and the folder written from it."""

from __future__ import annotations

import textwrap

from profiling.reports import format_summary
from profiling.statistics import noise_line

from ..deploy import runtime_coverage_hint
from .job_runner import JobResult
from .job_writer import RunFolder

__all__ = ["summary_lines", "COVERAGE_HINT"]

#: What the coverage line suggests when too little of the forward is in named stages.
COVERAGE_HINT = ("name more with model.stage_paths=[a.b,c] or model.stage_depth=N "
                 "(docs/inputs.md)")


def summary_lines(result: JobResult, folder: RunFolder) -> list[str]:
    """The summary of a written run: the stage table with its total row, the notes, the
    uncounted operators, the folder and its files, and the noise line when there is one."""
    record, profile = folder.record, result.profile
    lines = [format_summary(record.stages, times=record.times, metrics=record.metrics,
                            totals=result.totals, coverage=record.meta.get("coverage"),
                            meta=record.meta,
                            coverage_hint=runtime_coverage_hint(dict(result.deployed))
                            or COVERAGE_HINT)]
    lines += [f"note: {note}" for note in record.notes]
    if profile.uncounted:
        lines.append(f"note: no FLOP formula for {len(profile.uncounted)} operator(s), listed "
                     f"in meta.json under uncounted_ops: {', '.join(sorted(profile.uncounted))}")
    lines.append(f"run directory: {folder.run_dir.resolve()}")
    lines.append(textwrap.fill("files written: " + ", ".join(
        str(path.relative_to(folder.run_dir)) for path in folder.files), 119,
        subsequent_indent="  ", break_on_hyphens=False))
    if noise_line(profile.noise):
        lines.append(noise_line(profile.noise))
    return lines
