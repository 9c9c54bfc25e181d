"""Keep the exporter's and the quantisers' progress chatter off the terminal."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from typing import Iterator

__all__ = ["quiet"]

_LOGGERS = ("onnxscript", "onnx_ir", "torch.onnx", "torch.export", "onnxruntime", "nncf",
            "root")


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """While the block runs: Python-level output, warnings and the libraries' logs below
    ERROR are dropped (an exception still propagates with its message)."""
    levels = {name: logging.getLogger(name if name != "root" else None).level
              for name in _LOGGERS}
    try:
        for name in _LOGGERS:
            logging.getLogger(name if name != "root" else None).setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name if name != "root" else None).setLevel(level)
