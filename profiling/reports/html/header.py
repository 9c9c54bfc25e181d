"""The facts at the top of a page: what ran, where, and how far its timings can be trusted."""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

from ...statistics.intervals import interval_label, median_interval
from ..comparison import config_differences
from ..record import RunRecord
from ..runs import forward_median
from ..view import executed_precision, noise_verdict
from .formatting import significant

__all__ = ["model_name", "option_changes", "noise_verdict", "run_facts", "IGNORED_OPTIONS"]

#: Config keys that change what a run writes or prints, not what it measures.
IGNORED_OPTIONS = ("hydra", "summary", "plots", "trace", "report", "run.overwrite",
                   "device.collectors")


def model_name(config: Mapping[str, Any]) -> str:
    """``name`` of the config's model, with its ``arch`` for torchvision and timm models."""
    model = config.get("model") or {}
    arch = model.get("arch")
    return f"{model.get('name', '?')} ({arch})" if arch else str(model.get("name", "?"))


def option_changes(record: RunRecord, defaults: Optional[Mapping[str, Any]] = None
                   ) -> list[str]:
    """``key=value`` for each option of the run that differs from ``defaults`` (the default
    config of its model); without defaults, the overrides the run was started with."""
    if defaults is not None:
        changes = {key: second for key, (first, second)
                   in config_differences(defaults, record.config).items()}
    else:
        changes = dict(record.overrides)
    return [f"{key}={value}" for key, value in changes.items()
            if not key.startswith(IGNORED_OPTIONS) and not key.endswith("_target_")]


def _forward(meta: Mapping[str, Any]) -> str:
    median = forward_median(meta)
    if median is None:
        return "not timed"
    forward = [float(value) for value in meta.get("forward_ms") or []]
    low, high = median_interval(forward)  # a runtime's run records no noise, only these
    text = f"{significant(median)} ms median"
    if not math.isnan(low):
        text += f" ({interval_label(len(forward))[0]} {significant(low)}-{significant(high)} ms)"
    return text


def _executed(meta: Mapping[str, Any]) -> str:
    """``, executed in bfloat16 by openvino`` for a runtime run: the precision the runtime
    says its floating operators ran in (``""`` for a PyTorch run)."""
    deployed = meta.get("deployment") or {}
    precision = deployed.get("inference_precision")
    return f", executed in {precision} by {deployed.get('runtime')}" if precision else ""


def run_facts(record: RunRecord, defaults: Optional[Mapping[str, Any]] = None
              ) -> list[tuple[str, str]]:
    """The header of a run: model, options, device, dtype, torch, noise, forward, ..."""
    meta, config = record.meta, record.config
    run = config.get("run") or {}
    deployment = [executed_precision(meta)] + [
        name for name in ("autocast", "channels_last", "compile") if run.get(name)]
    size = (config.get("input") or {}).get("size")
    batch = (config.get("input") or {}).get("batch")
    changes = option_changes(record, defaults)
    facts = [("model", model_name(config)),
             ("options (not default)", ", ".join(changes) if changes else "none"),
             ("device", " / ".join(str(v) for v in (meta.get("device"), meta.get("device_name"))
                                   if v)),
             ("dtype", " + ".join(deployment) + _executed(meta)),
             ("torch", str((meta.get("versions") or {}).get("torch", "?"))),
             ("noise", noise_verdict(meta)),
             ("forward", _forward(meta))]
    if size is not None or batch is not None:
        shown = "x".join(map(str, size)) if isinstance(size, (list, tuple)) else size
        facts.append(("input", f"batch {batch if batch is not None else 1}, size "
                               f"{shown if size is not None else 'the model default'}"))
    if meta.get("parameters") is not None:
        facts.append(("parameters", f"{int(meta['parameters']):,}"))
    facts += [(label, str(meta[key])) for label, key in
              (("host", "host"), ("time", "time"), ("git commit", "git_commit"))
              if meta.get(key)]
    return facts
