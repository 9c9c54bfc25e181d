"""``payload.log``: the payload, time and memory log in the layout of the users' hand-made log.

The payload section has one line per tensor, ``label :: torch.Size([...]) X Mb`` with
``Mb = bytes / 1e6``, and after a container's lines a ``label :: total_bytes`` line. Labels are
``{stage}_in`` and ``{stage}_out`` (a probe's is its name) unless the model supplies its own
(``payload_log_label(call, direction)``, returning ``None`` to leave a line out). Container
items are written ``[i]`` by position; an object that carries a single tensor (such as an
``ImageList``) is written as that tensor. Then come one time section and one memory section per
measured device, listing each stage once with its mean per call, as the seed log does.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

import pandas as pd

from ..statistics.aggregate import time_column
from ..stages.payload import PayloadNode, iter_leaves
from ..stages.markers import StageCall
from .labels import printable
from .numbers import significant

__all__ = ["format_payload_lines", "format_payload_log", "default_label", "LabelFunction"]

LabelFunction = Callable[[StageCall, str], Optional[str]]

_WIDTH = 63


def default_label(call: StageCall, direction: str) -> Optional[str]:
    """``{name}_in`` / ``{name}_out`` for stages, the name itself for probes."""
    return call.name if direction == "probe" else f"{call.name}_{direction}"


def _path_text(node: PayloadNode, path: tuple) -> str:
    text, current = "", node
    for kind, key in path:
        if kind in ("object", "dataclass", "namedtuple"):
            if len(current.items) > 1:
                text += f".{key}"
        else:
            position = [k for k, _ in current.items].index(key)
            text += f"[{position}]"
        current = dict(current.items)[key]
    return text


def format_payload_lines(label: str, node: Optional[PayloadNode]) -> list[str]:
    """The log lines of one payload under ``label``."""
    if node is None:
        return []
    lines, indexed, label = [], False, printable(label)
    for path, leaf in iter_leaves(node):
        suffix = _path_text(node, path)
        indexed = indexed or bool(suffix)
        lines.append(f"{label}{suffix} :: torch.Size({list(leaf.shape)}) {leaf.nbytes / 1e6} Mb")
    if indexed:
        lines.append(f"{label} :: {node.nbytes}")
    return lines


def _banner(title: str) -> list[str]:
    rule, text = "-" * _WIDTH, f" {title} "
    left = max((_WIDTH - len(text)) // 2 - 1, 2)
    return [rule, "-" * left + text + "-" * max(_WIDTH - left - len(text), 2), rule, ""]


def _payload_section(events: Iterable[tuple[str, StageCall]], label: LabelFunction) -> list[str]:
    lines = _banner("payload")
    for direction, call in events:
        node = call.inputs if direction == "in" else call.outputs
        text = label(call, direction)
        if text is not None:
            lines.extend(format_payload_lines(text, node))
    return lines


def _per_stage_means(stages: pd.DataFrame, column: str) -> list[tuple[str, float]]:
    rows = stages[(stages["kind"] == "stage") & stages[column].notna()]
    means = rows.groupby("stage", sort=False)[column].mean()
    return list(means.items())


def _blocks(stages: pd.DataFrame) -> list[tuple[str, str, float]]:
    shown = time_column(stages, "mean")
    blocks = []
    if shown:
        blocks.append(("Average Time of Each Layer (seconds per call)", shown, 1e-3))
    if shown == "cuda_time_ms_mean" and "cpu_time_ms_mean" in stages:
        blocks.append(("host | Average Time of Each Layer (seconds per call, CPU side)",
                       "cpu_time_ms_mean", 1e-3))
    for column, name in (("tensor_peak_mb", "mem_cpu"), ("cuda_peak_mb", "mem_cuda")):
        if column in stages:
            blocks.append((f"{name} | Average Mem Consumption of Each Layer "
                           f"(MB = 1e6 bytes, peak above the stage's start)", column, 1.0))
    return blocks


def format_payload_log(events: Sequence[tuple[str, StageCall]], stages: pd.DataFrame, *,
                       host: str, device: str, label: Optional[LabelFunction] = None) -> str:
    """The whole ``payload.log`` text.

    Args:
        events: the reference forward's ``(direction, call)`` events.
        stages: the aggregated stage table (see :func:`profiling.statistics.aggregate_stages`).
        host: the machine's name, for the section header.
        device: the device, e.g. ``cpu`` or ``cuda (NVIDIA H100)``.
        label: the model's label function (default :func:`default_label`).
    """
    lines = _payload_section(events, label or default_label)
    blocks = _blocks(stages)
    if blocks:
        lines += ["", ""] + _banner(f"{host} {device}")[:-1]
    for heading, column, scale in blocks:
        lines.append(heading)
        lines += [f"{printable(name)} :: {significant(value * scale)}"
                  for name, value in _per_stage_means(stages, column)]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
