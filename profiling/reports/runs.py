"""Run directories as data: read one, record a failed one, gather many into one table.

A run directory holds the files of one profile (``stages.csv``, ``meta.json``, ...). A run that
failed holds ``error.json`` instead: the error's type and one-line message, the traceback, the
command-line overrides and the resolved config. :func:`collect_runs` turns any set of run
directories, finished or failed, into one table with one row per stage call, which is what a
sweep's ``summary.csv`` is.
"""

from __future__ import annotations

import json
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from ..errors import ProfilingError
from .files import write_file
from .structured_files import read_json, read_table

__all__ = ["RunRecord", "read_run", "find_runs", "collect_runs", "write_failure",
           "flatten_config", "parse_overrides", "write_table", "forward_median", "ERROR_FILE",
           "META_FILE", "STAGES_FILE", "TABLE_FORMATS", "RENAMED_COLUMNS"]

#: The file a failed run leaves in its directory.
ERROR_FILE = "error.json"
#: The files every finished run holds (see :mod:`profiling.reports.run_folder`).
META_FILE, STAGES_FILE = "meta.json", "stages.csv"
#: The table formats :func:`write_table` writes, by file extension.
TABLE_FORMATS = (".csv", ".parquet")

#: Columns of run folders written by older versions, and their names now: the memory columns
#: are named after what they count (tensor storages on any tracked device, the CUDA allocator).
RENAMED_COLUMNS = {"cpu_mem_alloc_mb": "tensor_retained_mb", "cpu_mem_peak_mb": "tensor_peak_mb",
                   "cuda_mem_alloc_mb": "cuda_retained_mb", "cuda_mem_peak_mb": "cuda_peak_mb"}

PathLike = Union[str, Path]


@dataclass
class RunRecord:
    """What one run directory holds.

    Attributes:
        directory: the run directory.
        status: ``"ok"`` or ``"failed"``.
        config: the resolved config (``meta.json`` or ``error.json``), or ``{}``.
        overrides: the command-line overrides of the run, ``{key: value}`` as typed.
        error: ``"Type: message"`` of a failed run, else ``""``.
        meta: the whole ``meta.json`` (``{}`` for a failed run).
        stages: the ``stages.csv`` table (empty for a failed run).
    """

    directory: Path
    status: str
    config: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)
    error: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    stages: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def metrics(self) -> list:
        """The run's metrics as its collectors declared them (``meta.json``'s ``metrics``,
        :class:`~profiling.collectors.Metric`); for a folder of an older version, the
        registered collectors' metrics whose columns its stage table holds."""
        from ..collectors import declared_metrics, metric_from_dict, registered_collectors

        if "metrics" in self.meta:
            return [metric_from_dict(data) for data in self.meta["metrics"]]
        return [metric for metric in declared_metrics(registered_collectors().values())
                if metric.column in self.stages.columns]


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """``["model=gmflow", "input.size=[384,512]"]`` -> ``{"model": "gmflow", ...}``.

    Deletions (``~key``) are left out; a leading ``+``/``++`` is dropped from the key.
    """
    parsed = {}
    for text in overrides:
        key, separator, value = str(text).partition("=")
        if separator and not key.startswith("~"):
            parsed[key.lstrip("+")] = value
    return parsed


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


def read_run(directory: PathLike) -> RunRecord:
    """Read a run directory (finished: ``meta.json`` and ``stages.csv``; failed: ``error.json``).

    Raises:
        ProfilingError: when the directory holds neither.
    """
    directory = Path(directory)
    meta_path, error_path = directory / META_FILE, directory / ERROR_FILE
    if meta_path.is_file() and (directory / STAGES_FILE).is_file():
        meta = _read_json(meta_path)
        return RunRecord(directory, "ok", meta.get("config") or {},
                         parse_overrides(meta.get("overrides") or []), "", meta,
                         _read_stages(directory / STAGES_FILE))
    if error_path.is_file():
        failure = _read_json(error_path)
        error = f"{failure.get('error_type', 'Error')}: {failure.get('error', '')}"
        return RunRecord(directory, "failed", failure.get("config") or {},
                         parse_overrides(failure.get("overrides") or []), error)
    for present, absent in ((META_FILE, STAGES_FILE), (STAGES_FILE, META_FILE)):
        if (directory / present).is_file():
            raise ProfilingError(f"{directory / absent} is missing: the run folder is partial "
                                 f"(it holds {present} without {absent})")
    raise ProfilingError(f"{directory} is not a run directory: it holds neither {META_FILE} "
                         f"with {STAGES_FILE} nor {ERROR_FILE}")


#: The type each field of ``meta.json`` / ``error.json`` that the tools read must have.
_FIELD_TYPES = {"config": (dict, "a mapping"), "overrides": (list, "a list"),
                "forward_ms": (list, "a list of numbers"), "notes": (list, "a list"),
                "noise": (dict, "a mapping"), "totals": (dict, "a mapping"),
                "parameters": (int, "an integer"), "device_name": (str, "a text"),
                "error": (str, "a text"), "error_type": (str, "a text")}
#: Columns of ``stages.csv`` and ``times.csv`` that hold numbers.
_NUMBERS = re.compile(r"^(depth|call_index|order|repeat|macs|flops|activations)$|"
                      r"_(bytes|mb|ms|mean|median|p10|p90|std|low|high|read|written)$")


def holds_numbers(column: str) -> bool:
    """Whether a column of a run's tables holds numbers (counts, bytes, times, memory)."""
    return bool(_NUMBERS.search(column))


def _read_json(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise ProfilingError(f"{path} is broken: it holds no JSON object")
    for name, (kind, words) in _FIELD_TYPES.items():
        value = data.get(name)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool) or (
                name == "forward_ms" and not all(isinstance(v, (int, float)) and not
                                                 isinstance(v, bool) for v in value))):
            raise ProfilingError(f"{path} is broken: '{name}' must be {words}, got "
                                 f"{type(value).__name__} {json.dumps(value)[:40]}")
    return data


def _read_stages(path: Path) -> pd.DataFrame:
    stages = read_table(path, required=("stage",), numeric=holds_numbers)
    if stages.empty:
        raise ProfilingError(f"{path} is broken: it holds no stage rows")
    return stages.rename(columns=RENAMED_COLUMNS)


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


def _option_values(record: RunRecord, columns: Sequence[str]) -> dict[str, Any]:
    flat = flatten_config(record.config)
    return {c: record.overrides[c] if c in record.overrides else flat.get(c) for c in columns}


def forward_median(meta: Mapping[str, Any]) -> Optional[float]:
    """The median of ``meta.json``'s timed forwards, in ms (``None`` when none was timed)."""
    times = meta.get("forward_ms") or []
    return float(pd.Series(times, dtype=float).median()) if len(times) else None


def collect_runs(directories: Iterable[PathLike], root: Optional[PathLike] = None, *,
                 broken: Optional[list[str]] = None) -> pd.DataFrame:
    """One table of every stage call of every run, failed runs as one row with their error.

    Columns: ``run`` (the directory, relative to ``root`` when given), ``status``, ``error``,
    then the runs' options (the overrides they were started with; when none was recorded, the
    config keys whose values differ between the runs), ``model``, ``device``, ``device_name``,
    ``parameters``, ``forward_ms_median``, and the columns of ``stages.csv``.

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
                "forward_ms_median": forward_median(record.meta)}
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
