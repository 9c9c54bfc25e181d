"""The zoo's error for bad configuration: one line, what is wrong and what is accepted."""

from profiling import ProfilingError

__all__ = ["ConfigError"]


class ConfigError(ProfilingError):
    """A bad model name, option, input size or checkpoint."""
