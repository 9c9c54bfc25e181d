"""``modules.csv`` and ``modules.txt``: the hierarchical per-module table.

Like mmengine's ``get_model_complexity_info`` (and fvcore's ``flop_count_table`` and
``flop_count_str``): one row per module, nested like the module tree, with its parameters,
MACs, FLOPs, activations and time, inclusive of its submodules; each module's own parameters are
listed under it with their shapes. ``modules.txt`` holds a header that states the
conventions, the table, and the architecture print (``print(model)``) annotated with the same
figures.

The CSV's columns: ``module`` (dotted path; the root is ``model``, listed first), ``depth``
(0 for the root), ``kind`` (``module`` or ``parameter``), ``type`` (class name), ``shape``
(parameters only), ``params``, ``macs``, ``flops``, ``activations``, ``bytes_read``,
``bytes_written``, ``time_ms`` (the sum of its calls' times, from
:class:`~profiling.collectors.module_time.ModuleTime`; empty without it), ``calls``. A module that
never ran has ``calls`` 0 and empty counts.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pandas as pd
from torch import nn

from ..counting.counts import COUNT_FIELDS
from ..counting.modules import ModuleRecord, parameter_count
from .labels import markdown_cell, printable

__all__ = ["MODULE_COLUMNS", "CONVENTIONS", "modules_table", "render_modules_text",
           "modules_files"]

MODULE_COLUMNS = ["module", "depth", "kind", "type", "shape", "params", *COUNT_FIELDS, "time_ms",
                  "calls"]
ROOT = "model"

CONVENTIONS = """\
Per module, inclusive of its submodules, for one forward of the whole batch; an operator is
counted in every module on the call stack when it runs, and a module called twice counts twice.
  #params: parameter elements (a parameter's row shows its shape instead)
  #MACs: multiply-accumulates of convolutions, linear layers, matmul/bmm/einsum and attention,
         bias excluded (what fvcore and mmengine call flops)
  #FLOPs: every floating-point operation: 2 per MAC, plus bias, normalisation, activation,
          pooling, elementwise, softmax and interpolation
  #acts: activations, the output elements of convolutions, linear layers and matmuls (fvcore's)
  time: milliseconds in the module's calls, timed in a forward of their own (module_time)
Counted at the dispatcher (profiling.counting); "-" marks a module that did not run (or, for
time, a run without the module_time collector)."""


def _display_path(path: str) -> str:
    return path if path else ROOT


def modules_table(model: nn.Module, records: Mapping[str, ModuleRecord],
                  seconds: Optional[Mapping[str, float]] = None) -> pd.DataFrame:
    """One row per module (tree order, root first) and per parameter under its module.

    Args:
        model: the model whose modules ``records`` describe.
        records: the operation counter's module records (``OpCounts.modules``).
        seconds: time per module path, summed over its calls (``ModuleTime.total_seconds``).
    """
    seconds = seconds or {}
    rows = []
    for path, module in model.named_modules():
        depth = 0 if path == "" else path.count(".") + 1
        record = records.get(path)
        ran = record is not None and record.calls > 0
        counts = record.total.as_dict() if ran else dict.fromkeys(COUNT_FIELDS)
        rows.append({"module": _display_path(path), "depth": depth, "kind": "module",
                     "type": type(module).__name__, "shape": None,
                     "params": parameter_count(module), **counts,
                     "time_ms": seconds[path] * 1e3 if path in seconds else None,
                     "calls": record.calls if record is not None else 0})
        for name, parameter in module.named_parameters(recurse=False):
            rows.append({"module": f"{path}.{name}" if path else name, "depth": depth + 1,
                         "kind": "parameter", "type": type(parameter).__name__,
                         "shape": str(tuple(parameter.shape)), "params": parameter.numel(),
                         "calls": None})
    table = pd.DataFrame(rows, columns=MODULE_COLUMNS)
    for column in (*COUNT_FIELDS, "calls"):
        table[column] = table[column].astype("Int64")
    return table


def _si(value) -> str:
    if value is None or pd.isna(value):
        return "-"
    value = int(value)
    for threshold, suffix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"),
                              (1e3, "K")):
        if abs(value) >= threshold:
            return f"{value / threshold:.3g}{suffix}"
    return str(value)


def _table_text(table: pd.DataFrame, max_depth: Optional[int]) -> str:
    header = ["module", "#params or shape", "#MACs", "#FLOPs", "#acts", "time"]
    lines = []
    for row in table.itertuples(index=False):
        if max_depth is not None and row.depth > max_depth:
            continue
        indent = " " * row.depth
        if row.kind == "parameter":
            cells = [indent + row.module, indent + row.shape, "", "", "", ""]
        else:
            cells = [indent + row.module, indent + _si(row.params), _si(row.macs),
                     _si(row.flops), _si(row.activations), _milliseconds(row.time_ms)]
        lines.append([markdown_cell(cell) for cell in cells])
    widths = [max(len(c) for c in column) for column in zip(header, *lines)]

    def fmt(cells) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    rule = "|" + "|".join(":" + "-" * (w + 1) for w in widths) + "|"
    return "\n".join([fmt(header), rule, *(fmt(cells) for cells in lines)])


def _milliseconds(value) -> str:
    if value is None or pd.isna(value):
        return "-"
    return f"{value:,.0f} ms" if value >= 100 else f"{value:.3g} ms"


def _stats_line(row) -> str:
    return (f"#params: {_si(row['params'])}, #MACs: {_si(row['macs'])}, "
            f"#FLOPs: {_si(row['flops'])}, #acts: {_si(row['activations'])}, "
            f"time: {_milliseconds(row['time_ms'])}")


def _indent(text: str, spaces: int = 2) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.split("\n"))


def _annotated(module: nn.Module, stats: Mapping[int, str]) -> str:
    lines = [line for line in module.extra_repr().split("\n") if line]
    lines.append(stats[id(module)])
    for name, child in module.named_children():
        lines.append(f"({printable(name)}): {_annotated(child, stats)}")
    return f"{module._get_name()}(\n{_indent(chr(10).join(lines))}\n)"


def render_modules_text(model: nn.Module, table: pd.DataFrame,
                        max_depth: Optional[int] = None) -> str:
    """The header of conventions, the table (down to ``max_depth``; all by default), and the
    annotated architecture print."""
    by_path = {row["module"]: row for _, row in table[table["kind"] == "module"].iterrows()}
    stats = {id(module): _stats_line(by_path[_display_path(path)])
             for path, module in model.named_modules()}
    return "\n\n".join([
        f"Modules of {type(model).__name__}\n{CONVENTIONS}",
        _table_text(table, max_depth),
        _annotated(model, stats),
    ]) + "\n"


def modules_files(model: nn.Module, records: Mapping[str, ModuleRecord],
                  max_depth: Optional[int] = None,
                  seconds: Optional[Mapping[str, float]] = None) -> dict[str, Any]:
    """``{"modules.csv": ..., "modules.txt": ...}`` for
    :func:`~profiling.files.write_files` (arguments as :func:`modules_table`)."""
    table = modules_table(model, records, seconds)
    return {"modules.csv": table, "modules.txt": render_modules_text(model, table, max_depth)}
