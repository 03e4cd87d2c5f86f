"""Kept supports as columns: which rule instance holds each derived fact up.

A fact is named by a *gid*, ``relation code << 34 | row``. A support is a row of ``head``,
``rule`` and ``body`` (padded with -1 to the widest rule), stored as int32 *rows*: a rule fixes
the relation of its head and of each body atom, so the codes are kept once per rule and the
gids rebuilt on the way out (``heads``, ``bodies``), which halves the largest arrays of a
backbone's view. A multimap finds the supports a body fact takes part in (the kill phase's
frontier step); a head's supports are found from
``first`` (per relation, per row: the first of the block of supports the fact was given when
it last became alive; a fact's kept supports are always made together, so they are adjacent).
At most K supports are kept per fact, each well-founded (its same-stratum body facts have a
lower rank than its head), so following supports always ends at base facts: paper 000's
acyclic derivations without its exponential derivation sets.
"""

from __future__ import annotations

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.relation import Buckets, grow
from netrules.engine.columnar.sets import distinct

__all__ = ["Supports", "gid", "split_gid"]

_ROW_BITS = np.int64(34)
_ROW_MASK = np.int64((1 << 34) - 1)


def gid(code: int, rows: np.ndarray) -> np.ndarray:
    return (np.int64(code) << _ROW_BITS) | rows


def split_gid(g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return g >> _ROW_BITS, g & _ROW_MASK


class Supports:
    def __init__(self, width: int, k: int = 2) -> None:
        self.width = max(width, 1)
        self.k = k
        self.first: dict[int, np.ndarray] = {}
        self.n = 0
        cap = 1024
        self.head = np.zeros(cap, np.int32)
        self.rule = np.zeros(cap, np.int16)
        self.body = np.full((cap, self.width), -1, np.int32)
        self.alive = np.zeros(cap, bool)
        # per rule id: the code of its head's relation and of each body atom's (-1: none yet)
        self.head_code = np.full(0, -1, np.int64)
        self.body_code = np.full((0, self.width), -1, np.int64)
        self.count = 0
        # supports by body fact, one multimap per body relation keyed by int32 row
        self.by_body: dict[int, Buckets] = {}
        self.touched: list[np.ndarray] = []  # head gids whose supports changed this batch
        self._reader_codes: dict[int, set[int]] | None = None  # ``_readers``

    _ARRAYS = ("alive", "head", "rule", "body")

    def _reserve(self, need: int) -> None:
        grow(self, self._ARRAYS, self.n, need, {"body": -1})

    def _learn(self, head: np.ndarray, rule: np.ndarray, body: np.ndarray) -> None:
        """Record the relation codes of rules seen for the first time."""
        top = int(rule.max()) + 1
        if top > np.iinfo(np.int16).max:
            raise OverflowError("more than 32767 rules in one columnar program")
        if top > len(self.head_code):
            hc = np.full(top, -1, np.int64)
            hc[: len(self.head_code)] = self.head_code
            bc = np.full((top, self.width), -1, np.int64)
            bc[: len(self.body_code)] = self.body_code
            self.head_code, self.body_code = hc, bc
        self._reader_codes = None
        new, at = np.unique(rule, return_index=True)
        fresh = self.head_code[new] < 0
        new, at = new[fresh], at[fresh]
        if len(new):
            self.head_code[new] = head[at] >> _ROW_BITS
            b = body[at]
            self.body_code[new, : body.shape[1]] = np.where(b >= 0, b >> _ROW_BITS, -1)

    def _index(self, ids: np.ndarray, body: np.ndarray, used: list[list[int]],
               brows: np.ndarray) -> None:
        """Index supports ``ids`` by each body column's facts; ``used`` per column: the least
        and largest relation code in it and how many entries are not -1; ``brows`` the body
        rows by column."""
        for j, (lo, hi, count) in enumerate(used):
            if not count:
                continue
            rows, sid = brows[j], ids
            if count < len(rows):
                keep = rows >= 0
                rows, sid = rows[keep], ids[keep]
            if lo == hi:
                self._bucket(lo).append(rows, sid)
                continue
            col = body[:, j]
            code = (col[col >= 0] if count < len(col) else col) >> _ROW_BITS
            # a few codes apart (a stratum's rules read a few relations): a mask each, not
            # a sort of the column to find them
            for c in range(lo, hi + 1) if hi - lo < 8 else distinct(code).tolist():
                sel = code == c
                if sel.any():
                    self._bucket(c).append(rows[sel], sid[sel])

    def _bucket(self, code: int) -> Buckets:
        """The index of supports by body fact of relation ``code``, made on first use."""
        b = self.by_body.get(code)
        if b is None:
            b = self.by_body[code] = Buckets()
        return b

    def heads(self, sids: np.ndarray) -> np.ndarray:
        """Head gids of the given supports."""
        return (self.head_code[self.rule[sids]] << _ROW_BITS) | self.head[sids]

    def bodies(self, sids: np.ndarray) -> np.ndarray:
        """Body gids of the given supports, a row each, -1 past the rule's atoms."""
        rows = self.body[sids].astype(np.int64)
        return np.where(rows >= 0, (self.body_code[self.rule[sids]] << _ROW_BITS) | rows, -1)

    def _first_of_code(self, code: int, need: int) -> np.ndarray:
        arr = self.first.get(code)
        if arr is None or len(arr) < need:
            grown = np.full(max(need, 2 * (0 if arr is None else len(arr)), 16), -1, np.int32)
            if arr is not None:
                grown[: len(arr)] = arr
            arr = self.first[code] = grown
        return arr

    def add(self, head: np.ndarray, rule: np.ndarray | int, body: np.ndarray) -> np.ndarray:
        """Append supports; each head's supports must come together, adjacent, and be all
        the supports it is given (a fact gets its kept supports when it becomes alive)."""
        m = len(head)
        if m == 0:
            return np.empty(0, np.int64)
        start = self.n
        if start + m >= 2**31:
            raise OverflowError("more than 2**31 supports in one columnar program")
        self._reserve(start + m)
        r = (np.full(m, rule, dtype=np.int64) if isinstance(rule, (int, np.integer))
             else np.asarray(rule, dtype=np.int64))
        head = np.ascontiguousarray(head, dtype=np.int64)
        body = np.ascontiguousarray(body, dtype=np.int64)
        used = np.empty((body.shape[1], 3), dtype=np.int64)
        brows = np.empty((body.shape[1], m), dtype=np.int32)
        starts, info = kernels.store_supports(head, r, body, np.int64(start), self.head,
                                              self.rule, self.body, self.alive, used, brows)
        lo, hi, top, rlo, rhi = info.tolist()
        if rhi >= len(self.head_code) or (
                self.head_code[rlo] < 0 if rlo == rhi else (self.head_code[r] < 0).any()):
            self._learn(head, r, body)
        self.n += m
        self.count += m
        ids = np.arange(start, start + m, dtype=np.int64)
        self._index(ids, body, used.tolist(), brows)
        if lo == hi:  # (the usual call: one relation's facts)
            kernels.mark_first(self._first_of_code(lo, top + 1), head, starts, np.int64(start))
        else:
            first = head[starts]
            code, rows = first >> _ROW_BITS, first & _ROW_MASK
            for c in distinct(code).tolist():
                sel = code == c
                kernels.mark_first(self._first_of_code(c, int(rows[sel].max()) + 1), head,
                                   starts[sel], np.int64(start))
        self.touched.append(head)
        return ids

    def of_heads(self, heads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(head index, support id) of every alive kept support of the given head gids."""
        code, rows = split_gid(heads)
        s0 = np.full(len(heads), -1, np.int64)
        for c in distinct(code).tolist():
            arr = self.first.get(c)
            if arr is None:
                continue
            sel = (code == c) & (rows < len(arr))
            s0[sel] = arr[rows[sel]]
        qis, sids = [], []
        for j in range(self.k):
            cand = s0 + j
            ok = (s0 >= 0) & (cand < self.n)
            qi = np.flatnonzero(ok)
            c = cand[qi]
            good = self.alive[c] & (self.heads(c) == heads[qi])
            qis.append(qi[good])
            sids.append(c[good])
        return np.concatenate(qis), np.concatenate(sids)

    def using(self, gids: np.ndarray) -> np.ndarray:
        """Ids of the alive supports whose body holds one of ``gids`` (may repeat)."""
        if not len(gids) or not self.count:
            return np.empty(0, np.int64)
        code, rows = split_gid(gids)
        lo, hi = int(code.min()), int(code.max())
        parts = []
        for c in (lo,) if lo == hi else distinct(code).tolist():
            b = self.by_body.get(c)
            if b is not None:
                sel = rows if lo == hi else rows[code == c]
                parts.append(b.probe(sel.astype(np.int32))[1])
        if not parts:
            return np.empty(0, np.int64)
        sids = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return sids[self.alive[sids]]

    def of(self, head_gid: int) -> np.ndarray:
        return self.of_heads(np.array([head_gid], dtype=np.int64))[1]

    def kill(self, sids: np.ndarray) -> np.ndarray:
        """Kill distinct alive supports; returns their head gids."""
        self.alive[sids] = False
        self.count -= len(sids)
        heads = self.heads(sids)
        self.touched.append(heads)
        return heads

    def drop_heads(self, codes: list[int]) -> None:
        """Kill every alive support whose head is in one of the relations ``codes``, for a
        stratum derived afresh: its facts get all their supports again, so the dropped ones
        are not recorded as ``touched``."""
        n = self.n
        if not n:
            return
        newid = np.empty(n, np.int32)  # (ids below 2**31: ``add`` checks)
        dropped, kept = kernels.drop_heads(self.rule, self.head_code, self.alive, np.int64(n),
                                           np.array(codes, dtype=np.int64), newid)
        self.count -= int(dropped)
        for c in codes:
            if c in self.first:
                self.first[c][:] = -1
        # a body relation only rules of the dropped heads read now indexes dead supports
        # alone: its index is emptied, not renumbered entry by entry (a stratum derived
        # afresh is most of the supports, so this is most of the compaction's work)
        gone = set(codes)
        for c in list(self.by_body):
            readers = self._readers().get(c)
            if readers and readers <= gone:
                del self.by_body[c]
        # now, while every entry it renumbers is one it drops
        self._compact(newid, int(kept), gone)

    def _readers(self) -> dict[int, set[int]]:
        """Per body relation code, the head relations of the rules reading it (a few rules:
        made again when ``_learn`` meets a new one)."""
        got = self.__dict__.get("_reader_codes")  # (None in a store pickled before it)
        if got is None:
            out: dict[int, set[int]] = {}
            for h, b in zip(self.head_code.tolist(), self.body_code.tolist(), strict=True):
                for c in b:
                    if c >= 0:
                        out.setdefault(c, set()).add(h)
            got = self._reader_codes = out
        return got

    def first_of(self, heads: np.ndarray) -> np.ndarray:
        """Per head gid, its alive support of least id (the one the store shows), or -1."""
        out = np.full(len(heads), -1, dtype=np.int64)
        if not len(heads):
            return out
        qi, sids = self.of_heads(heads)
        if len(sids):
            order = np.lexsort((sids, qi))
            qi, sids = qi[order], sids[order]
            first = np.r_[True, qi[1:] != qi[:-1]]
            out[qi[first]] = sids[first]
        return out

    # -- a relation's rows renumbered (compaction.py) ---------------------------------------
    def _naming(self, code: int) -> tuple[np.ndarray | None, list[tuple[int, np.ndarray]]]:
        """Where the supports name rows of relation ``code``: a mask of the supports whose
        head is one (None: none), and per body column a mask of those whose atom there is."""
        n = self.n
        rule = self.rule[:n]
        head = self.head_code[rule] == code if len(self.head_code) else np.zeros(n, bool)
        body = []
        for j in range(self.width):
            m = self.body_code[rule, j] == code if len(self.body_code) else np.zeros(n, bool)
            if m.any():
                body.append((j, m))
        return (head if head.any() else None), body

    def names_dead(self, code: int, alive: np.ndarray) -> bool:
        """Whether an alive support names a row of relation ``code`` that is not alive
        (``alive``): then its rows cannot be renumbered by dropping the dead ones."""
        head, body = self._naming(code)
        live = self.alive[: self.n]
        if head is not None and not alive[self.head[: self.n][head & live]].all():
            return True
        return any(not alive[self.body[: self.n, j][m & live]].all() for j, m in body)

    def renumber_rows(self, code: int, new: np.ndarray) -> None:
        """Rename the rows of relation ``code`` that the supports hold by ``new`` (a
        compaction's: old row -> new row, -1 dropped; it keeps the rows' order). Every
        support must be alive and name alive rows (``compact(every=True)``,
        ``names_dead``)."""
        head, body = self._naming(code)
        if head is not None:
            h = self.head[: self.n]
            h[head] = new[h[head]]
        for j, m in body:
            col = self.body[: self.n, j]
            col[m] = new[col[m]]
        arr = self.first.get(code)
        if arr is not None:
            m = min(len(arr), len(new))
            kept = np.flatnonzero(new[:m] >= 0)
            first = np.full(max(16, len(kept) + len(kept) // 8), -1, np.int32)
            first[new[kept]] = arr[kept]
            self.first[code] = first
        index = self.by_body.get(code)
        if index is not None:
            index.rekey(new)

    def nbytes(self) -> int:
        per = 4 + 2 + 4 * self.width + 1
        return (per * len(self.alive) + sum(b.nbytes() for b in self.by_body.values())
                + sum(a.nbytes for a in self.first.values()))

    def trim(self) -> None:
        """Give back the growth slack after a large batch (see ``Relation.trim``)."""
        cap = len(self.alive)
        if self.n < 65_536 or cap * 2 < self.n * 3:
            return
        keep = self.n + self.n // 8
        for name in self._ARRAYS:
            setattr(self, name, getattr(self, name)[:keep].copy())

    def settle(self) -> None:
        """Sort a large batch's appended index entries now (the batch pays, not the next)."""
        for b in self.by_body.values():
            if sum(len(k) for k, _ in b.pending) > 65_536:
                b.settle()

    def compact(self, every: bool = False) -> None:
        """Drop dead supports (link flaps leave them behind) once they outnumber the living,
        or, with ``every``, whatever their number (a relation's compaction renumbers the
        rows the living name: ``renumber_rows``); support ids are transient, so renumbering
        them is free."""
        if every or self._due(self.count):
            newid = np.empty(self.n, np.int32)
            _, kept = kernels.drop_heads(self.rule, self.head_code, self.alive,
                                         np.int64(self.n), np.empty(0, np.int64), newid)
            self._compact(newid, int(kept), frozenset(), every)

    def _due(self, kept: int) -> bool:
        return self.n >= 4096 and self.n >= 2 * kept

    def _compact(self, newid: np.ndarray, kept: int, cleared: set[int] | frozenset[int],
                 every: bool = False) -> None:
        """Compaction to the ``kept`` alive supports numbered by ``newid``, if ``_due`` (or
        ``every``). ``cleared``: relations whose ``first`` holds no support (``drop_heads``
        just emptied it), kept as they are."""
        if not every and not self._due(kept):
            return
        if kept == self.n:
            return  # nothing dead: every id stays
        # each fact's block start moves to its first surviving support (read before the
        # supports move)
        self.first = {c: kernels.first_kept(arr, self.alive, self.head, self.rule,
                                            self.head_code, np.int64(c), np.int64(self.k),
                                            np.int64(self.n), newid)
                      if c not in cleared else arr for c, arr in self.first.items()}
        # the kept supports copied once, into arrays with room to grow
        cap = max(1024, kept + kept // 4)
        head, rule = np.empty(cap, self.head.dtype), np.empty(cap, self.rule.dtype)
        body = np.empty((cap, self.width), self.body.dtype)
        kernels.move_kept(newid, np.int64(self.n), self.head, self.rule, self.body, head, rule,
                          body)
        head[kept:], rule[kept:], body[kept:] = 0, 0, -1  # the room only: the rest is written
        self.head, self.rule, self.body = head, rule, body
        self.alive = np.zeros(cap, bool)
        self.alive[:kept] = True
        self.n = self.count = kept
        for b in self.by_body.values():  # the index keeps its sorted runs, renumbered
            b.renumber(newid)
        self.by_body = {c: b for c, b in self.by_body.items() if b.n}
