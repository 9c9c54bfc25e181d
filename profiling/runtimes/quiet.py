"""Keep the exporter's and the quantisers' progress chatter off the terminal."""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import warnings
from typing import Iterator

__all__ = ["quiet"]

#: ONNX Runtime's log severities: fatal errors only, and its default (warnings and errors).
_ORT_FATAL, _ORT_WARNING = 4, 2
#: The exporter's loggers; each registered executor's packages (its runtime, its quantiser)
#: log under their own names, added to these.
_EXPORTER_LOGGERS = ("onnxscript", "onnx_ir", "torch.onnx", "torch.export", "root")


def _loggers() -> list[str]:
    """The exporter's loggers and those of every registered executor's packages."""
    from .registry import registered_executors

    packages = [name for cls in registered_executors().values()
                for name in (*cls.packages, *cls.int8_packages)]
    return list(dict.fromkeys([*_EXPORTER_LOGGERS, *packages]))


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """While the block runs: Python-level output, warnings and the libraries' logs below
    ERROR are dropped, and ONNX Runtime's own log (written by its C++ code, past Python's
    streams) prints only fatal errors, back at its default, warnings, afterwards; an
    exception still propagates with its message."""
    levels = {name: logging.getLogger(name if name != "root" else None).level
              for name in _loggers()}
    onnxruntime = sys.modules.get("onnxruntime")  # its C++ log writes to the terminal itself
    try:
        if onnxruntime is not None:
            onnxruntime.set_default_logger_severity(_ORT_FATAL)
        for name in levels:
            logging.getLogger(name if name != "root" else None).setLevel(logging.ERROR)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        if onnxruntime is not None:
            onnxruntime.set_default_logger_severity(_ORT_WARNING)
        for name, level in levels.items():
            logging.getLogger(name if name != "root" else None).setLevel(level)
