"""Standard output that outlives its reader: ``stagezoo profile ... | head -3`` shows three
lines, and the run still finishes and writes its folder."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

__all__ = ["output_outlives_its_reader"]


class _OutlivingStream:
    """Wraps a text stream; once the reader has gone (``BrokenPipeError``), what is left to
    print goes to the null device instead of ending the run with an error."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _reader_gone(self) -> None:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())  # what is still buffered drains there too
            os.close(null)
        except (OSError, ValueError, AttributeError):  # no descriptor: drop the output instead
            self._stream = open(os.devnull, "w")

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_gone()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        return getattr(self._stream, name)


@contextlib.contextmanager
def output_outlives_its_reader() -> Iterator[None]:
    """While inside, a closed pipe on standard output silences the output, not the tool."""
    if isinstance(sys.stdout, _OutlivingStream):
        yield
        return
    original = sys.stdout
    sys.stdout = _OutlivingStream(original)
    try:
        yield
    finally:
        with contextlib.suppress(BrokenPipeError):
            sys.stdout.flush()
        if sys.stdout is not original and isinstance(sys.stdout, _OutlivingStream):
            sys.stdout = original
