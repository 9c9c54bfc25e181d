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
``operators.csv``  each stage call's operators: counts (when operations were counted) or a
                   runtime's node times
``modules.*``      the hierarchical per-module table (when operations were counted)
``meta.json``      what ran, where, when; counts, notes, noise
``plots/*.png``    with ``plots=True``
``report.html``    with ``report=True``: the run's page (:mod:`profiling.reports.html`)
=================  ===========================================================================

The folder is written whole or not at all (:func:`~profiling.files.write_folder`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import torch

from ..errors import require_extra
from ..runner.passes import ProfileResult
from ..files.writing import Content, write_folder
from ..trace import TRACE_FILE
from .layers_table import layers_files
from .metadata import host_name
from .modules_table import modules_files
from .payload_log import format_payload_log
from .record import (ERROR_FILE, LAYERS_FILE, META_FILE, OPERATORS_FILE, STAGES_FILE,
                     TIMES_FILE, RunRecord, run_record)

__all__ = ["write_run", "run_files", "result_page", "STAGES_FILE", "TIMES_FILE",
           "PAYLOAD_FILE", "LAYERS_FILES", "MODULES_FILES", "META_FILE", "ERROR_FILE",
           "OPERATORS_FILE",
           "PLOTS_FOLDER", "TRACE_FILE"]

PAYLOAD_FILE = "payload.log"
LAYERS_FILES = (LAYERS_FILE, "layers.txt")
MODULES_FILES = ("modules.csv", "modules.txt")
PLOTS_FOLDER = "plots"


def _plots(record: RunRecord, model: Optional[torch.nn.Module]
           ) -> tuple[dict[str, Content], list[str]]:
    require_extra("matplotlib", "plots", "plots")
    from .plots import render_plots

    types = ({path: type(module).__name__ for path, module in model.named_modules()}
             if model is not None else None)
    return render_plots(record, module_types=types)


def run_files(result: ProfileResult, model: Optional[torch.nn.Module] = None, *,
              plots: bool = False, report: bool = False, **options: Any
              ) -> tuple[dict[str, Content], RunRecord]:
    """``{file_name: content}`` of the run folder of ``result``, and the record they hold
    (:func:`~profiling.reports.record.run_record`, whose options ``options`` are: ``config``,
    ``notes``, ``ceilings``, ...).

    Every file is written from the record, but the payload log and the module table, which
    need the stage calls and the model themselves.

    Args:
        result: what :func:`~profiling.runner.profile_model` returned.
        model: the profiled model (for its parameter count and the layer and module tables).
        plots: also draw ``plots/*.png`` (what they leave out joins the record's notes).
        report: also write ``report.html``, the run's page (needs plotly, the ``report``
            extra).
    """
    record = run_record(result, model, **options)
    files: dict[str, Content] = {}
    if record.layers is not None:
        files.update(layers_files(record.layers, record.meta.get("totals")))
    if model is not None and result.module_counts is not None:
        files.update(modules_files(model, result.module_counts,
                                   seconds=result.module_seconds[1]))
    if plots:
        drawn, plot_notes = _plots(record, model)
        files.update(drawn)
        record.meta["notes"] = [*record.notes, *plot_notes]
    files.update({
        STAGES_FILE: record.stages,
        **({TIMES_FILE: record.times} if record.times is not None else {}),
        **({OPERATORS_FILE: record.operators} if record.operators is not None
           and len(record.operators) else {}),
        PAYLOAD_FILE: format_payload_log(result.events, record.stages, host=host_name(),
                                         device=str(record.meta["device"]).split(":")[0],
                                         label=getattr(model, "payload_log_label", None)),
        META_FILE: json.dumps(record.meta, indent=2) + "\n",
    })
    if report:
        from .html import REPORT_FILE, run_page

        files[REPORT_FILE] = run_page(record).render()
    return files, record


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
    The options are those of :func:`~profiling.reports.record.run_record` (``config``,
    ``ceilings``, ...)."""
    from .html import run_page

    return run_page(run_record(result, model, **options))
