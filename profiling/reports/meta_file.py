"""A run folder's ``meta.json`` and ``error.json`` read back with every field the tools use
checked, so that a hand-edited or broken file is one line naming it and the field, never an
exception deep inside a plot or a page (a ``KeyError`` from a metric without a name) or a
wrong verdict (a ``NaN`` coefficient of variation read as "reliable").

Only the fields a tool reads are checked, each only when present (older runs lack some);
others pass through as they are.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import ProfilingError
from ..files.reading import read_json

__all__ = ["read_meta_file"]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value) and value >= 0


def _numbers(count: int) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and (not count or len(value) == count) and \
        all(_number(item) for item in value)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


#: The type each top-level field must have: a check and its words.
_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "config": (lambda v: isinstance(v, dict), "a mapping"),
    "overrides": (lambda v: isinstance(v, list), "a list"),
    "forward_ms": (_numbers(0), "a list of finite numbers >= 0"),
    "notes": (lambda v: isinstance(v, list), "a list"),
    "noise": (lambda v: isinstance(v, dict), "a mapping"),
    "totals": (lambda v: isinstance(v, dict), "a mapping"),
    "parameters": (_whole, "an integer >= 0"),
    "device_name": (lambda v: isinstance(v, str), "a text"),
    "roofline": (lambda v: isinstance(v, dict), "a mapping"),
    "metrics": (lambda v: isinstance(v, list) and all(isinstance(m, dict) for m in v),
                "a list of mappings"),
    "error": (lambda v: isinstance(v, str), "a text"),
    "error_type": (lambda v: isinstance(v, str), "a text"),
}
#: The fields of ``noise`` (:func:`profiling.statistics.noise.noise_report`) and their types.
_NOISE: dict[str, tuple[Callable[[Any], bool], str]] = {
    "load_average_before": (_numbers(3), "three finite numbers >= 0"),
    "load_average_after": (_numbers(3), "three finite numbers >= 0"),
    "cores": (_whole, "an integer >= 0"), "threads": (_whole, "an integer >= 0"),
    "repeats": (_whole, "an integer >= 0"),
    "forward_median_ms": (_number, "a finite number >= 0"),
    "forward_median_ci95_ms": (_numbers(2), "two finite numbers >= 0"),
    "forward_cv": (_number, "a finite number >= 0"),
    "unreliable": (_texts, "a list of texts"),
}
#: The fields of a declared metric (:meth:`profiling.collectors.Metric.as_dict`).
_METRIC: dict[str, tuple[Callable[[Any], bool], str]] = {
    "name": (lambda v: isinstance(v, str) and bool(v), "a non-empty text"),
    **{name: (lambda v: isinstance(v, str), "a text")
       for name in ("unit", "kind", "calls", "repeats", "description", "label")},
    "headline": (lambda v: isinstance(v, bool), "true or false"),
    "scale": (lambda v: _number(v) and v > 0, "a finite number > 0"),
}


def read_meta_file(path: Path) -> dict[str, Any]:
    """The JSON object of ``meta.json`` or ``error.json`` at ``path``, with its fields
    checked (see the module).

    Raises:
        ProfilingError: naming the file and the field that is wrong.
    """
    data = read_json(path)
    if not isinstance(data, dict):
        raise ProfilingError(f"{path} is broken: it holds no JSON object")
    _check_fields(path, data, _FIELDS, "")
    _check_fields(path, data.get("noise") or {}, _NOISE, "noise.")
    for number, metric in enumerate(data.get("metrics") or []):
        where = f"metrics[{number}]."
        if "name" not in metric:
            raise ProfilingError(f"{path} is broken: '{where}name' is missing (every declared "
                                 f"metric has a name)")
        unknown = sorted(set(metric) - set(_METRIC))
        if unknown:
            raise ProfilingError(f"{path} is broken: '{where}{unknown[0]}' is not a field of "
                                 f"a metric; accepted: {', '.join(_METRIC)}")
        _check_fields(path, metric, _METRIC, where)
        _check_declaration(path, metric, where)
    return data


def _check_fields(path: Path, data: Mapping[str, Any],
                  fields: Mapping[str, tuple[Callable[[Any], bool], str]], prefix: str) -> None:
    for name, (accepted, words) in fields.items():
        value = data.get(name)
        if value is not None and not accepted(value):
            raise ProfilingError(f"{path} is broken: '{prefix}{name}' must be {words}, got "
                                 f"{type(value).__name__} {json.dumps(value)[:40]}")


def _check_declaration(path: Path, metric: Mapping[str, Any], where: str) -> None:
    from ..collectors import metric_from_dict

    try:
        metric_from_dict(metric)
    except ValueError as error:
        raise ProfilingError(f"{path} is broken: '{where[:-1]}': {error}") from None
