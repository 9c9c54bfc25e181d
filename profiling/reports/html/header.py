"""The facts at the top of a page: what ran, where, and how far its timings can be trusted."""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping, Optional

import pandas as pd

from ...statistics.intervals import interval_label, median_interval
from ..comparison import IGNORED_OPTIONS, config_differences
from ..record import RunRecord
from ..runs import forward_median
from ..view import RunView, noise_verdict
from .formatting import is_missing, significant, span

__all__ = ["model_name", "option_changes", "noise_verdict", "run_facts", "run_strip",
           "IGNORED_OPTIONS"]

def model_name(config: Mapping[str, Any]) -> str:
    """``name`` of the config's model, with its ``arch`` for torchvision and timm models."""
    model = config.get("model") or {}
    arch = model.get("arch")
    return f"{model.get('name', '?')} ({arch})" if arch else str(model.get("name", "?"))


def _typed(value: Any) -> str:
    """A value as it is typed on the command line: ``[64,64]``, ``true``, ``swiftnet``
    (a flattened config holds lists as their JSON text, ``[64, 64]``)."""
    if isinstance(value, str) and value.startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, (list, tuple, bool)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def option_changes(record: RunRecord, defaults: Optional[Mapping[str, Any]] = None
                   ) -> list[str]:
    """``key=value`` for each option of the run that differs from the defaults, from where the
    run's terminal took them: ``meta.json``'s ``options`` (what ``zoo.profile`` printed as
    changed and recorded, ``plots=true`` and ``report=true`` among them), every one in its
    order. For a run that recorded none (an older version, or one made from Python, outside
    Hydra): the config keys that differ from ``defaults`` (the default config of its model),
    else the overrides the run was started with, and ``report=true`` where the run wrote its
    page."""
    recorded = record.meta.get("options")
    if recorded or (recorded is not None and defaults is None):
        return [str(option) for option in recorded]
    if defaults is not None:
        changes = [f"{key}={_typed(second)}" for key, (first, second)
                   in config_differences(defaults, record.config).items()
                   if not key.startswith("hydra") and not key.endswith("_target_")]
    else:
        changes = [f"{key}={value}" for key, value in dict(record.overrides).items()]
    if record.config.get("report") and not any(c.startswith("report=") for c in changes):
        changes.append("report=true")
    return changes


def _forward(meta: Mapping[str, Any]) -> str:
    median = forward_median(meta)
    if median is None:
        return "not timed"
    forward = [float(value) for value in meta.get("forward_ms") or []]
    low, high = median_interval(forward)  # a runtime's run records no noise, only these
    text = f"{significant(median)} ms"
    if not math.isnan(low):
        text += f" ({interval_label(len(forward))[0]} {span(low, high)})"
    return text


def _input_size(view: RunView) -> Optional[str]:
    """The shapes the first stage call received, which is what the network ran on (a
    detector's transform resizes ``input.size``)."""
    rows = view.rows[view.rows["kind"] == "stage"] if "kind" in view.rows else view.rows
    if "in_shapes" not in rows or not len(rows) or is_missing(rows["in_shapes"].iloc[0]):
        return None
    shapes = re.findall(r"\[([\d, ]+)\]", str(rows["in_shapes"].iloc[0]))
    return " + ".join("\u00d7".join(shape.replace(" ", "").split(",")) for shape in shapes)


def run_strip(view: RunView) -> list[tuple[str, str]]:
    """The headline figures of a run in one strip: forward with its interval, GFLOPs,
    parameters, peak MB, the size the network ran on and the precision that ran."""
    meta = view.record.meta
    strip = [("forward", _forward(meta))]
    if view.total_flops is not None:
        strip.append(("GFLOPs", significant(view.total_flops / 1e9)))
    if meta.get("parameters") is not None:
        strip.append(("parameters", f"{int(meta['parameters']):,}"))
    if view.memory is not None and view.memory in view.rows:
        strip.append(("peak MB", significant(
            pd.to_numeric(view.rows[view.memory], errors="coerce").max())))
    size = _input_size(view)
    if size:
        strip.append(("input", size))
    strip.append(("precision", view.precision))
    return strip

def run_facts(record: RunRecord, defaults: Optional[Mapping[str, Any]] = None
              ) -> list[tuple[str, str]]:
    """The header of a run under its strip: model, options, device, deployment, torch,
    noise, the input asked for, host, time and commit."""
    meta, config = record.meta, record.config
    run = config.get("run") or {}
    deployment = [name for name in ("autocast", "channels_last", "compile") if run.get(name)]
    size = (config.get("input") or {}).get("size")
    batch = (config.get("input") or {}).get("batch")
    changes = option_changes(record, defaults)
    facts = [("model", model_name(config)),
             ("options (not default)", " ".join(changes) if changes else "none"),
             ("device", " / ".join(str(v) for v in (meta.get("device"), meta.get("device_name"))
                                   if v))]
    if deployment:
        facts.append(("deployment", " + ".join(deployment)))
    facts += [("torch", str((meta.get("versions") or {}).get("torch", "?"))),
              ("noise", noise_verdict(meta))]
    if size is not None or batch is not None:
        shown = "\u00d7".join(map(str, size)) if isinstance(size, (list, tuple)) else size
        facts.append(("input asked for", f"batch {batch if batch is not None else 1}, size "
                                         f"{shown if size is not None else 'the model default'}"))
    facts += [(label, str(meta[key])) for label, key in
              (("host", "host"), ("time", "time"), ("git commit", "git_commit"))
              if meta.get(key)]
    return facts
