"""The optional outputs of a run: plots (``plots=true``) and a trace (``trace=true``)."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pandas as pd
import torch
from omegaconf import DictConfig

from profiling.roofline import Ceilings

from .deploy import roofline_dtype

__all__ = ["optional_outputs"]


def optional_outputs(cfg: DictConfig, model: torch.nn.Module, inputs: Any,
                     attach: Mapping[str, str], stages: pd.DataFrame,
                     ceilings: Optional[Ceilings] = None, layers: Optional[pd.DataFrame] = None
                     ) -> tuple[dict[str, Any], list[str]]:
    """``{file_name: content}`` of the optional outputs the config asks for, and notes.

    ``plots=true``: ``plots/*.png`` (:func:`profiling.reports.plots.render_plots`), the roof
    drawn for ``ceilings``, the layer plot from ``layers`` (the torchstat table).
    ``trace=true``: ``trace.json.gz``, one traced forward after the timed ones
    (:func:`profiling.trace.trace_forward`).
    """
    files: dict[str, Any] = {}
    notes: list[str] = []
    if cfg.get("plots", False):
        try:
            from profiling.reports.plots import render_plots
        except ImportError:
            notes.append("no plots: matplotlib is not installed (pip install stagezoo[plots])")
        else:
            plots, plot_notes = render_plots(stages, ceilings, roofline_dtype(cfg), layers)
            files.update(plots)
            notes += plot_notes
    if cfg.get("trace", False):
        from profiling.trace import trace_forward
        files["trace.json.gz"] = trace_forward(model, inputs, attach=attach)
    return files, notes
