"""Constants as integers: every value a fact holds is one int64 id, so relations are columns.

Small non-negative integers (costs, counters, sequence numbers) are their own id, so arithmetic
and ordering on them run on the columns directly; every other value (node names, floats, lists,
large or negative numbers) is interned once, to an id at or above ``SMALL``. Ids stay below
2**31, which lets two of them pack exactly into one int64 key (see ``keys.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from netrules.facts import Value

__all__ = ["SMALL", "Values"]

#: Integers in [0, SMALL) are their own id; interned values take ids from SMALL upwards.
SMALL = 1 << 30
_LIMIT = 1 << 31


def _canonical(v: Value) -> Value:
    """One representative per equal value: ``True`` is 1 and an integral float is its int, as
    Python's own equality (and so the set semantics of facts) already has it."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


class Values:
    """The dictionary of one engine: value <-> id, both ways vectorised where it matters."""

    def __init__(self) -> None:
        self._ids: dict[Value, int] = {}
        self._objs: list[Value] = []
        self._cache: np.ndarray | None = None
        self._json: list[str] = []

    def __len__(self) -> int:
        return len(self._objs)

    def encode(self, v: Value) -> int:
        v = _canonical(v)
        if type(v) is int and 0 <= v < SMALL:
            return v
        i = self._ids.get(v)
        if i is None:
            i = SMALL + len(self._objs)
            if i >= _LIMIT:
                raise OverflowError("more than 2**30 distinct values in one engine")
            self._ids[v] = i
            self._objs.append(v)
        return i

    def encode_many(self, vs: Iterable[Value]) -> np.ndarray:
        enc = self.encode
        return np.fromiter((enc(v) for v in vs), dtype=np.int64)

    def lookup(self, v: Value) -> int | None:
        """The id of ``v`` if it was ever seen (a small int always is), else None: a query
        constant nobody interned matches nothing, and interning it would only grow the map."""
        v = _canonical(v)
        if type(v) is int and 0 <= v < SMALL:
            return v
        return self._ids.get(v)

    def decode(self, i: int) -> Value:
        return i if i < SMALL else self._objs[i - SMALL]

    def _table(self) -> np.ndarray:
        if self._cache is None or len(self._cache) != len(self._objs):
            t = np.empty(len(self._objs), dtype=object)
            t[:] = self._objs
            self._cache = t
        return self._cache

    def decode_column(self, ids: np.ndarray) -> np.ndarray:
        """An object array of the values (small ints stay ints)."""
        out = np.empty(len(ids), dtype=object)
        small = ids < SMALL
        if small.any():
            out[small] = ids[small].tolist()
        if not small.all():
            out[~small] = self._table()[ids[~small] - SMALL]
        return out

    def decode_rows(self, cols: np.ndarray) -> list[tuple]:
        """Rows of ids -> tuples of values (for output at the edges: views, deltas, errors)."""
        if len(cols) == 0 or cols.shape[1] == 0:
            return [()] * len(cols)
        decoded = [self.decode_column(cols[:, j]) for j in range(cols.shape[1])]
        return list(zip(*decoded, strict=True))

    def json_column(self, ids: np.ndarray) -> list[str]:
        """Canonical JSON text of each value (the store's form), each distinct value
        rendered once for the engine's life."""
        if len(self._json) < len(self._objs):
            import json

            from netrules.facts import value_to_json

            for v in self._objs[len(self._json):]:
                self._json.append(json.dumps(value_to_json(v), separators=(",", ":")))
        texts = self._json
        return [str(i) if i < SMALL else texts[i - SMALL] for i in ids.tolist()]

    def encode_rows(self, rows: Sequence[Sequence[Value]], arity: int) -> np.ndarray:
        out = np.empty((len(rows), arity), dtype=np.int64)
        enc = self.encode
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                out[i, j] = enc(v)
        return out
