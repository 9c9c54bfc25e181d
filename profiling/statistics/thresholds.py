"""The thresholds of significance and the default rounds, apart from the code that applies
them (numpy, pandas), so that a command's ``--help`` states them without loading either."""

from __future__ import annotations

__all__ = ["MIN_CHANGE", "AB_MIN_CHANGE", "AB_ROUNDS"]

#: The smallest change of a time that comparing two run folders calls significant (relative).
MIN_CHANGE = 0.25
#: The smallest change an A/B comparison calls significant (relative, either direction).
AB_MIN_CHANGE = 0.05
#: Rounds (timed forwards of each side) of an A/B comparison by default: enough for a 10%
#: change in one stage to be found 9 times in 10, with at most 1 false alarm in 10, on a
#: loaded machine too (``benchmarks/ab_detection.py`` checks it; docs/statistics.md has the
#: measurements).
AB_ROUNDS = 30
