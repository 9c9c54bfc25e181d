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

from ..errors import ProfilingError

__all__ = ["TIMES_FILE", "read_times"]

#: The file of a run directory that holds the raw repeats.
TIMES_FILE = "times.csv"


def read_times(directory: Union[str, Path]) -> Optional[pd.DataFrame]:
    """The raw repeats of a run directory, or ``None`` when it has none (an older or untimed
    run)."""
    path = Path(directory) / TIMES_FILE
    if not path.is_file():
        return None
    try:
        times = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError
            ) as error:
        raise ProfilingError(f"{path} is broken ({type(error).__name__}: "
                             f"{str(error).splitlines()[0]})") from None
    missing = {"stage", "call_index", "repeat"} - set(times.columns)
    if missing:
        raise ProfilingError(f"{path} is broken: it lacks the columns {sorted(missing)}")
    return times
