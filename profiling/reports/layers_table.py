"""``layers.csv`` and ``layers.txt``: the torchstat-compatible per-layer table.

One row per leaf module (a module without children) that ran, in the order of their first
call, with torchstat's columns and definitions (see :mod:`profiling.counting.torchstat`):
module name, input shape, output shape (batch dropped), params (the module's own),
memory(MB) (the output of one sample, in MiB), MAdd, Flops, MemRead(B), MemWrite(B),
duration[%], MemR+W(B). As in torchstat, a module called several times is reported by its last
call, and the ``total`` row sums every column except MemRead(B) and MemWrite(B), which repeat
the last layer's values (torchstat's report does so; MemR+W(B) holds the true sum). The text
file is torchstat's printout: the table, then its footer of totals, then two lines that name
those conventions (memory in MiB; torchstat's formulas over leaf layers) and give the
dispatcher's totals of the same forward (every operator, the convention of ``modules.txt``,
``stages.csv`` and ``meta.json``), since the two ``Flops`` differ.

Unlike torchstat, it works on any model (several inputs, detection models, CUDA, meta
tensors): the shapes and counts come from the operation counter's module records, and layer
types torchstat does not know fall back to the dispatcher's counts.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import pandas as pd
from torch import nn

from ..counting.modules import ModuleRecord, is_leaf
from ..counting.torchstat import torchstat_metrics
from .labels import printable

__all__ = ["LAYER_COLUMNS", "layers_table", "render_layers_text", "layers_files"]

LAYER_COLUMNS = ["module name", "input shape", "output shape", "params", "memory(MB)", "MAdd",
                 "Flops", "MemRead(B)", "MemWrite(B)", "duration[%]", "MemR+W(B)"]
_MIB = 1024 ** 2


def _shape_text(shape: tuple[int, ...]) -> str:
    return " ".join(f"{size:>3d}" for size in shape[1:])


def _layer_row(module: nn.Module, record: ModuleRecord, duration: Optional[float]) -> dict:
    inp = record.input_shapes[0] if record.input_shapes else ()
    out = record.output_shapes[0] if record.output_shapes else ()
    metrics = torchstat_metrics(module, inp, out, record.input_itemsize, record.last_call)
    sample_elements = 1
    for size in out[1:]:
        sample_elements *= size
    return {
        "module name": record.path,
        "input shape": _shape_text(inp),
        "output shape": _shape_text(out),
        "params": sum(p.numel() for p in module.parameters(recurse=False)),
        "memory(MB)": sample_elements * record.output_itemsize / _MIB if out else 0.0,
        "MAdd": metrics.madd,
        "Flops": metrics.flops,
        "MemRead(B)": metrics.mem_read_bytes,
        "MemWrite(B)": metrics.mem_write_bytes,
        "duration[%]": duration,
        "MemR+W(B)": metrics.mem_read_bytes + metrics.mem_write_bytes,
    }


def layers_table(model: nn.Module, records: Mapping[str, ModuleRecord],
                 durations: Optional[Mapping[str, float]] = None) -> pd.DataFrame:
    """The per-layer table with its ``total`` row last (numbers, not formatted).

    Args:
        model: the model whose modules ``records`` describe.
        records: the operation counter's module records (``OpCounts.modules``).
        durations: seconds per module path (``ModuleTime.last_call_seconds``); without them
            ``duration[%]`` is empty (the counting pass is not timed).
    """
    called = sorted((r for r in records.values() if r.calls and r.first_call is not None),
                    key=lambda r: r.first_call)
    modules = dict(model.named_modules())
    rows = []
    for record in called:
        module = modules.get(record.path)
        if module is not None and is_leaf(module):
            duration = durations.get(record.path) if durations is not None else None
            rows.append(_layer_row(module, record, duration))
    table = pd.DataFrame(rows, columns=LAYER_COLUMNS)
    if durations is not None:
        table["duration[%]"] = table["duration[%]"].fillna(0.0)
        table["duration[%]"] /= table["duration[%]"].sum() + 1e-7
    last = table.iloc[-1] if len(table) else None
    total = {column: table[column].sum() for column in
             ("params", "memory(MB)", "MAdd", "Flops", "duration[%]", "MemR+W(B)")}
    total.update({"module name": "total", "input shape": "", "output shape": "",
                  "MemRead(B)": last["MemRead(B)"] if last is not None else 0,
                  "MemWrite(B)": last["MemWrite(B)"] if last is not None else 0})
    if durations is None:
        total["duration[%]"] = None
    table = pd.concat([table, pd.DataFrame([total], columns=LAYER_COLUMNS)], ignore_index=True)
    table["duration[%]"] = pd.to_numeric(table["duration[%]"])  # NaN where not timed
    return table


def _round_value(value: float, binary: bool = False) -> str:
    divisor = 1024.0 if binary else 1000.0
    for power, suffix in ((4, "T"), (3, "G"), (2, "M"), (1, "K")):
        if value // divisor ** power > 0:
            return f"{round(value / divisor ** power, 2)}{suffix}"
    return str(value)


def _conventions(dispatcher: Optional[Mapping[str, int]]) -> list[str]:
    lines = ["Conventions (torchstat's): memory(MB) and Total memory are MiB (2^20 bytes) of one "
             "sample's outputs; MAdd and Flops are torchstat's formulas for its leaf layer "
             "types (K, M, G: 1e3, 1e6, 1e9; MemR+W: steps of 1024)."]
    if dispatcher is not None:
        lines.append(f"Dispatcher totals (every operator; modules.txt, stages.csv, meta.json): "
                     f"{dispatcher['macs'] / 1e9:.4g} GMACs, {dispatcher['flops'] / 1e9:.4g} "
                     f"GFLOPs (1e9; FLOPs: 2 per MAC plus every other floating-point "
                     f"operation; for convolutions and linear layers torchstat's Flops are "
                     f"close to these MACs).")
    return lines


def render_layers_text(table: pd.DataFrame, dispatcher: Optional[Mapping[str, int]] = None
                       ) -> str:
    """torchstat's printout of :func:`layers_table`'s result: the table, then the totals, then
    the conventions and, when given, the ``dispatcher``'s totals (``{"macs", "flops"}`` of
    :meth:`~profiling.counting.Counts.as_dict`)."""
    layers, total = table.iloc[:-1], table.iloc[-1]
    shown = table.copy()
    shown.index = [*range(len(layers)), "total"]
    shown["module name"] = [printable(name) for name in table["module name"]]
    shown.loc["total", ["module name", "input shape", "output shape"]] = " "
    shown["params"] = [f"{float(v):,}" for v in table["params"]]
    shown["memory(MB)"] = [f"{v:.2f}" for v in table["memory(MB)"]]
    for column in ("MAdd", "Flops"):
        shown[column] = [f"{float(v):,}" for v in table[column]]
    for column in ("MemRead(B)", "MemWrite(B)", "MemR+W(B)"):
        shown[column] = table[column].astype(float).to_numpy()
    shown["duration[%]"] = ["-" if pd.isna(v) else f"{v:.2%}" for v in table["duration[%]"]]
    text = shown.to_string()
    width = len(text.split("\n")[0])
    return "\n".join([
        text,
        "=" * width,
        f"Total params: {int(total['params']):,}",
        "-" * width,
        f"Total memory: {total['memory(MB)']:.2f}MB",
        f"Total MAdd: {_round_value(total['MAdd'])}MAdd",
        f"Total Flops: {_round_value(total['Flops'])}Flops",
        f"Total MemR+W: {_round_value(total['MemR+W(B)'], True)}B",
        "-" * width,
        *_conventions(dispatcher),
        "",
    ])


def layers_files(table: pd.DataFrame, dispatcher: Optional[Mapping[str, int]] = None
                 ) -> dict[str, Any]:
    """``{"layers.csv": numbers, "layers.txt": torchstat's printout}`` for
    :func:`~profiling.files.write_files` (``dispatcher``: see
    :func:`render_layers_text`)."""
    return {"layers.csv": table, "layers.txt": render_layers_text(table, dispatcher)}
