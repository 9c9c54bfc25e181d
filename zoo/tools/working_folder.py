"""The working folder checked before any tool loads torch.

In a working folder that was deleted (a shell still in it), ``import torch`` dies with "Intel
oneMKL FATAL ERROR: Cannot load libtorch_cpu.so" and no relative path means anything, so
:mod:`zoo.tools` calls :func:`check_working_folder` when it is imported: one line, exit 2.
"""

from __future__ import annotations

import os

from .cli import fail

__all__ = ["check_working_folder"]


def check_working_folder() -> None:
    """End the process with one line (exit 2) when the working folder cannot be read."""
    try:
        os.getcwd()
    except OSError as error:
        fail(f"the working folder cannot be read ({error.strerror}): it was deleted or moved "
             f"while this shell was in it; cd to a folder that exists and run again")
