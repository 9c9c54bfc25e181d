"""Paths that exist (or seem to) but are no regular file: a FIFO, a folder, a looping and a
dangling symbolic link, and a device. Every reader must refuse them without opening them: the
file readers (profiling/files/reading.py), checkpoints (zoo/models/checkpoints.py) and image folders
(zoo/inputs/images.py) are tested with the same set."""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from pathlib import Path

__all__ = ["KINDS", "within", "odd_paths_in"]

#: What ``profiling.files.file_problem`` says of each kind of path.
KINDS = {"a FIFO": "is a FIFO (named pipe), not a regular file", "a folder": "is a folder",
         "a looping link": "is a symbolic link that loops",
         "a dangling link": "is a symbolic link to gone.pth, which does not exist",
         "a device": "is a device, not a regular file"}


@contextmanager
def within(seconds: int):
    """Fail instead of hanging: a FIFO opened for reading waits for a writer forever."""
    def hang(*_):
        raise TimeoutError(f"still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def odd_paths_in(tmp_path: Path) -> dict[str, Path]:
    """One path of each kind in ``KINDS``, made under ``tmp_path/odd`` (the device is
    ``/dev/null``)."""
    folder = tmp_path / "odd"
    folder.mkdir()
    os.mkfifo(folder / "fifo.pth")
    (folder / "folder.pth").mkdir()
    (folder / "loop_a.pth").symlink_to("loop_b.pth")
    (folder / "loop_b.pth").symlink_to("loop_a.pth")
    (folder / "dangling.pth").symlink_to("gone.pth")
    return {"a FIFO": folder / "fifo.pth", "a folder": folder / "folder.pth",
            "a looping link": folder / "loop_a.pth", "a dangling link": folder / "dangling.pth",
            "a device": Path("/dev/null")}
