"""Exact int64 keys for rows of ids: two ids pack into one int64; longer rows are hash-consed.

A row's key is its identity (membership, replacement, index buckets), so it must be exact, not
a hash that may collide. Ids are below 2**31, so ``a << 31 | b`` is exact for two columns. For
three or more, the prefix is *interned* pair by pair (``Pairs``): (a, b) gets a pair id below
2**31 the first time it is seen, and ((a, b), c) packs like a plain pair. Probes only look up
(``intern=False``): a prefix nobody stored matches nothing.
"""

from __future__ import annotations

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.hashmap import Int64Map

__all__ = ["Pairs", "group_ids", "pack", "unique_rows"]

_SHIFT = np.int64(31)
#: rows interned per compiled call: the map reserves room for every prefix of a chunk
_CHUNK = 1 << 16


def pack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.astype(np.int64, copy=False) << _SHIFT) | b


def group_ids(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows of a 2-d id array, the index of each row's one among them)."""
    n, w = a.shape
    if n == 0 or w == 0:
        return a[: min(n, 1)], np.zeros(n, dtype=np.int64)
    if w <= 2:
        k = a[:, 0].astype(np.int64) if w == 1 else pack(a[:, 0], a[:, 1])
        order = np.argsort(k, kind="stable")
        sk = k[order]
    else:
        order = np.lexsort(a.T[::-1])
        sk = a[order]
    first = np.empty(n, dtype=bool)
    first[0] = True
    if sk.ndim == 1:
        np.not_equal(sk[1:], sk[:-1], out=first[1:])
    else:
        first[1:] = np.any(sk[1:] != sk[:-1], axis=1)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(first) - 1
    return a[order[first]], inv


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows of a 2-d id array in row order, index of each one's first copy in
    ``a``). ``np.unique(axis=0)`` compares rows as structured records, several times slower
    than sorting one int64 column: two ids pack into one exactly, wider rows are lexsorted."""
    n, w = a.shape
    if n == 0 or w == 0:
        idx = np.arange(min(n, 1), dtype=np.int64)
        return a[idx], idx
    if w <= 2:
        k = a[:, 0] if w == 1 else pack(a[:, 0], a[:, 1])
        _, idx = np.unique(k, return_index=True)
        return a[idx], idx
    order = np.lexsort(a.T[::-1])
    s = a[order]
    first = np.r_[True, np.any(s[1:] != s[:-1], axis=1)]
    return s[first], order[first]


class Pairs:
    """Pair ids for row prefixes, shared by every relation of one engine."""

    def __init__(self) -> None:
        self._map = Int64Map()

    def __len__(self) -> int:
        return len(self._map)

    def nbytes(self) -> int:
        return self._map.nbytes()

    def key(self, cols: list[np.ndarray], *, intern: bool) -> np.ndarray:
        """The key of each row given as columns; -1 where ``intern`` is off and a prefix was
        never stored (or an id is negative: a constant never interned)."""
        if len(cols) == 1:
            return cols[0].copy()
        if len(cols) == 2:
            k = pack(cols[0], cols[1])
            k[(cols[0] < 0) | (cols[1] < 0)] = -1
            return k
        return self.row_keys(np.stack(cols, axis=1), intern=intern)

    def row_keys(self, rows: np.ndarray, *, intern: bool) -> np.ndarray:
        """``key`` of a 2-d array of ids, three or more columns: one compiled pass
        (``kernels.chain_keys``, or ``chain_intern`` adding the prefixes never seen)."""
        m = self._map
        if not intern:
            return kernels.chain_keys(m.table, m.vals, np.int64(m.mask), m.shift, rows)
        out = np.empty(len(rows), dtype=np.int64)
        for at in range(0, len(rows), _CHUNK):  # room for a chunk, not a load, at a time
            part = rows[at:at + _CHUNK]
            m.reserve(len(part) * (rows.shape[1] - 2))
            out[at:at + len(part)], added = kernels.chain_intern(
                m.table, m.vals, np.int64(m.mask), m.shift, part, np.int64(len(m)))
            m.size += int(added)
        return out
