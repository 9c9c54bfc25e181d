"""Many runs as one table, and a failed run's folder.

A run folder holds the files of one profile (``stages.csv``, ``meta.json``, ...; read one with
:func:`~profiling.reports.record.read_run`). A run that failed holds ``error.json`` instead
(:func:`write_failure`): the error's type and one-line message, the traceback, the
command-line overrides and the resolved config. :func:`collect_runs` turns any set of run
folders, finished or failed, into one table with one row per stage call, which is what a
sweep's ``summary.csv`` is.
"""

from __future__ import annotations

import json
import re
import traceback
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from ..errors import ProfilingError
from ..files.writing import write_file
from .record import ERROR_FILE, META_FILE, RunRecord, read_run

__all__ = ["find_runs", "collect_runs", "write_failure", "flatten_config", "write_table",
           "forward_median", "noise_summary_cell", "swept_options", "TABLE_FORMATS"]

#: The table formats :func:`write_table` writes, by file extension.
TABLE_FORMATS = (".csv", ".parquet")

PathLike = Union[str, Path]


def write_failure(directory: PathLike, error: BaseException, *,
                  overrides: Sequence[str] = (), config: Optional[Mapping[str, Any]] = None
                  ) -> Path:
    """Leave ``error.json`` in ``directory`` describing a run that raised ``error``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    record = {
        "status": "failed",
        "error_type": type(error).__name__,
        "error": message,
        "traceback": "".join(traceback.format_exception(type(error), error,
                                                        error.__traceback__)),
        "overrides": list(overrides),
        "config": dict(config or {}),
    }
    path = directory / ERROR_FILE
    write_file(path, json.dumps(record, indent=2, default=str) + "\n")
    return path


def _natural_key(path: Path) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def find_runs(root: PathLike) -> list[Path]:
    """The run directories at or below ``root``, in natural order (``2_x`` before ``10_x``)."""
    root = Path(root)
    found = {p.parent for name in (META_FILE, ERROR_FILE) for p in root.rglob(name)}
    return sorted(found, key=lambda p: _natural_key(p.relative_to(root)))


def flatten_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"model": {"name": "x"}}`` -> ``{"model.name": "x"}``; lists become their JSON text."""
    flat = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_config(value, f"{name}."))
        else:
            flat[name] = json.dumps(value) if isinstance(value, (list, tuple)) else value
    return flat


def _option_columns(records: Sequence[RunRecord]) -> list[str]:
    """Override keys in order of appearance; without any, the config keys that differ."""
    keys: dict[str, None] = {}
    for record in records:
        keys.update(dict.fromkeys(record.overrides))
    if keys:
        return list(keys)
    flats = [flatten_config(r.config) for r in records if r.config]
    every = dict.fromkeys(k for flat in flats for k in flat)
    return [k for k in every if len({json.dumps(f.get(k), default=str) for f in flats}) > 1]


def swept_options(records: Sequence[RunRecord]) -> list[str]:
    """The options whose values differ between the finished and failed jobs of a sweep
    (an override every job was given alike, ``device=cpu``, is not swept)."""
    options = _option_columns(records)
    values = [_option_values(record, options) for record in records]
    return [option for option in options if len(records) < 2 or len(
        {json.dumps(v.get(option), default=str) for v in values}) > 1]


def _option_values(record: RunRecord, columns: Sequence[str]) -> dict[str, Any]:
    flat = flatten_config(record.config)
    return {c: record.overrides[c] if c in record.overrides else flat.get(c) for c in columns}


def forward_median(meta: Mapping[str, Any]) -> Optional[float]:
    """The median of ``meta.json``'s timed forwards, in ms (``None`` when none was timed)."""
    times = meta.get("forward_ms") or []
    return float(pd.Series(times, dtype=float).median()) if len(times) else None


def noise_summary_cell(meta: Mapping[str, Any]) -> str:
    """A job's noise in a few words for one cell: ``reliable (CV 1.2%)``, ``UNRELIABLE (CV
    105%, loaded)``, ``not timed``; the whole verdict is in its ``meta.json``."""
    from ..statistics.noise import loaded_reason, unreliable_reasons

    noise = meta.get("noise") or {}
    if not noise:
        return "not timed" if not meta.get("forward_ms") else "not recorded"
    cv = noise.get("forward_cv")
    parts = [f"CV {cv:.1%}"] if cv is not None else []
    if loaded_reason(noise):
        parts.append("loaded")
    verdict = "UNRELIABLE" if unreliable_reasons(noise) else "reliable"
    return f"{verdict} ({', '.join(parts)})" if parts else verdict


def collect_runs(directories: Iterable[PathLike], root: Optional[PathLike] = None, *,
                 broken: Optional[list[str]] = None) -> pd.DataFrame:
    """One table of every stage call of every run, failed runs as one row with their error.

    Columns: ``run`` (the directory, relative to ``root`` when given), ``status``, ``error``,
    then the runs' options (the overrides they were started with; when none was recorded, the
    config keys whose values differ between the runs), ``model``, ``device``, ``device_name``,
    ``parameters``, ``forward_ms_median``, ``forward_cv`` (the forward's coefficient of
    variation), ``noise`` (:func:`noise_summary_cell`), and the columns of ``stages.csv``.

    Args:
        broken: when given, a directory whose files cannot be read is left out and its problem
            appended here (one line each); otherwise it raises :class:`ProfilingError`.
    """
    records = []
    for directory in directories:
        try:
            records.append(read_run(directory))
        except ProfilingError as error:
            if broken is None:
                raise
            broken.append(str(error))
    options = _option_columns(records)
    frames = []
    for record in records:
        run = record.directory
        if root is not None:
            run = run.resolve().relative_to(Path(root).resolve())
        head = {"run": str(run), "status": record.status, "error": record.error,
                **_option_values(record, options),
                "model": (record.config.get("model") or {}).get("name"),
                "device": (record.config.get("device") or {}).get("name"),
                "device_name": record.meta.get("device_name"),
                "parameters": record.meta.get("parameters"),
                "forward_ms_median": forward_median(record.meta),
                "forward_cv": (record.meta.get("noise") or {}).get("forward_cv"),
                "noise": noise_summary_cell(record.meta) if record.status == "ok" else None}
        if record.stages.empty:
            frames.append(pd.DataFrame([head]))
        else:
            frames.append(pd.concat([pd.DataFrame([head] * len(record.stages)),
                                     record.stages.reset_index(drop=True)], axis=1))
    if not frames:
        return pd.DataFrame(columns=["run", "status", "error"])
    integers = {c for r in records for c, dtype in r.stages.dtypes.items() if dtype.kind in "iu"}
    table = pd.concat(frames, ignore_index=True)
    # A failed run's empty cells would otherwise turn the integer columns into floats.
    return table.astype({c: "Int64" for c in integers if c in table})


def write_table(table: pd.DataFrame, path: PathLike) -> Path:
    """Write ``table`` as CSV, or as parquet when ``path`` ends in ``.parquet``."""
    path = Path(path)
    if path.suffix.lower() not in TABLE_FORMATS:
        raise ProfilingError(f"cannot write a table as {path.name}: accepted extensions are "
                             f"{', '.join(TABLE_FORMATS)}")
    if path.is_dir():
        raise ProfilingError(f"{path} is a folder; give a file name ending in .csv or .parquet")
    content: Union[bytes, pd.DataFrame] = table
    if path.suffix.lower() == ".parquet":
        try:
            content = table.to_parquet(index=False)
        except ImportError as error:
            raise ProfilingError(f"writing parquet needs pyarrow or fastparquet ({error}); "
                                 f"install one, or write a .csv") from None
    write_file(path, content)  # whole or not at all
    return path
