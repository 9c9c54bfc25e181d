"""The zoo's error for bad configuration: one line, what is wrong and what is accepted."""

from collections.abc import Sequence
from typing import Any

from profiling.errors import ProfilingError

__all__ = ["ConfigError", "check_minimum"]


class ConfigError(ProfilingError):
    """A bad model name, option, input size or checkpoint."""


def check_minimum(minimum: int, **options: Any) -> None:
    """Raise :class:`ConfigError` for the first of ``options`` (``name=value``) that is not an
    integer of at least ``minimum``; a sequence's entries are checked one by one (and it must
    not be empty)."""
    from .options import Integer, ListOf, check_value

    for name, value in options.items():
        is_sequence = isinstance(value, Sequence) and not isinstance(value, str)
        item = Integer(minimum=minimum)
        check_value(name, list(value) if is_sequence else value,
                    ListOf(item) if is_sequence else item)
