"""Reports: everything a run writes or reads back. The record of a run (:class:`RunRecord`:
made from a result in memory by :func:`run_record`, or read back from its folder by
:func:`read_run`, the same view either way), the run folder written from it
(:func:`write_run`), each of its files, the terminal summary, the comparison of two runs, the
plots (matplotlib, loaded only when a plot is asked for) and the HTML pages of a run, a
comparison and a sweep (html/, plotly). Every reader takes a record, a result or a folder."""

from __future__ import annotations

from .._exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS = {
    "RunRecord": "record", "Run": "record", "run_record": "record", "read_run": "record",
    "as_record": "record", "read_times": "record", "parse_overrides": "record",
    "holds_numbers": "record", "RENAMED_COLUMNS": "record", "ERROR_FILE": "record",
    "META_FILE": "record", "STAGES_FILE": "record", "TIMES_FILE": "record",
    "LAYERS_FILE": "record",
    "find_runs": "runs", "collect_runs": "runs", "write_failure": "runs",
    "flatten_config": "runs", "write_table": "runs", "forward_median": "runs",
    "TABLE_FORMATS": "runs",
    "write_run": "run_folder", "run_files": "run_folder", "PAYLOAD_FILE": "run_folder",
    "LAYERS_FILES": "run_folder", "MODULES_FILES": "run_folder", "PLOTS_FOLDER": "run_folder",
    "TRACE_FILE": "run_folder",
    "run_metadata": "metadata", "device_description": "metadata", "host_name": "metadata",
    "cpu_name": "metadata",
    "PAYLOAD_COLUMNS": "comparison",
    "compared_columns": "comparison", "compare_stages": "comparison", "compare_runs": "comparison",
    "compare_paired_runs": "comparison",
    "add_significance": "comparison", "forward_comparison": "comparison",
    "change_threshold": "comparison", "withheld_reason": "comparison",
    "config_differences": "comparison", "format_comparison": "comparison_text",
    "MIN_CHANGE": "comparison", "MIN_CPU_DIFFERENCE_MS": "comparison", "FORWARD": "comparison",
    "significance_rule": "comparison_text", "noise_summary": "comparison_text",
    "run_view": "view", "RunView": "view", "forward_order": "view",
    "format_summary": "summary", "RunTotals": "summary", "run_totals": "summary",
    "WIDE_INTERVAL": "summary", "OWN_METRICS": "summary",
    "extra_metrics": "summary",
    "format_payload_lines": "payload_log", "format_payload_log": "payload_log",
    "default_label": "payload_log", "LabelFunction": "payload_log",
    "LAYER_COLUMNS": "layers_table", "layers_table": "layers_table",
    "render_layers_text": "layers_table", "layers_files": "layers_table",
    "MODULE_COLUMNS": "modules_table", "CONVENTIONS": "modules_table",
    "modules_table": "modules_table", "render_modules_text": "modules_table",
    "modules_files": "modules_table",
    "render_plots": "plots", "plot_metric": "plots", "plot_stage_times": "plots",
    "plot_payload": "plots",
    "plot_memory": "plots", "plot_roofline": "plots", "plot_layers": "plots",
    "plot_split_latency": "plots",
    "plot_split_timeline": "split_plots", "plot_executed_latency": "split_plots",
    "executed_latency_figure": "split_plots", "executed_curves": "split_figures",
    "ExecutedCurve": "split_figures", "latency_ticks": "split_figures",
    "drawn_latency_cuts": "split_figures", "split_page": "html",
    "write_report": "html", "report_page": "html", "result_page": "run_folder",
    "REPORT_FILE": "html",
    "shorten": "labels", "printable": "labels", "plot_label": "labels",
    "markdown_cell": "labels", "significant": "numbers",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
