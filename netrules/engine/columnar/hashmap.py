"""A hash map from int64 keys to values below 2**31, probed and filled a whole array at a time.

Open addressing with linear probing over two NumPy arrays, probed by compiled loops
(``kernels.py``): one changed fact costs about a microsecond and a million a fraction of a
second, so the map is what lets maintenance stay proportional to the change while a view
holds millions of rows.
Keys must be non-negative (the packed keys of ``keys.py`` are). Values are rows and ids, all
below 2**31 (``values.py``), so they are kept as int32: a quarter of a backbone's view is map.
"""

from __future__ import annotations

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.sets import distinct

__all__ = ["Int64Map"]

_EMPTY = kernels.EMPTY
_GONE = kernels.GONE


class Int64Map:
    def __init__(self, capacity: int = 64) -> None:
        cap = 64
        while cap < capacity * 2:
            cap *= 2
        self._alloc(cap)
        self.size = 0

    def _alloc(self, cap: int) -> None:
        self._keys = np.full(cap, _EMPTY, dtype=np.int64)
        self._vals = np.zeros(cap, dtype=np.int32)
        self._mask = cap - 1
        self._shift = np.uint64(64 - (cap.bit_length() - 1))
        self._gone = 0

    def __len__(self) -> int:
        return self.size

    # the open-addressing arrays, for compiled loops that chain lookups (``kernels``)
    @property
    def table(self) -> np.ndarray:
        return self._keys

    @property
    def vals(self) -> np.ndarray:
        return self._vals

    @property
    def mask(self) -> int:
        return self._mask

    @property
    def shift(self) -> np.uint64:
        return self._shift

    def nbytes(self) -> int:
        return self._keys.nbytes + self._vals.nbytes

    def _find_slots(self, keys: np.ndarray) -> np.ndarray:
        """Slot of each key, or -1 where absent."""
        if len(keys) == 0 or self.size == 0:
            return np.full(len(keys), -1, dtype=np.int64)
        return kernels.find_slots(self._keys, np.int64(self._mask), self._shift,
                                  keys.astype(np.int64, copy=False))

    def get(self, keys: np.ndarray, default: int = -1) -> np.ndarray:
        if len(keys) == 0 or self.size == 0:
            return np.full(len(keys), default, dtype=np.int64)
        return kernels.lookup(self._keys, self._vals, np.int64(self._mask), self._shift,
                              keys.astype(np.int64, copy=False), np.int64(default))

    def contains(self, keys: np.ndarray) -> np.ndarray:
        return self._find_slots(keys) >= 0

    def put(self, keys: np.ndarray, vals: np.ndarray) -> None:
        """Insert or overwrite; ``keys`` must be distinct within the call."""
        if len(keys) == 0:
            return
        slots = self._find_slots(keys)
        hit = slots >= 0
        if hit.any():
            self._vals[slots[hit]] = vals[hit]
        new = ~hit
        if not new.any():
            return
        keys, vals = keys[new], vals[new]
        if (self.size + self._gone + len(keys)) * 10 > 7 * len(self._keys):
            self._grow(self.size + len(keys))
        self._place(keys, vals)
        self.size += len(keys)

    def put_new(self, keys: np.ndarray, vals: np.ndarray) -> None:
        """Insert keys known to be absent and distinct (a caller that just looked them up
        need not pay the lookup twice)."""
        if not len(keys):
            return
        if (self.size + self._gone + len(keys)) * 10 > 7 * len(self._keys):
            self._grow(self.size + len(keys))
        self._place(keys, vals)
        self.size += len(keys)

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more keys without growing (compiled inserts cannot grow)."""
        if (self.size + self._gone + extra) * 10 > 7 * len(self._keys):
            self._grow(self.size + extra)

    def get_or_add(self, keys: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray]:
        """The value of each non-negative key, the absent ones inserted with ``start``,
        ``start + 1``, ... in order of first appearance; returns (values, index of each
        inserted key's first appearance)."""
        if not len(keys):
            return np.empty(0, np.int64), np.empty(0, np.int64)
        self.reserve(len(keys))
        out, fresh = kernels.get_or_add(self._keys, self._vals, np.int64(self._mask),
                                        self._shift, keys.astype(np.int64, copy=False),
                                        np.int64(start))
        self.size += len(fresh)
        return out, fresh

    def _place(self, keys: np.ndarray, vals: np.ndarray) -> None:
        self._gone -= kernels.place(self._keys, self._vals, np.int64(self._mask), self._shift,
                                    keys.astype(np.int64, copy=False),
                                    vals.astype(np.int32, copy=False))

    def delete(self, keys: np.ndarray) -> int:
        slots = self._find_slots(keys)
        slots = distinct(slots[slots >= 0])
        self._keys[slots] = _GONE
        self.size -= len(slots)
        self._gone += len(slots)
        return len(slots)

    def _grow(self, need: int) -> None:
        live = self._keys >= 0
        keys, vals = self._keys[live], self._vals[live]
        cap = 64
        while cap * 7 < need * 10 + 10:  # at most 70% full, so 35-70% after growing
            cap *= 2
        self._alloc(cap)
        self._place(keys, vals)

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        live = self._keys >= 0
        return self._keys[live], self._vals[live]
