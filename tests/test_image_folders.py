"""Folders of images given as input (zoo/inputs/images.py, ``resolve_image_files``): an entry that is no
regular file (a FIFO, a looping or dangling link, a device) is refused in one line naming it,
never opened and waited on."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from special_paths import KINDS as _KINDS
from special_paths import odd_paths_in
from zoo.options import ConfigError
from zoo.inputs import SAMPLE_DIR, resolve_image_files


@pytest.fixture
def odd_paths(tmp_path) -> dict[str, Path]:
    """Paths that exist (or seem to) but are no regular file to read."""
    return odd_paths_in(tmp_path)


def test_an_image_folder_holding_a_fifo_is_refused_not_waited_on(tmp_path, odd_paths):
    """Before: the FIFO ``a.png`` in a folder of images was opened and the run hung."""
    shutil.copy(SAMPLE_DIR / "chelsea_0.png",
                tmp_path / "b.png")
    os.mkfifo(tmp_path / "a.png")
    with pytest.raises(ConfigError, match=r"a\.png \(in the folder .*\) is a FIFO \(named "
                                          r"pipe\), not a regular file; accepted: image"):
        resolve_image_files(str(tmp_path), "image")
    for kind, path in odd_paths.items():
        if kind != "a folder":  # a folder is a folder of images
            with pytest.raises(ConfigError, match=re.escape(f"input.images: {path} "
                                                            f"{_KINDS[kind]}")):
                resolve_image_files(str(path), "image")
