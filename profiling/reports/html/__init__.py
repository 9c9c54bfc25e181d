"""Self-contained HTML reports: one page per run, per comparison, per sweep and per split
analysis.

Each page is one HTML file with plotly.js, its data and its script inlined: it opens from
disk or an e-mail attachment, loads nothing from the network, and its charts are linked
(hovering or clicking a stage highlights it in every chart and in the table). Needs the
``report`` extra (plotly).

>>> from profiling.reports.html import write_report
>>> write_report(["results/my-run"])               # doctest: +SKIP
PosixPath('results/my-run/report.html')
"""

from .compare_page import comparison_page
from .page import Page
from .report import REPORT_FILE, default_output, report_kind, report_page, write_report
from .run_page import run_page
from .split_page import split_page
from .sweep_page import read_sweep, sweep_page

__all__ = ["REPORT_FILE", "Page", "comparison_page", "default_output", "read_sweep",
           "report_kind", "report_page", "run_page", "split_page", "sweep_page", "write_report"]
