"""Constants as integers: every value a fact holds is one int64 id, so relations are columns.

Small non-negative integers (costs, counters, sequence numbers) are their own id, so arithmetic
and ordering on them run on the columns directly. Lists (NDlog's path vectors) are hash-consed
cons cells: a non-empty list is the pair (first element, rest), interned like a row prefix, so
``f_concat(S, P)`` is one vectorised pair lookup, ``f_member(P, S)`` a vectorised walk down the
cells, and two million routes share their tails instead of holding two million tuples. Every
other value (node names, floats, large or negative numbers) is interned once. Interned
values (*atoms*) take ids from ``SMALL``, cons cells from ``CELLS``, so a cell costs only its
head and tail (int32) and its slot in the pair map, and an atom's Python object and JSON are
kept for atoms only (a best-routes view holds tens of millions of cells and a few thousand
atoms). All ids stay below 2**31, which lets two of them pack exactly into one int64 key
(``keys.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.hashmap import Int64Map
from netrules.engine.columnar.keys import pack
from netrules.facts import Value, value_to_json

__all__ = ["CELLS", "SMALL", "Values"]

#: Integers in [0, SMALL) are their own id; interned atoms take ids in [SMALL, CELLS), cons
#: cells in [CELLS, 2**31).
SMALL = 1 << 30
CELLS = SMALL + (1 << 28)
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
        self._objs: list[Value] = []  # per atom (id - SMALL)
        self._cache: np.ndarray | None = None
        self._filled = 0
        self._json: list[str | None] = []  # per atom, rendered on first use
        self._atom_rank = np.zeros(0, dtype=np.int64)  # per atom: its place by sort_key
        self._atom_number = np.zeros(0, dtype=bool)  # per atom: a number (not a string)
        self.head = np.zeros(0, dtype=np.int32)  # per cell (id - CELLS): first element
        self.tail = np.zeros(0, dtype=np.int32)  # and the rest of the list
        self.ncells = 0
        self._cells = Int64Map()
        self.nil = self._new(())

    def __len__(self) -> int:
        return len(self._objs) + self.ncells

    def nbytes(self) -> int:
        """The cells' arrays and pair map (atoms are few and not counted)."""
        return self.head.nbytes + self.tail.nbytes + self._cells.nbytes()

    # -- interning -------------------------------------------------------------------------
    def _new(self, v: Value) -> int:
        i = SMALL + len(self._objs)
        if i >= CELLS:
            raise OverflowError(f"more than {CELLS - SMALL} distinct values in one engine")
        self._objs.append(v)
        return i

    def _new_cells(self, h: np.ndarray, t: np.ndarray) -> np.ndarray:
        k0, m = self.ncells, len(h)
        if CELLS + k0 + m >= _LIMIT:
            raise OverflowError(f"more than {_LIMIT - CELLS} distinct lists in one engine")
        if k0 + m > len(self.head):
            cap = max(1024, 2 * (k0 + m))
            for name in ("head", "tail"):
                new = np.zeros(cap, dtype=np.int32)
                new[:k0] = getattr(self, name)[:k0]
                setattr(self, name, new)
        self.head[k0:k0 + m], self.tail[k0:k0 + m] = h, t
        self.ncells += m
        return np.arange(CELLS + k0, CELLS + k0 + m, dtype=np.int64)

    def cons(self, h: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Ids of the lists ``[h] + t`` (``t`` list ids), interned."""
        keys = pack(h, t)
        got = self._cells.get(keys)
        miss = got < 0
        if miss.any():
            uk, first, inv = np.unique(keys[miss], return_index=True, return_inverse=True)
            fresh = self._new_cells(h[miss][first], t[miss][first])
            self._cells.put_new(uk, fresh)
            got[miss] = fresh[inv]
        return got

    def cons_found(self, h: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Ids of the lists ``[h] + t`` where that cell was interned, else -1 (a negative
        ``t`` is a list never interned): every suffix of an interned list is interned, so a
        list whose first cell is not was never stored, and a check needs no new cell."""
        out = np.full(len(h), -1, dtype=np.int64)
        ok = np.flatnonzero((h >= 0) & (t >= 0))
        if len(ok):
            out[ok] = self._cells.get(pack(h[ok], t[ok]))
        return out

    def _id(self, v: Value, intern: bool) -> int | None:
        """The id of ``v``; interned when ``intern``, else None for a value never seen."""
        v = _canonical(v)
        if type(v) is int and 0 <= v < SMALL:
            return v
        if isinstance(v, tuple):
            cur = self.nil
            for x in reversed(v):
                h = self._id(x, intern)
                if h is None:
                    return None
                pair = (np.array([h]), np.array([cur]))
                cur = int(self.cons(*pair)[0] if intern else self._cells.get(pack(*pair))[0])
                if cur < 0:
                    return None
            return cur
        i = self._ids.get(v)
        if i is None and intern:
            i = self._ids[v] = self._new(v)
        return i

    def encode(self, v: Value) -> int:
        return self._id(v, True)  # type: ignore[return-value]

    def encode_many(self, vs: Iterable[Value]) -> np.ndarray:
        enc = self.encode
        return np.fromiter((enc(v) for v in vs), dtype=np.int64)

    def lookup(self, v: Value) -> int | None:
        """The id of ``v`` if it was ever seen (a small int always is), else None: a query
        constant nobody interned matches nothing, and interning it would only grow the map."""
        return self._id(v, False)

    # -- lists -----------------------------------------------------------------------------
    def is_list(self, ids: np.ndarray) -> np.ndarray:
        return (ids >= CELLS) | (ids == self.nil)

    def member(self, lists: np.ndarray, x: np.ndarray) -> np.ndarray:
        """1 where ``x`` is an element of the list, else 0 (``lists`` must be list ids)."""
        if not len(lists):
            return np.zeros(0, dtype=np.int64)
        return kernels.member(self.head, self.tail, np.int64(self.nil), np.int64(CELLS),
                              lists.astype(np.int64, copy=False),
                              x.astype(np.int64, copy=False))

    def order_rank(self, ids: np.ndarray) -> np.ndarray:
        """A rank per id that orders the values as ``facts.sort_key`` does (numbers, then
        strings, then lists element by element, a prefix first). Plain values rank by a
        rank of every atom kept until an atom is added; lists as a matrix of their elements'
        ranks (one compiled walk), so two million routes are ordered by ``lexsort``, not by
        tuples."""
        if not len(ids) or (ids < SMALL).all():
            return ids.copy()
        uniq, inv = np.unique(ids, return_inverse=True)
        lists = self.is_list(uniq)
        rank = np.empty(len(uniq), dtype=np.int64)
        plain = np.flatnonzero(~lists)
        top = 0
        if len(plain):
            rank[plain] = self._plain_rank(uniq[plain])
            top = int(rank[plain].max()) + 1
        cells = np.flatnonzero(lists)
        if len(cells):
            mat = kernels.list_elements(self.head, self.tail, np.int64(self.nil),
                                        np.int64(CELLS), uniq[cells].astype(np.int64))
            elems = mat >= 0
            er = np.full(mat.shape, -1, dtype=np.int64)
            if elems.any():
                er[elems] = self.order_rank(mat[elems])
            order = np.lexsort(er.T[::-1]) if er.shape[1] else np.arange(len(cells))
            rank[cells[order]] = top + np.arange(len(cells))
        return rank[inv]

    def least_in_groups(self, ids: np.ndarray, groups: np.ndarray) -> np.ndarray | None:
        """For list ids and a group (0..n-1) per id, the index of each group's least list by
        ``sort_key`` (the first of equal ones), compared from the front in one compiled
        pass; None when that pass cannot decide (an element is a list, or an atom is a
        number that must interleave with the small ints): use ``order_rank`` then."""
        return self.least_keyed(np.zeros(len(ids), dtype=np.int64), ids, groups)

    def least_keyed(self, keys: np.ndarray, ids: np.ndarray, groups: np.ndarray
                    ) -> np.ndarray | None:
        """``least_in_groups`` of the candidates with their group's least ``keys``."""
        if not len(ids) or not self.is_list(ids).all():
            return None
        self._rank_atoms()
        if self._atom_number.any():
            return None
        best = kernels.least_keyed_lists(
            self.head, self.tail, np.int64(self.nil), np.int64(CELLS), np.int64(SMALL),
            self._atom_rank, keys.astype(np.int64, copy=False),
            ids.astype(np.int64, copy=False), groups.astype(np.int64, copy=False),
            np.int64(int(groups.max()) + 1))
        return None if best[0] == -2 else best

    def _rank_atoms(self) -> None:
        """Rank every atom by ``sort_key``, again only once atoms were added since."""
        if len(self._atom_rank) == len(self._objs):
            return
        from netrules.facts import sort_key

        order = sorted(range(len(self._objs)), key=lambda k: sort_key(self._objs[k]))
        self._atom_rank = np.empty(len(self._objs), dtype=np.int64)
        self._atom_rank[order] = np.arange(len(order))
        self._atom_number = np.fromiter(
            (not isinstance(v, str | tuple) for v in self._objs), dtype=bool,
            count=len(self._objs))

    def _plain_rank(self, ids: np.ndarray) -> np.ndarray:
        """Order-preserving ranks of values that are not lists: a small int is its own rank
        and an atom ``SMALL`` plus its place among all atoms, unless a number is an atom
        (a float, a large or negative int), which must interleave with the small ints: then
        the values themselves are sorted."""
        atoms = ids >= SMALL
        if not atoms.any():
            return ids.copy()
        self._rank_atoms()
        k = ids[atoms] - SMALL
        if self._atom_number[k].any():
            from netrules.facts import sort_key

            vals = self.decode_column(ids)
            order = sorted(range(len(ids)), key=lambda j: sort_key(vals[j]))
            out = np.empty(len(ids), dtype=np.int64)
            out[order] = np.arange(len(ids))
            return out
        out = ids.copy()
        out[atoms] = SMALL + self._atom_rank[k]
        return out

    # -- decoding --------------------------------------------------------------------------
    def decode(self, i: int) -> Value:
        if i < SMALL:
            return i
        if i < CELLS:
            return self._objs[i - SMALL]
        out = []
        while i != self.nil:
            k = i - CELLS
            out.append(self.decode(int(self.head[k])))
            i = int(self.tail[k])
        return tuple(out)

    def _table(self) -> np.ndarray:
        """The interned values as an object array, grown by doubling (a batch that interns
        a few new values must not copy every value ever seen)."""
        n = len(self._objs)
        have = self._filled
        if self._cache is None or len(self._cache) < n:
            t = np.empty(max(64, 2 * n), dtype=object)
            if self._cache is not None:
                t[:have] = self._cache[:have]
            self._cache = t
        if have < n:
            t = self._cache
            for i in range(have, n):  # one by one: a list of equal tuples would broadcast
                t[i] = self._objs[i]
            self._filled = n
        return self._cache

    def decode_column(self, ids: np.ndarray) -> np.ndarray:
        """An object array of the values (small ints stay ints, lists become tuples)."""
        out = np.empty(len(ids), dtype=object)
        small = ids < SMALL
        if small.any():
            out[small] = ids[small].tolist()
        big = np.flatnonzero(~small)
        if len(big):
            cell = ids[big] >= CELLS
            plain = big[~cell]
            if len(plain):
                out[plain] = self._table()[ids[plain] - SMALL]
            for j in big[cell].tolist():
                out[j] = self.decode(int(ids[j]))
        return out

    def decode_rows(self, cols: np.ndarray) -> list[tuple]:
        """Rows of ids -> tuples of values (for output at the edges: views, deltas, errors)."""
        if len(cols) == 0 or cols.shape[1] == 0:
            return [()] * len(cols)
        decoded = [self.decode_column(cols[:, j]) for j in range(cols.shape[1])]
        return list(zip(*decoded, strict=True))

    def _json_of(self, i: int) -> str:
        if i < SMALL:
            return str(i)
        k = i - SMALL
        if i < CELLS and i != self.nil:
            while len(self._json) <= k:
                self._json.append(None)
            text = self._json[k]
            if text is None:
                text = self._json[k] = json.dumps(value_to_json(self._objs[k]),
                                                  separators=(",", ":"))
            return text
        parts = []
        while i != self.nil:
            k = i - CELLS
            parts.append(self._json_of(int(self.head[k])))
            i = int(self.tail[k])
        return "[" + ",".join(parts) + "]"

    def plain_json(self, start: int = 0) -> list[str]:
        """Canonical JSON text of every plain value (atom) from atom index ``start`` on, in
        id order: what a renderer caches once and takes from (``pipeline/texts.py``)."""
        return [self._json_of(SMALL + k) for k in range(start, len(self._objs))]

    def json_column(self, ids: np.ndarray) -> list[str]:
        """Canonical JSON text of each value (the store's form); a plain value's text is
        rendered once for the engine's life, a list's from its tail's text, once per call
        for every suffix the column's lists share (routes share their tails)."""
        j = self._json_of
        memo: dict[int, str] = {self.nil: "[]"}
        head, tail = self.head, self.tail

        def text(i: int) -> str:
            if i < CELLS:
                return str(i) if i < SMALL else j(i)
            got = memo.get(i)
            if got is not None:
                return got
            chain = []
            while i not in memo:  # down to a suffix already rendered
                chain.append(i)
                i = int(tail[i - CELLS])
            rest = memo[i]
            for c in reversed(chain):
                h = text(int(head[c - CELLS]))
                rest = memo[c] = "[" + h + ("]" if rest == "[]" else "," + rest[1:])
            return rest

        if len(ids) < 64:
            return [str(i) if i < SMALL else text(i) for i in ids.tolist()]
        uniq, inv = np.unique(ids, return_inverse=True)  # each distinct value rendered once
        texts = np.empty(len(uniq), dtype=object)
        texts[:] = [str(i) if i < SMALL else text(i) for i in uniq.tolist()]
        return texts[inv.reshape(-1)].tolist()

    def encode_rows(self, rows: Sequence[Sequence[Value]], arity: int) -> np.ndarray:
        out = np.empty((len(rows), arity), dtype=np.int64)
        enc = self.encode
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                out[i, j] = enc(v)
        return out
