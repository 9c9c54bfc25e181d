"""The run folder: every file of one profile, made and written by one call.

``python -m zoo.profile`` and a Python user get the same folder::

    result = profile_model(model, inputs, collectors=["payload", "op_counts", "cpu_time"])
    write_run(result, "results/my-run", model)

The files (their names are the constants below; the output contract of the README):

=================  ===========================================================================
``stages.csv``     one row per stage call, every metric aggregated
``times.csv``      every timed repeat of every stage call (when the run was timed)
``payload.log``    payload, time and memory per stage, in the users' own log layout
``layers.*``       the torchstat-compatible per-layer table (when operations were counted)
``modules.*``      the hierarchical per-module table (when operations were counted)
``meta.json``      what ran, where, when; counts, notes, noise
``plots/*.png``    with ``plots=True``
``report.html``    with ``report=True``: the run's page (:mod:`profiling.reports.html`)
=================  ===========================================================================

The folder is written whole or not at all (:func:`~profiling.reports.write_folder`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import torch

from ..errors import require_extra
from ..statistics.aggregate import repeat_table
from ..stages.payload import device_type_of
from ..counting.roofline import Ceilings, add_roofline_columns
from ..runner.passes import ProfileResult
from .files import Content, write_folder
from .layers_table import layers_files, layers_table
from .metadata import host_name, run_metadata
from .modules_table import modules_files
from .payload_log import format_payload_log
from .repeats import TIMES_FILE
from .runs import ERROR_FILE, META_FILE, STAGES_FILE, RunRecord, parse_overrides

__all__ = ["write_run", "run_files", "record_of_files", "result_page", "STAGES_FILE", "TIMES_FILE", "PAYLOAD_FILE",
           "LAYERS_FILES", "MODULES_FILES", "META_FILE", "ERROR_FILE", "PLOTS_FOLDER",
           "TRACE_FILE"]

PAYLOAD_FILE = "payload.log"
LAYERS_FILES = ("layers.csv", "layers.txt")
MODULES_FILES = ("modules.csv", "modules.txt")
PLOTS_FOLDER = "plots"
TRACE_FILE = "trace.json.gz"


def _count_tables(model: Optional[torch.nn.Module], result: ProfileResult
                  ) -> dict[str, Content]:
    """The layer and module tables of a run that counted operations (else none), with the
    module times when they were measured."""
    if model is None or result.module_counts is None:
        return {}
    last_call, total = result.module_seconds
    return {**layers_files(layers_table(model, result.module_counts, last_call),
                           result.totals),
            **modules_files(model, result.module_counts, seconds=total)}


def _plots(result: ProfileResult, ceilings: Optional[Ceilings], dtype: str,
           layers: Any) -> tuple[dict[str, Content], list[str]]:
    require_extra("matplotlib", "plots", "plots")
    from .plots import render_plots

    return render_plots(result.stages, ceilings, dtype, layers, result.metrics)


def run_files(result: ProfileResult, model: Optional[torch.nn.Module] = None, *,
              config: Optional[Mapping[str, Any]] = None, notes: Sequence[str] = (),
              ceilings: Optional[Ceilings] = None, roofline_dtype: str = "float32",
              ceilings_source: Optional[str] = None, plots: bool = False,
              metadata: Optional[Mapping[str, Any]] = None, report: bool = False
              ) -> tuple[dict[str, Content], list[str]]:
    """``{file_name: content}`` of the run folder of ``result``, and the notes of the run.

    Args:
        result: what :func:`~profiling.runner.profile_model` returned.
        model: the profiled model (for its parameter count and the layer and module tables).
        config: what ran, as plain data (``meta.json``'s ``config``).
        notes: what the caller wants the run to say (the result's own notes are added).
        ceilings: device ceilings: roofline columns in ``stages.csv`` when operations were
            counted, and the roof of ``plots/roofline.png``.
        roofline_dtype: the data type whose peak the roofline uses.
        ceilings_source: where ``zoo.plot`` can load the ceilings again (a YAML file's path;
            by default the preset's name).
        plots: also draw ``plots/*.png``.
        metadata: more ``meta.json`` entries.
        report: also write ``report.html``, the run's page (needs plotly, the ``report``
            extra).
    """
    notes = [*notes, *result.notes]
    counted = result.totals is not None
    if ceilings is not None and counted:
        add_roofline_columns(result.stages, ceilings, roofline_dtype)
    files = _count_tables(model, result)
    if plots:
        drawn, plot_notes = _plots(result, ceilings, roofline_dtype, files.get(LAYERS_FILES[0]))
        files.update(drawn)
        notes += plot_notes
    device = device_type_of(model, ()) if model is not None else "cpu"
    extra: dict[str, Any] = dict(metadata or {})
    if result.coverage:
        extra["coverage"] = result.coverage
    extra["metrics"] = [metric.as_dict() for metric in result.metrics]
    if counted:
        extra.update(uncounted_ops=result.uncounted, totals=result.totals)
        if ceilings is not None:
            extra["roofline"] = {"ceilings": ceilings_source or ceilings.name,
                                 "device": ceilings.name, "dtype": roofline_dtype}
    parameters = sum(p.numel() for p in model.parameters()) if model is not None else None
    meta = run_metadata(dict(config or {}), extra.pop("device", device), notes=notes,
                        forward_ms=result.forward_ms, noise=result.noise,
                        parameters=parameters, **extra)
    files.update({
        STAGES_FILE: result.stages,
        **({TIMES_FILE: repeat_table(result.timed)} if result.timed else {}),
        PAYLOAD_FILE: format_payload_log(result.events, result.stages, host=host_name(),
                                         device=str(meta["device"]).split(":")[0],
                                         label=getattr(model, "payload_log_label", None)),
        META_FILE: json.dumps(meta, indent=2, default=str) + "\n",
    })
    if report:
        from .html import REPORT_FILE, run_page

        files[REPORT_FILE] = run_page(record_of_files(files)).render()
    return files, notes


def record_of_files(files: Mapping[str, Content], directory: Union[str, Path] = "."
                    ) -> RunRecord:
    """The :class:`~profiling.reports.runs.RunRecord` that reading back the run folder made of
    ``files`` (of :func:`run_files`) would give, without writing it."""
    meta = json.loads(files[META_FILE])
    return RunRecord(Path(directory), "ok", meta.get("config") or {},
                     parse_overrides(meta.get("overrides") or []), "", meta,
                     files[STAGES_FILE])


def write_run(result: ProfileResult, directory: Union[str, Path],
              model: Optional[torch.nn.Module] = None, *, overwrite: bool = False,
              extra_files: Optional[Mapping[str, Content]] = None, **options: Any
              ) -> list[Path]:
    """Write the run folder of ``result`` into ``directory`` and return the paths written.

    The options are those of :func:`run_files`; ``extra_files`` adds files of the caller's own
    (a trace). The folder appears whole, or not at all; one that already holds files is
    refused unless ``overwrite=True``, which replaces it whole.
    """
    files, _ = run_files(result, model, **options)
    files.update(extra_files or {})
    return write_folder(directory, files, overwrite=overwrite)


def result_page(result: ProfileResult, model: Optional[torch.nn.Module] = None,
                **options: Any) -> Any:
    """The HTML page of ``result`` (what ``report=True`` writes as ``report.html``), without
    a run folder: a :class:`~profiling.reports.html.Page`, whose ``render()`` is the HTML.
    The options are those of :func:`run_files` (``config``, ``ceilings``, ...)."""
    from .html import run_page

    files, _ = run_files(result, model, **options)
    return run_page(record_of_files(files))
