"""Set operations on 1-d integer id arrays, by sorting, or by a bitmap where they are dense.

NumPy 2's ``np.unique`` without ``return_*`` builds a hash set first, and at the sizes a load
hands it that is the slowest way to dedupe integers: 6 M int64 ids took 8.1 s against 0.16 s
for one sort (NumPy 2.4.6, this machine). Every plain dedupe of ids in the engine and the
pipeline goes through here; ``tests/test_source_rules.py`` keeps it that way.
"""

from __future__ import annotations

import numpy as np

__all__ = ["distinct", "union"]

#: ``distinct`` marks ids in a bitmap, not sorts them, from this many ids ...
BITMAP_MIN = 4096
#: ... when they span at most this many values an id
BITMAP_SPAN = 16


def distinct(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` of a 1-d integer array, by one sort, or by a bitmap of the values'
    span when it is at most ``BITMAP_SPAN`` values an id: row ids mostly are, and a sort
    of them is the slow way (774,000 rows of a 1.3 M-row relation, americas' suspects of
    100 links down: sort 39 ms, bitmap 2.3; 50,000 of them 1.7 against 0.9 ms). NumPy 2's
    ``unique`` without ``return_*`` builds a hash set first: on the row ids a best-routes
    step dedupes it measured 3-6x slower than sorting (50,000 ids: 7.5 against 2.6 ms;
    500,000: 203 against 35 ms), and it was the largest single cost of a link event's
    steps."""
    if len(a) < 2:
        return a.copy()
    if len(a) >= BITMAP_MIN:
        lo, hi = int(a.min()), int(a.max())
        if hi - lo < BITMAP_SPAN * len(a):
            seen = np.zeros(hi - lo + 1, dtype=bool)
            seen[a - lo] = True
            out = np.flatnonzero(seen)
            out += lo
            return out.astype(a.dtype, copy=False)
    s = np.sort(a)
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d`` by ``distinct``."""
    return distinct(np.concatenate([a, b]))
