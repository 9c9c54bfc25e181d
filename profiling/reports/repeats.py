"""``times.csv``: every timed repeat of a run, as measured, for intervals and comparisons.

One row per stage call and timed forward (:func:`profiling.statistics.repeat_table`): columns
``stage``, ``call_index``, ``repeat`` and one per repeated metric (``cpu_time_ms``,
``cuda_time_ms``). ``stages.csv`` holds only the aggregates; a comparison of two runs
(:mod:`profiling.reports.comparison`) resamples these rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

import pandas as pd

from .runs import holds_numbers
from .structured_files import read_table

__all__ = ["TIMES_FILE", "read_times"]

#: The file of a run directory that holds the raw repeats.
TIMES_FILE = "times.csv"


def read_times(directory: Union[str, Path]) -> Optional[pd.DataFrame]:
    """The raw repeats of a run directory, or ``None`` when it has none (an older or untimed
    run)."""
    path = Path(directory) / TIMES_FILE
    if not path.is_file():
        return None
    times = read_table(path, required=("stage", "call_index", "repeat"), numeric=holds_numbers)
    return times
