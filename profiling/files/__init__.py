"""Files read and written safely, by every package: YAML, JSON and CSV read back bounded in
size, depth and alias expansion (:mod:`~profiling.files.reading`), and files and folders
written whole or not at all, never over a folder this tool did not write
(:mod:`~profiling.files.writing`)."""

from __future__ import annotations

from .._exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS = {
    "read_yaml": "reading", "read_json": "reading", "read_table": "reading",
    "file_problem": "reading",
    "MAX_BYTES": "reading", "MAX_DEPTH": "reading", "MAX_VALUES": "reading",
    "write_file": "writing", "write_files": "writing", "write_folder": "writing",
    "replace_folder": "writing", "staging_folder": "writing", "mark_folder": "writing",
    "holds_marker": "writing", "holds_files": "writing", "check_replaceable": "writing",
    "check_writable": "writing", "check_output_file": "writing",
    "remove_stale_temporaries": "writing", "MARKER": "writing", "Content": "writing",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
