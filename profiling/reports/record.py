"""The record of a run: what every report, plot, comparison and writer reads.

A :class:`RunRecord` is one view of a run, made in either of two ways that give the same view:

* from a :class:`~profiling.runner.ProfileResult` in memory, by :func:`run_record` (what
  :func:`~profiling.reports.write_run` then writes as the run folder);
* from a run folder on disk, by :func:`read_run` (finished: ``meta.json``, ``stages.csv`` and,
  when there, ``times.csv`` and ``layers.csv``; failed: ``error.json``).

The record carries its tables as data (the stage table, every timed repeat, the torchstat
layer table), so that no report reads a file of its own: comparing two results in memory and
comparing their folders is one code path (:func:`as_record` takes either).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from ..errors import ProfilingError
from ..files.reading import read_table
from .meta_file import read_meta_file

if TYPE_CHECKING:
    import torch

    from ..counting.roofline import Ceilings
    from ..runner.passes import ProfileResult

__all__ = ["RunRecord", "Run", "run_record", "read_run", "as_record", "read_times",
           "parse_overrides", "holds_numbers", "ERROR_FILE", "META_FILE", "STAGES_FILE",
           "TIMES_FILE", "LAYERS_FILE", "OPERATORS_FILE", "RENAMED_COLUMNS"]

#: The file a failed run leaves in its directory.
ERROR_FILE = "error.json"
#: The files every finished run holds (see :mod:`profiling.reports.run_folder`).
META_FILE, STAGES_FILE = "meta.json", "stages.csv"
#: The file that holds every timed repeat (when the run was timed).
TIMES_FILE = "times.csv"
#: The torchstat-compatible layer table (when the run counted operations).
LAYERS_FILE = "layers.csv"
#: Each stage call's operator breakdown (when the run counted operations, or a runtime
#: reported its nodes' times).
OPERATORS_FILE = "operators.csv"
#: The columns that hold text: of the stage table (the roofline's ``bound`` too), of
#: ``times.csv`` and of the layer table. Their producers write an empty text for none, and an
#: empty cell reads back as one, even in a column that is empty throughout.
_STAGE_TEXT = ("stage", "kind", "parent", "in_shapes", "out_shapes", "bound")
_LAYER_TEXT = ("module name", "input shape", "output shape")
_OPERATOR_TEXT = ("stage", "operator")

#: Columns of run folders written by older versions, and their names now: the memory columns
#: are named after what they count (tensor storages on any tracked device, the CUDA allocator).
RENAMED_COLUMNS = {"cpu_mem_alloc_mb": "tensor_retained_mb", "cpu_mem_peak_mb": "tensor_peak_mb",
                   "cuda_mem_alloc_mb": "cuda_retained_mb", "cuda_mem_peak_mb": "cuda_peak_mb"}

PathLike = Union[str, Path]


@dataclass
class RunRecord:
    """One run as the reports read it, made in memory (:func:`run_record`) or read back from
    its folder (:func:`read_run`).

    Attributes:
        directory: the run folder; ``None`` for a record of a result in memory.
        status: ``"ok"`` or ``"failed"``.
        config: the resolved config (``meta.json`` or ``error.json``), or ``{}``.
        overrides: the command-line overrides of the run, ``{key: value}`` as typed.
        error: ``"Type: message"`` of a failed run, else ``""``.
        meta: the whole ``meta.json`` (``{}`` for a failed run), as JSON gives it back.
        stages: the stage table, ``stages.csv`` (empty for a failed run).
        times: every timed repeat, ``times.csv`` (``None`` when the run was not timed).
        layers: the torchstat layer table, ``layers.csv`` (``None`` when operations were not
            counted, or the model was not given).
        ceilings: the device ceilings of the roofline (those the run was given, or those
            that ``meta.json`` names, when they can be loaded; else ``None``).
        operators: each stage call's operator breakdown, ``operators.csv`` (``stage``,
            ``call_index``, ``operator``, and the op counter's counts or a runtime's
            ``time_ms``), or ``None``.
    """

    directory: Optional[Path]
    status: str
    config: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)
    error: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    stages: pd.DataFrame = field(default_factory=pd.DataFrame)
    times: Optional[pd.DataFrame] = None
    layers: Optional[pd.DataFrame] = None
    ceilings: Optional["Ceilings"] = None
    operators: Optional[pd.DataFrame] = None

    @property
    def label(self) -> str:
        """How the reports name the run: its folder, or ``(in memory)``."""
        return str(self.directory) if self.directory is not None else "(in memory)"

    @property
    def notes(self) -> list[str]:
        """What the run says the user should know (``meta.json``'s ``notes``)."""
        return [str(note) for note in self.meta.get("notes") or []]

    @property
    def roofline_dtype(self) -> str:
        """The data type whose peak the roofline uses (``float32`` unless recorded)."""
        return str((self.meta.get("roofline") or {}).get("dtype") or "float32")

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


def run_record(result: "ProfileResult", model: Optional["torch.nn.Module"] = None, *,
               config: Optional[Mapping[str, Any]] = None, notes: Sequence[str] = (),
               ceilings: Optional["Ceilings"] = None, roofline_dtype: str = "float32",
               ceilings_source: Optional[str] = None,
               metadata: Optional[Mapping[str, Any]] = None,
               directory: Optional[PathLike] = None) -> RunRecord:
    """The record of ``result``: what its run folder holds, as data, without writing it.

    Args:
        result: what :func:`~profiling.runner.profile_model` returned.
        model: the profiled model (for its parameter count and the layer table).
        config: what ran, as plain data (``meta.json``'s ``config``).
        notes: what the caller wants the run to say (the result's own notes follow).
        ceilings: device ceilings: the roofline columns of the stage table when operations
            were counted, and the roof of the plots and the page.
        roofline_dtype: the data type whose peak the roofline uses.
        ceilings_source: where the ceilings can be loaded again (a YAML file's path; by
            default the preset's name).
        metadata: more ``meta.json`` entries.
        directory: the folder the record will be written to, if known.
    """
    from ..counting.roofline import add_roofline_columns
    from ..stages.payload import device_type_of
    from ..statistics.aggregate import repeat_table, time_column
    from ..statistics.intervals import interval_label
    from .layers_table import layers_table
    from .metadata import run_metadata

    counted = result.totals is not None
    stages = result.stages.copy()
    if ceilings is not None and counted:
        add_roofline_columns(stages, ceilings, roofline_dtype, time_column(stages))
    layers = None
    if model is not None and result.module_counts is not None:
        layers = layers_table(model, result.module_counts, result.module_seconds[0])
    extra: dict[str, Any] = dict(metadata or {})
    if result.coverage:
        extra["coverage"] = result.coverage
    extra["metrics"] = [metric.as_dict() for metric in result.metrics]
    if result.forward_ms:
        label, coverage = interval_label(len(result.forward_ms))
        extra["interval"] = {"label": label, "coverage": round(coverage, 5),
                             "repeats": len(result.forward_ms)}
    if counted:
        extra.update(uncounted_ops=result.uncounted, totals=result.totals)
        if ceilings is not None:
            extra["roofline"] = {"ceilings": ceilings_source or ceilings.name,
                                 "device": ceilings.name, "dtype": roofline_dtype}
    device = device_type_of(model, ()) if model is not None else "cpu"
    parameters = sum(p.numel() for p in model.parameters()) if model is not None else None
    meta = run_metadata(dict(config or {}), extra.pop("device", device),
                        notes=[*notes, *result.notes], forward_ms=result.forward_ms,
                        noise=result.noise, parameters=parameters, **extra)
    meta = json.loads(json.dumps(meta, default=str))  # the view meta.json gives back
    return RunRecord(Path(directory) if directory is not None else None, "ok",
                     meta.get("config") or {}, parse_overrides(meta.get("overrides") or []),
                     "", meta, stages, repeat_table(result.timed) if result.timed else None,
                     layers, ceilings, result.operators)


#: A run as the reports take it: a record, a result in memory, or a run folder's path.
Run = Union[RunRecord, "ProfileResult", str, Path]


def as_record(run: Run) -> RunRecord:
    """``run`` as a :class:`RunRecord`: a record as it is, a
    :class:`~profiling.runner.ProfileResult` by :func:`run_record` (no model, no config), a
    run folder by :func:`read_run`."""
    if isinstance(run, RunRecord):
        return run
    if isinstance(run, (str, Path)):
        return read_run(run)
    from ..runner.passes import ProfileResult

    if isinstance(run, ProfileResult):
        return run_record(run)
    raise TypeError(f"a run is a RunRecord, a ProfileResult or a run folder's path, got "
                    f"{type(run).__name__}")


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


def read_run(directory: PathLike) -> RunRecord:
    """Read a run folder as its :class:`RunRecord` (the view :func:`run_record` gives of the
    result it was written from).

    Raises:
        ProfilingError: when the directory holds neither a finished nor a failed run, or one
            of its files is broken (the line names the file).
    """
    directory = Path(directory)
    meta_path, error_path = directory / META_FILE, directory / ERROR_FILE
    if meta_path.is_file() and (directory / STAGES_FILE).is_file():
        meta = read_meta_file(meta_path)
        layers, operators = directory / LAYERS_FILE, directory / OPERATORS_FILE
        return RunRecord(directory, "ok", meta.get("config") or {},
                         parse_overrides(meta.get("overrides") or []), "", meta,
                         _read_stages(directory / STAGES_FILE), read_times(directory),
                         _read_layers(layers) if layers.is_file() else None,
                         _recorded_ceilings(meta),
                         _read_operators(operators) if operators.is_file() else None)
    if error_path.is_file():
        failure = read_meta_file(error_path)
        error = f"{failure.get('error_type', 'Error')}: {failure.get('error', '')}"
        return RunRecord(directory, "failed", failure.get("config") or {},
                         parse_overrides(failure.get("overrides") or []), error)
    for present, absent in ((META_FILE, STAGES_FILE), (STAGES_FILE, META_FILE)):
        if (directory / present).is_file():
            raise ProfilingError(f"{directory / absent} is missing: the run folder is partial "
                                 f"(it holds {present} without {absent})")
    raise ProfilingError(f"{directory} is not a run directory: it holds neither {META_FILE} "
                         f"with {STAGES_FILE} nor {ERROR_FILE}")


#: Columns of ``stages.csv`` and ``times.csv`` that hold numbers.
_NUMBERS = re.compile(r"^(depth|call_index|order|repeat|macs|flops|activations)$|"
                      r"_(bytes|mb|ms|mean|median|p10|p90|std|low|high|read|written)$")


#: Columns of ``stages.csv`` and ``times.csv`` that count things: whole numbers, never below 0.
_COUNTS = re.compile(r"^(depth|call_index|order|repeat|macs|flops|activations)$|_bytes$|"
                     r"^bytes_(read|written)$")
#: Columns of times (milliseconds), never below 0; memory columns may be (memory freed).
_TIMES = re.compile(r"_ms(_|$)")
#: The largest time (ms) or memory (MB) a run folder may hold: 31 years, an exabyte. Larger
#: values are no measurement, and near float64's limit their sums and squares overflow.
MAX_MEASURED = 1e12
#: The statistics of a time that every timed call has (the interval may be empty: one repeat).
_ALWAYS_WITH_TIMES = ("mean", "median", "p10", "p90", "std")
#: The columns every run's ``stages.csv`` holds (:func:`profiling.statistics.aggregate_stages`)
#: and the tools read: a file without one of them is partial or hand-edited.
STAGE_COLUMNS = ("stage", "kind", "depth", "call_index", "order", "in_bytes", "out_bytes")


def _counts(column: str) -> bool:
    return bool(_COUNTS.search(column))


def _times(column: str) -> bool:
    return bool(_TIMES.search(column))


def holds_numbers(column: str) -> bool:
    """Whether a column of a run's tables holds numbers (counts, bytes, times, memory)."""
    return bool(_NUMBERS.search(column))


def _as_written(table: pd.DataFrame, text: Sequence[str]) -> pd.DataFrame:
    """``table`` with the empty cells of its text columns (those named in ``text``, and any
    that reads as text) as the empty texts they were written from."""
    for column in table.columns:
        if column in text or not pd.api.types.is_numeric_dtype(table[column]):
            table[column] = table[column].astype(object).fillna("").astype(str)
    return table


def _differences(table: pd.DataFrame) -> pd.Series:
    """The ``other`` rows: what a forward or a parent took beyond its stages, a difference of
    two measurements, which a runtime whose node times overlap can make negative."""
    if "kind" in table:
        return table["kind"] == "other"
    names = table["stage"].astype(str)
    return (names == "other") | names.str.endswith("/other")


def _largest(column: str) -> float:
    return MAX_MEASURED if _times(column) or column.endswith("_mb") else math.inf


def _read_numbers(path: Path, required: Sequence[str], unique: Sequence[str]) -> pd.DataFrame:
    """``stages.csv`` or ``times.csv``, every number checked (:func:`read_table`)."""
    return read_table(path, required=required, numeric=holds_numbers, whole=_counts,
                      non_negative=_times, signed_rows=_differences, largest=_largest,
                      unique=unique)


def _read_stages(path: Path) -> pd.DataFrame:
    stages = _read_numbers(path, STAGE_COLUMNS, ("stage", "call_index"))
    if stages.empty:
        raise ProfilingError(f"{path} is broken: it holds no stage rows")
    _check_times_complete(path, stages)
    return _as_written(stages.rename(columns=RENAMED_COLUMNS), _STAGE_TEXT)


def _check_times_complete(path: Path, stages: pd.DataFrame) -> None:
    """Refuse a row that holds some statistics of a time but not the others (an emptied
    median beside its mean): a writer writes all of them for a timed call or none (a call
    that no timed forward made), and a plot would draw the gap as 0."""
    for metric in sorted({column.split("_ms_")[0] for column in stages if "_ms_" in column}):
        columns = [f"{metric}_ms_{statistic}" for statistic in _ALWAYS_WITH_TIMES
                   if f"{metric}_ms_{statistic}" in stages]
        empty = stages[columns].isna()
        partial = empty.any(axis=1) & ~empty.all(axis=1)
        if partial.any():
            row = int(partial.to_numpy().argmax())
            column = columns[int(empty.iloc[row].to_numpy().argmax())]
            raise ProfilingError(f"{path} is broken: column {column}, row {row + 2} "
                                 f"({stages['stage'].iloc[row]}) is empty where the row's other "
                                 f"statistics of {metric}_ms are not")


def read_times(directory: PathLike) -> Optional[pd.DataFrame]:
    """The raw repeats of a run folder (``times.csv``: one row per stage call and timed
    forward, :func:`profiling.statistics.repeat_table`), or ``None`` when it has none (an
    older or untimed run)."""
    path = Path(directory) / TIMES_FILE
    if not path.is_file():
        return None
    return _as_written(_read_numbers(path, ("stage", "call_index", "repeat"),
                                     ("stage", "call_index", "repeat")), _STAGE_TEXT)


def _read_layers(path: Path) -> pd.DataFrame:
    return _as_written(read_table(path, required=("module name", "params", "memory(MB)",
                                                  "duration[%]"),
                                  numeric=lambda column: column not in _LAYER_TEXT), _LAYER_TEXT)


def _read_operators(path: Path) -> pd.DataFrame:
    return _as_written(read_table(path, required=("stage", "call_index", "operator"),
                                  numeric=lambda column: column not in _OPERATOR_TEXT,
                                  whole=_counts, non_negative=lambda column: True,
                                  largest=_largest, unique=("stage", "call_index", "operator")),
                       _OPERATOR_TEXT)


def _recorded_ceilings(meta: Mapping[str, Any]) -> Optional["Ceilings"]:
    """The ceilings ``meta.json`` names for the roofline, or ``None`` when it names none or
    they cannot be loaded (a preset of another version, a moved file)."""
    source = (meta.get("roofline") or {}).get("ceilings")
    if not source:
        return None
    from ..counting.roofline import load_ceilings

    try:
        return load_ceilings(str(source))
    except ProfilingError:
        return None
