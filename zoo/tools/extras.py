"""The optional extras that tools check before any work: one line, at once, when one is
missing (the HTML report needs plotly, the PNG plots matplotlib)."""

from __future__ import annotations

from profiling import require_extra

__all__ = ["check_report_support", "check_plot_support"]


def check_report_support() -> None:
    """Refuse, in one line, a report when plotly (the ``report`` extra) is not installed."""
    require_extra("plotly", "report", "the HTML report (zoo.report, report=true)")


def check_plot_support() -> None:
    """Refuse, in one line, ``plots=true`` when matplotlib (the ``plots`` extra) is not
    installed."""
    require_extra("matplotlib", "plots", "plots=true")
