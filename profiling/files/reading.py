"""YAML, JSON and CSV files read back safely: bounded in size, depth and alias expansion.

Every file a tool reads (device ceilings, experiment files, a run folder's ``meta.json`` and
``error.json``) goes through :func:`read_yaml` or :func:`read_json`. A hostile or broken file is
refused in well under a second with one :class:`~profiling.errors.ProfilingError` line naming
it: YAML whose aliases expand (aliases of aliases: a few lines that stand for billions of
values), a file that nests deeper than :data:`MAX_DEPTH` levels (past Python's recursion
limit, the parsers would crash), a file over :data:`MAX_BYTES`, or one that does not parse.
:func:`read_table` does the same for a run folder's CSV tables, and names the column and row of
a value that is not a number where one belongs.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence, Union

from ..errors import ProfilingError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_yaml", "read_json", "read_table", "file_problem", "MAX_BYTES", "MAX_DEPTH", "MAX_VALUES"]

#: The largest file read (configs, ceilings and ``meta.json`` are a few kB).
MAX_BYTES = 10_000_000
#: The deepest nesting of mappings and lists accepted (shipped files nest 4 deep).
MAX_DEPTH = 50
#: The most values a YAML file may stand for once its aliases are expanded.
MAX_VALUES = 100_000

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_YAML_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\']|\'\')*\'|#[^\n]*')
_BRACKETS = re.compile(r"[\[\]{}]")


def file_problem(path: Union[str, Path]) -> str:
    """Why ``path`` is not a regular file that can be read, in words (``"is a folder"``,
    ``"is a FIFO (named pipe)"``, ``"is a symbolic link that loops"``, ...), or ``""`` when it
    is one (symbolic links followed). Opening a FIFO would wait forever for a writer and a
    device may never end, so a tool asks this before it opens a file it was given."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "is a symbolic link that loops"
        if path.is_symlink():
            return f"is a symbolic link to {os.readlink(path)}, which does not exist"
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return "does not exist"
        return f"cannot be read ({error.strerror})"
    if stat.S_ISREG(mode):
        return ""
    if stat.S_ISDIR(mode):
        return "is a folder"
    kinds = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"))
    return "is " + next((kind for test, kind in kinds if test(mode)), "a special file") + \
        ", not a regular file"


def _text(path: Path) -> str:
    problem = file_problem(path)
    if problem:
        raise ProfilingError(f"{path} {problem}; give a file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise ProfilingError(f"{path} is {path.stat().st_size:,} bytes, over the "
                                 f"{MAX_BYTES:,} this file may hold")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ProfilingError(f"{path} cannot be read ({type(error).__name__}: "
                             f"{str(error).splitlines()[0] if str(error) else ''})") from None


def read_yaml(path: Union[str, Path]) -> Any:
    """The data of the YAML file ``path`` (safe tags only), checked before it is built: no
    deeper than :data:`MAX_DEPTH`, at most :data:`MAX_VALUES` values with aliases expanded."""
    import yaml

    path = Path(path)
    text = _text(path)
    if _bracket_depth(_YAML_STRINGS.sub("", text)) > MAX_DEPTH:  # fast: the parser is not
        raise ProfilingError(f"{path} nests deeper than {MAX_DEPTH} levels; refused")
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):  # iterative: no recursion
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise ProfilingError(f"{path} nests deeper than {MAX_DEPTH} levels "
                                         f"(line {event.start_mark.line + 1}); refused")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is not None and _expanded_values(root) > MAX_VALUES:
            raise ProfilingError(f"{path} expands through its aliases to more than "
                                 f"{MAX_VALUES:,} values; refused")
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ProfilingError(f"{path} is not valid YAML{where}: {problem}") from None


def _expanded_values(root: Any) -> int:
    """How many values the node graph stands for with every alias expanded (each node counted
    once per path to it), computed once per node."""
    import yaml

    sizes: dict[int, int] = {}
    opened: set[int] = set()
    stack = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes or (not children_done and id(node) in opened):
            continue
        if isinstance(node, yaml.ScalarNode):
            sizes[id(node)] = 1
            continue
        children = (node.value if isinstance(node, yaml.SequenceNode)
                    else [item for pair in node.value for item in pair])
        if children_done:
            # a child not yet sized is the node itself (a recursive alias): endless
            sizes[id(node)] = min(1 + sum(sizes.get(id(child), MAX_VALUES + 1)
                                          for child in children), MAX_VALUES + 1)
        else:
            opened.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def read_json(path: Union[str, Path]) -> Any:
    """The data of the JSON file ``path``, refused when it nests deeper than
    :data:`MAX_DEPTH` (checked before parsing: Python's parser recurses)."""
    path = Path(path)
    text = _text(path)
    if _bracket_depth(_STRINGS.sub("", text)) > MAX_DEPTH:
        raise ProfilingError(f"{path} nests deeper than {MAX_DEPTH} levels; refused")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ProfilingError(f"{path} is broken (JSONDecodeError: {error})") from None


def _bracket_depth(text: str) -> int:
    """The deepest nesting of brackets in ``text`` (strings taken out)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(text):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def read_table(path: Union[str, Path], *, required: Sequence[str] = (),
               numeric: Callable[[str], bool] = lambda column: False,
               whole: Callable[[str], bool] = lambda column: False,
               non_negative: Callable[[str], bool] = lambda column: False,
               signed_rows: Optional[Callable[["pd.DataFrame"], Any]] = None,
               largest: Callable[[str], float] = lambda column: math.inf,
               unique: Sequence[str] = ()) -> "pd.DataFrame":
    """The CSV table ``path``, refused with one line naming it (and the column and row) when it
    cannot be parsed, lacks one of the ``required`` columns (a partial file, or one from
    another version), or was edited into something no run writes: something else than a
    finite number in a column that ``numeric`` names, a fraction or a negative number in a
    column of counts (``whole``), a number larger than ``largest(column)``, a negative number
    where ``non_negative`` says none can be (times), or two rows with the same ``unique``
    columns (a row pasted twice). Empty cells are read as missing values.

    A negative number within :data:`ROUND_OFF` of its column's
    largest magnitude is round-off (a difference of sums) and reads as 0; the rows that
    ``signed_rows(table)`` marks (differences of two measurements) may hold any negative."""
    import numpy as np
    import pandas as pd

    path = Path(path)
    _text(path)  # the size limit and a readable text
    try:
        table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        raise ProfilingError(f"{path} is broken ({type(error).__name__}: "
                             f"{str(error).splitlines()[0]})") from None
    missing = [column for column in required if column not in table.columns]
    if missing:
        raise ProfilingError(f"{path} is broken: it lacks the columns {missing} (a partial file, "
                             f"or one written by another version)")
    signed = (pd.Series(signed_rows(table), index=table.index, dtype=bool)
              if signed_rows is not None else pd.Series(False, index=table.index))
    for column in table.columns:
        if not numeric(str(column)):
            continue
        values = pd.to_numeric(table[column], errors="coerce")
        checks = [(values.isna(), "not a number"),
                  (~np.isfinite(values.astype(float)), "not a finite number")]
        if whole(str(column)):
            checks.append(((values % 1 != 0) | (values < 0) | (values >= 2 ** 63),
                           "not a whole number from 0 to 2**63 - 1 (a count)"))
        limit = largest(str(column))
        checks.append((values.abs() > limit, f"larger than {limit:g}, more than any run "
                                             f"measures"))
        if non_negative(str(column)):
            round_off = _round_off(values) & ~signed
            checks.append(((values < 0) & ~signed & ~round_off,
                           "a negative number where none can be"))
            values = values.mask(round_off, 0.0)
        for wrong, what in checks:
            bad = table[column][table[column].notna() & wrong]
            if len(bad):
                cell = bad.iloc[0].item() if hasattr(bad.iloc[0], "item") else bad.iloc[0]
                raise ProfilingError(f"{path} is broken: column {column}, row {bad.index[0] + 2} "
                                     f"holds {cell!r}, {what}")
        table[column] = values
    repeated = table.duplicated(list(unique)) if unique and set(unique) <= set(table.columns) \
        else None
    if repeated is not None and repeated.any():
        row = int(repeated.to_numpy().argmax())
        key = ", ".join(f"{c}={table[c].iloc[row]}" for c in unique)
        raise ProfilingError(f"{path} is broken: row {row + 2} repeats an earlier row's {key} "
                             f"(each may appear once)")
    return table


#: The share of a sum below which a negative difference of floats is round-off, not measured
#: (here, the lowest floor, so that the writers' :mod:`profiling.statistics` and the readers
#: share it).
ROUND_OFF = 1e-9


def _round_off(values: "pd.Series") -> "pd.Series":
    """Which of ``values`` are negative within round-off of the column's largest magnitude."""
    finite = values[values.abs() < math.inf]
    scale = float(finite.abs().max()) if len(finite) else 0.0
    return (values < 0) & (values >= -ROUND_OFF * scale)
