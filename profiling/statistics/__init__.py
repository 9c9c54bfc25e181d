"""Statistics of repeated timings: intervals of a median and of a ratio, stopping rules, the
per-stage aggregation of the repeats, and how noisy the machine was."""

from __future__ import annotations

from .._exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS = {
    "CONFIDENCE": "intervals", "median_interval": "intervals",
    "median_interval_coverage": "intervals", "interval_label": "intervals", "relative_half_width": "intervals",
    "ratio_interval": "intervals", "is_significant": "intervals",
    "coefficient_of_variation": "intervals", "AutoRepeats": "intervals",
    "MEDIAN_CI_METHOD": "intervals", "RATIO_CI_METHOD": "intervals",
    "aggregate_stages": "aggregate", "repeat_table": "aggregate", "STATISTICS": "aggregate",
    "shapes_text": "aggregate", "first_column": "aggregate", "time_column": "aggregate",
    "stage_time_sums": "aggregate", "shown_calls": "aggregate",
    "with_other_calls": "coverage", "stage_coverage": "coverage", "coverage_line": "coverage",
    "OTHER": "coverage", "LOW_COVERAGE": "coverage",
    "machine_state": "noise", "noise_report": "noise", "unreliable_reasons": "noise",
    "loaded_reason": "noise", "noise_line": "noise", "MAX_FORWARD_CV": "noise",
    "usable_cores": "noise",
    "AB_MIN_CHANGE": "thresholds", "MIN_CHANGE": "thresholds", "AB_ROUNDS": "thresholds",
    "FAMILY_ERROR": "paired", "paired_ratio": "paired",
    "paired_significance": "paired", "is_change": "paired", "AB_RULE": "paired",
    "interleaved_ms": "paired", "ratio_entry": "paired", "ratio_value": "paired",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
