"""Split-point analysis: where to cut a forward between an edge device and a server. The
bytes alive across each cut, how they can be encoded and compressed, and the end-to-end
latency of each cut over a link. The forward itself runs under the liveness collector in
:func:`profiling.runner.analyse_cuts`; this package holds what that collector and the cut
table share, below the collectors."""

from __future__ import annotations

from .._exports import lazy_exports

#: Each public name and the module that defines it.
_EXPORTS = {
    "SplitAnalysis": "analysis", "cut_table": "analysis", "pareto_front": "analysis",
    "DEFAULT_CODECS": "analysis",
    "Cut": "cuts", "CutTensor": "cuts", "Mark": "cuts", "build_cuts": "cuts",
    "alive_bytes": "cuts",
    "ByteRanges": "byte_ranges", "view_ranges": "byte_ranges", "merge_ranges": "byte_ranges",
    "subtract_ranges": "byte_ranges", "ranges_size": "byte_ranges", "EMPTY": "byte_ranges",
    "MAX_RUNS": "byte_ranges",
    "CODECS": "encodings", "SIZE_ENCODINGS": "encodings", "encoded_bytes": "encodings",
    "check_codecs": "encodings", "gather": "encodings", "compressed_sizes": "encodings",
    "quantise_int8": "encodings",
    "top_level_times": "latency", "split_latency": "latency", "best_cuts": "latency",
    "encodings_of": "latency", "check_link": "latency",
    "WireError": "wire", "frame": "wire", "read_frame": "wire", "send_frame": "wire",
    "receive_frame": "wire", "encode_piece": "transport", "decode_piece": "transport",
    "SplitServer": "server", "LOOPBACK_HOSTS": "server", "SplitClient": "client",
    "Link": "link", "unshaped_reason": "link", "TBF_BURST_BYTES": "link",
    "executed_row": "executed", "best_measured_and_estimated": "executed",
    "slow_start_ms": "executed", "framing_bytes": "executed",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
