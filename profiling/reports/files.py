"""Writing a run's files all at once, so a failed run leaves no half-written directory."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping, Union

import pandas as pd

__all__ = ["write_files"]

Content = Union[str, bytes, pd.DataFrame]


def write_files(directory: Union[str, Path], files: Mapping[str, Content]) -> list[Path]:
    """Write ``{file_name: content}`` into ``directory`` and return the paths.

    Everything is first written into a temporary folder inside ``directory`` and then moved
    into place, so an error while rendering or writing leaves none of the files behind.
    DataFrames are written as CSV without the index.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=directory))
    try:
        for name, content in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, pd.DataFrame):
                content.to_csv(target, index=False)
            elif isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
        paths = []
        for name in files:
            destination = directory / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, destination)
            paths.append(destination)
        return paths
    finally:
        shutil.rmtree(staging, ignore_errors=True)
