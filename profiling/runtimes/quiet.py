"""Keep the exporter's and the quantisers' progress chatter off the terminal."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from typing import Iterator

__all__ = ["quiet"]

#: The exporter's loggers; each registered executor's packages (its runtime, its quantiser)
#: log under their own names, added to these.
_EXPORTER_LOGGERS = ("onnxscript", "onnx_ir", "torch.onnx", "torch.export", "root")


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """While the block runs: Python-level output, warnings and the logs below ERROR of the
    exporter and of every registered executor's packages are dropped, and each executor's
    native log (written past Python's streams) prints only fatal errors
    (:meth:`~.registry.Executor.quiet_native_log`), all back as they were afterwards; an
    exception still propagates with its message."""
    from .registry import registered_executors

    executors = registered_executors().values()
    packages = [name for cls in executors for name in (*cls.packages, *cls.int8_packages)]
    levels = {name: logging.getLogger(name if name != "root" else None).level
              for name in dict.fromkeys([*_EXPORTER_LOGGERS, *packages])}
    try:
        with contextlib.ExitStack() as native:
            for cls in executors:
                native.enter_context(cls.quiet_native_log())
            for name in levels:
                logging.getLogger(name if name != "root" else None).setLevel(logging.ERROR)
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name if name != "root" else None).setLevel(level)
