"""The one exception type for bad input to the profiler."""

__all__ = ["ProfilingError"]


class ProfilingError(ValueError):
    """Bad input: the message is one line saying what is wrong and what is accepted."""
