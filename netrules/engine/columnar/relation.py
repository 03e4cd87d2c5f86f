"""One relation as columns: rows of ids, a key map, per-row state, and probe indexes.

Rows do not move while facts come and go. Deleting a fact clears ``alive`` and inserting it
again revives the same row, so supports and indexes that name rows stay valid; only between
batches, once a relation's dead rows outnumber its facts at their peak, are they dropped
and the rows renumbered, wherever they are named (``compaction.py``). Per-row state is
plain arrays: ``rank`` (derivation height inside its stratum, paper 000's acyclic
derivations), ``nsup`` (kept supports still standing), and ``touched``/``tbefore`` (whether
the batch under way touched the row, and if so whether it was alive before: the old view,
without a copy; the batch clears ``touched`` when it ends).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.hashmap import Int64Map
from netrules.engine.columnar.keys import Pairs
from netrules.engine.columnar.rowindex import RowIndex

__all__ = ["Buckets", "KeyedRows", "Relation", "RowSet", "expand", "grow"]

#: Runs of a multimap merge while the older is at most MERGE times the newer.
MERGE = 4
#: Row arrays past this many rows grow by a quarter, not double (``grow``); ``trim`` gives
#: back slack only past half again the rows, what doubling leaves.
_LARGE = 1 << 20
#: Probes of a multimap with more entries than this are sorted first.
SORTED_PROBES = 1 << 18
#: runs of a kind ``kernels.kill_reach`` takes at once (an index with more is read run by run)
KILL_RUNS = 4
_NONE = np.empty(0, np.int32)


def grow(obj: object, names: tuple[str, ...], used: int, need: int,
         fill: dict[str, int] | None = None) -> None:
    """Grow ``obj``'s parallel arrays (the first ``used`` rows kept) until ``need`` fit:
    doubling while small, by a quarter past a million rows. A relation that grows a little
    every event (every new path is a new row) then copies once per quarter, where doubling
    left half the arrays empty for ``trim`` to copy again after the batch: 40-90 ms an
    event on americas best routes, every few events."""
    cap = len(getattr(obj, names[0]))
    if need <= cap:
        return
    while cap < need:
        cap = cap * 2 if cap < _LARGE else cap + cap // 4
    for name in names:
        old = getattr(obj, name)
        new = np.full((cap, *old.shape[1:]), (fill or {}).get(name, 0), dtype=old.dtype)
        new[:used] = old[:used]
        setattr(obj, name, new)


def expand(skeys: np.ndarray, srows: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (probe index, row) whose key equals the probe's, from a key-sorted run."""
    return kernels.expand(skeys, srows, q.astype(skeys.dtype, copy=False))


class RowSet:
    """Membership in a set of rows: a mask when the set is a sizeable part of the relation,
    a sorted array otherwise (a step of a link event moves a few rows of millions, and a
    mask per step would cost the millions)."""

    def __init__(self, n: int, rows: np.ndarray) -> None:
        if len(rows) * 64 >= n:
            self.mask: np.ndarray | None = np.zeros(n, dtype=bool)
            self.mask[rows] = True
        else:
            self.mask, self.rows = None, np.sort(rows)  # a repeat does no harm

    def has(self, rows: np.ndarray) -> np.ndarray:
        m = self.mask
        if m is not None:
            inside = rows < len(m)  # rows made after the set are not in it
            hit = np.zeros(len(rows), dtype=bool)
            hit[inside] = m[rows[inside]]
            return hit
        if not len(self.rows):
            return np.zeros(len(rows), dtype=bool)
        at = np.searchsorted(self.rows, rows)
        at[at == len(self.rows)] = 0
        return self.rows[at] == rows


class KeyedRows:
    """A few stored rows of a relation, found by key in a sorted array of their own keys:
    the suspects a rederivation may revive. A candidate probes this instead of the
    relation's hash map, whose millions of slots miss the cache on every probe."""

    def __init__(self, rel: Relation, rows: np.ndarray) -> None:
        self.rel = rel
        keys = self._keys(rel.cols[rows])
        order = np.argsort(keys)
        self.keys, self.rows = keys[order], rows[order]

    def _keys(self, cols: np.ndarray) -> np.ndarray:
        if self.rel.arity == 0:
            return np.zeros(len(cols), np.int64)
        return self.rel.keys(cols, intern=False)

    def find(self, cols: np.ndarray) -> np.ndarray:
        """Row of each given row of ids, -1 where it is not one of these rows."""
        if not len(self.keys):
            return np.full(len(cols), -1, np.int64)
        k = self._keys(cols)
        at = np.searchsorted(self.keys, k)
        at[at == len(self.keys)] = 0
        return np.where((self.keys[at] == k) & (k >= 0), self.rows[at], -1)


_NO_KEYS = np.zeros(0, np.int64)
_NO_OFFSETS = np.zeros(0, np.int32)


def _fit(a: np.ndarray, of: int) -> np.ndarray:
    """``a``, a view of an array sized for ``of`` entries, copied out when it holds under
    nine tenths of them (the slack would outlive the run)."""
    return a.copy() if len(a) < of - of // 10 else a


class _Offsets(NamedTuple):
    """A large run's keys as offsets: key ``x``'s entries are ``off[x]:off[x + 1]`` of its
    values (``kernels.dense_offsets``). A probe is two reads where a binary search in a
    run of millions missed the cache at every step, and the offsets are fewer bytes than
    the keys they replace wherever keys repeat (a backbone's supports: 1.6 a fact)."""

    off: np.ndarray
    dtype: np.dtype  # the keys' own (merges rebuild them)

    def keys(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.off) - 1, dtype=self.dtype), np.diff(self.off))


Run = tuple["np.ndarray | _Offsets", np.ndarray]


class Buckets:
    """A multimap from integer keys (int64, or int32 where the caller appends them so) to
    values below 2**31 (rows, support ids: kept as int32, given back as int64), as a
    log-structured set of key-sorted runs. Appends are only recorded; the first probe after
    them sorts what was recorded as one run, and runs of similar size merge (a binary
    counter), so an entry is re-sorted O(log n) times over its life and a probe searches
    O(log n) runs. A load that appends round after round and never probes pays one sort.
    A run of more than ``dense_above`` entries over a dense range of keys keeps them as
    offsets (``_Offsets``): on a backbone a kill step asks the supports' index a few
    thousand facts at a time, and a binary search of the largest run cost about 1 µs a
    probe (americas, ten links down: 2-3 ms a step, 15-20 steps a kill)."""

    #: runs of more entries than this keep their keys as offsets
    dense_above = SORTED_PROBES

    def __init__(self, keys: np.ndarray | None = None, vals: np.ndarray | None = None) -> None:
        self.runs: list[Run] = []
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []
        self.n = 0
        if keys is not None and len(keys):
            self.append(keys, vals)  # type: ignore[arg-type]

    def append(self, keys: np.ndarray, vals: np.ndarray) -> None:
        if len(keys):
            self.pending.append((keys, vals.astype(np.int32)))
            self.n += len(keys)

    def _run(self, keys: np.ndarray, vals: np.ndarray) -> Run:
        """A key-sorted run, its keys as offsets if it is large and they are dense: rows,
        spanning at most twice as many keys as the run has entries (else the offsets would
        outweigh the keys)."""
        if len(keys) > max(self.dense_above, 0) and keys[0] >= 0 and keys[-1] < 2 * len(keys):
            return _Offsets(kernels.dense_offsets(keys, np.int64(int(keys[-1]) + 1)),
                            keys.dtype), vals
        return keys, vals

    @staticmethod
    def _merged(older: Run, newer: Run) -> tuple[np.ndarray, np.ndarray]:
        (k1, v1), (k2, v2) = older, newer
        k1 = k1.keys() if isinstance(k1, _Offsets) else k1
        k2 = k2.keys() if isinstance(k2, _Offsets) else k2
        if k1.dtype != k2.dtype:
            k1, k2 = k1.astype(np.int64), k2.astype(np.int64)
        return kernels.merge_runs(k1, v1, k2, v2)

    def settle(self) -> None:
        """Sort what was appended since the last probe into the runs."""
        if not self.pending:
            return
        if len(self.pending) == 1:
            keys, vals = self.pending[0]
        else:
            keys = np.concatenate([k for k, _ in self.pending])
            vals = np.concatenate([v for _, v in self.pending])
        self.pending = []
        order = kernels.stable_order(keys)
        runs = self.runs
        runs.append(self._run(keys[order], vals[order]))
        while len(runs) > 1 and len(runs[-2][1]) <= MERGE * len(runs[-1][1]):
            newer, older = runs.pop(), runs.pop()
            runs.append(self._run(*self._merged(older, newer)))

    def probe(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.settle()
        if len(self.runs) > 1 and len(q) > self.n:
            # more probes than entries (a rederivation joining 230,000 suspects with a
            # link index of 6,000 in eight runs): every run would be searched per probe
            while len(self.runs) > 1:
                newer, older = self.runs.pop(), self.runs.pop()
                self.runs.append(self._run(*self._merged(older, newer)))
        if len(q) > 512 and any(len(v) > SORTED_PROBES and not isinstance(k, _Offsets)
                                for k, v in self.runs):
            # sorted probes walk a large searched run in order (cache-friendly binary
            # searches); a run that fits in cache gains nothing from it
            order = np.argsort(q)
            qi, vals = self._probe(q[order])
            return order[qi], vals
        return self._probe(q)

    def _probe(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        parts = [p for p in (self._expand(run, q) for run in self.runs) if len(p[0])]
        if not parts:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    @staticmethod
    def _expand(run: Run, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k, v = run
        if isinstance(k, _Offsets):
            return kernels.expand_dense(k.off, v, q)
        return expand(k, v, q)

    def values_of(self, q: np.ndarray,
                  scratch: dict[int, tuple[np.ndarray, np.ndarray]] | None = None
                  ) -> np.ndarray:
        """The values of every entry whose key is one of ``q`` (repeated as often), for a
        kill step. Given ``scratch`` (a kill that asks this index often), a searched run is
        read through offsets made for it and kept there for the kill alone, where its keys
        are rows of a relation no larger than twice the index (the supports' by body fact)."""
        self.settle()
        parts = []
        for k, v in self.runs:
            if isinstance(k, _Offsets) or scratch is None:
                found = self._expand((k, v), q)[1]
            else:
                hit = scratch.get(id(k))  # it holds the key array: the id is not reused
                if hit is None:
                    dense = k[0] >= 0 and k[-1] < 2 * self.n
                    off = kernels.dense_offsets(k, np.int64(int(k[-1]) + 1)) if dense else None
                    hit = scratch[id(k)] = (k, off)
                found = (expand(k, v, q) if hit[1] is None
                         else kernels.expand_dense(hit[1], v, q))[1]
            if len(found):
                parts.append(found)
        if not parts:
            return np.empty(0, np.int64)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def kill_runs(self) -> tuple | None:
        """The runs as ``kernels.kill_reach`` reads them: (count, offsets, values) of the
        runs kept as offsets and (count, keys, values) of the key-sorted ones, each a tuple
        of ``KILL_RUNS`` padded with empty arrays; None where there are more runs of a kind,
        or none at all (a fixed length keeps one compiled signature, where typed lists cost
        86 µs a call to build)."""
        self.settle()
        offs = [(k.off, v) for k, v in self.runs if isinstance(k, _Offsets)]
        keyed = [(k, v) for k, v in self.runs if not isinstance(k, _Offsets)]
        if not self.runs or len(offs) > KILL_RUNS or len(keyed) > KILL_RUNS:
            return None

        def pad(arrays: list[np.ndarray]) -> tuple[np.ndarray, ...]:
            out = [np.ascontiguousarray(a, dtype=np.int32) for a in arrays]
            return tuple(out + [_NONE] * (KILL_RUNS - len(out)))
        return (np.int64(len(offs)), pad([o for o, _ in offs]), pad([v for _, v in offs]),
                np.int64(len(keyed)), pad([k for k, _ in keyed]), pad([v for _, v in keyed]))

    def renumber(self, new: np.ndarray) -> None:
        """Map every value ``v`` to ``new[v]``, dropping entries where it is -1. Runs stay
        sorted (a filter keeps a sorted order), so a compaction costs no sort; a run kept as
        offsets stays so, its offsets counted off the entries kept (expanding its keys and
        making offsets again was a third of a backbone's compaction: americas, 2.9 M
        supports, 115 ms)."""
        def keep(k: np.ndarray | _Offsets, v: np.ndarray) -> Run:
            # one compiled pass a run (``kernels.renumber_run``); what it keeps is copied
            # out of arrays sized for every entry when it is much less, so a compaction
            # leaves no slack behind
            if isinstance(k, _Offsets):
                off, _, nv = kernels.renumber_run(k.off, _NO_KEYS, v, new)
                nv = _fit(nv, len(v))
                m = len(nv)
                if m > max(self.dense_above, 0) and len(k.off) - 2 < 2 * m:  # still dense
                    return _Offsets(off, k.dtype), nv
                return self._run(_Offsets(off, k.dtype).keys(), nv)
            _, kk, nv = kernels.renumber_run(_NO_OFFSETS, k, v, new)
            return self._run(_fit(kk, len(v)), _fit(nv, len(v)))
        self.runs = [r for r in (keep(k, v) for k, v in self.runs) if len(r[1])]
        pending = []
        for k, v in self.pending:
            nv = new[v]
            ok = nv >= 0
            if ok.any():
                pending.append((k[ok], nv[ok].astype(np.int32)))
        self.pending = pending
        self.n = sum(len(v) for _, v in self.runs + self.pending)

    def rekey(self, new: np.ndarray) -> None:
        """Map every key ``k`` to ``new[k]``, dropping entries where it is -1: the keys are
        rows of a relation that a compaction renumbered (``Relation.compact``), which keeps
        the rows' order, so each run stays sorted."""
        runs = []
        for k, v in self.runs:
            keys = k.keys() if isinstance(k, _Offsets) else k
            nk = new[keys]
            keep = nk >= 0
            if not keep.all():
                nk, v = nk[keep], v[keep]
            if len(v):
                runs.append(self._run(nk.astype(keys.dtype), v))
        pending = []
        for k, v in self.pending:
            nk = new[k]
            keep = nk >= 0
            if keep.any():
                pending.append((nk[keep].astype(k.dtype), v[keep]))
        self.runs, self.pending = runs, pending
        self.n = sum(len(v) for _, v in self.runs + self.pending)

    def nbytes(self) -> int:
        return sum((k.off if isinstance(k, _Offsets) else k).nbytes + v.nbytes
                   for k, v in self.runs + self.pending)


class Relation:
    def __init__(self, name: str, arity: int, pairs: Pairs) -> None:
        self.name, self.arity, self.pairs = name, arity, pairs
        self.n = 0
        self.peak = 0  # the most facts alive at a batch's start (compaction.py)
        cap = 16
        # ids are below 2**31: int32 halves the columns; rows are widened where bound
        self.cols = np.zeros((cap, arity), dtype=np.int32)
        self.alive = np.zeros(cap, dtype=bool)
        self.rank = np.zeros(cap, dtype=np.int32)
        self.nsup = np.zeros(cap, dtype=np.int8)  # at most K supports
        self.touched = np.zeros(cap, dtype=bool)
        self.tbefore = np.zeros(cap, dtype=bool)
        self.map = Int64Map()
        self.count = 0
        self._indexes: dict[tuple[int, ...], RowIndex] = {}
        self._arrays = ("alive", "cols", "rank", "nsup", "touched", "tbefore")

    def unranked(self) -> None:
        """Keep no ``rank`` or ``nsup``: rows of a stratum iterated through an aggregate
        have neither derivation heights nor kept supports, and on best routes the two
        arrays were 5 of about 100 bytes a fact. ``rank`` reads as 0 (``rank_at``)."""
        self._arrays = ("alive", "cols", "touched", "tbefore")
        self.rank = np.zeros(0, dtype=np.int32)
        self.nsup = np.zeros(0, dtype=np.int8)

    @property
    def ranked(self) -> bool:
        return "rank" in self._arrays

    def rank_at(self, rows: np.ndarray) -> np.ndarray:
        return self.rank[rows] if self.ranked else np.zeros(len(rows), dtype=np.int32)

    def _reserve(self, need: int) -> None:
        grow(self, self._arrays, self.n, need)

    def keys(self, cols: np.ndarray, *, intern: bool) -> np.ndarray:
        if self.arity >= 3:
            return self.pairs.row_keys(cols, intern=intern)
        return self.pairs.key([cols[:, j] for j in range(self.arity)], intern=intern)

    def find(self, cols: np.ndarray) -> np.ndarray:
        """Row of each given row of ids (alive or not), -1 where never stored."""
        if self.arity == 0:
            return np.zeros(len(cols), np.int64) if self.n else np.full(len(cols), -1)
        k = self.keys(cols, intern=False)
        out = self.map.get(k)
        out[k < 0] = -1
        return out

    def rows_for(self, cols: np.ndarray) -> np.ndarray:
        """Row of each given row, storing (dead) rows for the ones never seen; ``cols`` may
        repeat a row."""
        m = len(cols)
        if m == 0:
            return np.empty(0, np.int64)
        if self.arity == 0:
            if self.n == 0:
                self._reserve(1)
                self.n = 1
                for ix in self._indexes.values():
                    ix.append(np.zeros(1, np.int64))
            return np.zeros(m, np.int64)
        start = self.n
        rows, fresh = self.map.get_or_add(self.keys(cols, intern=True), start)
        if len(fresh):
            new = np.arange(start, start + len(fresh), dtype=np.int64)
            self._reserve(start + len(fresh))
            self.cols[start:start + len(fresh)] = cols[fresh]
            self.n = start + len(fresh)
            for ix in self._indexes.values():
                ix.append(new)
        return rows

    def compact(self) -> np.ndarray:
        """Drop the dead rows, renumbering the rest in order; returns each old row's new
        number (-1: dropped). Rows otherwise never move, so a relation whose facts keep
        changing (a best route's path after every flap) grows by every fact it ever held:
        on americas, 40 link flaps left route 45% dead rows that every probe still walks.
        Its own map and indexes are made again here; the caller renames the rows held
        elsewhere (``compaction.py``), between batches."""
        keep = np.flatnonzero(self.alive[: self.n])
        new = np.full(self.n, -1, dtype=np.int64)
        new[keep] = np.arange(len(keep), dtype=np.int64)
        cap = max(16, len(keep) + len(keep) // 8)
        for name in self._arrays:
            old = getattr(self, name)
            arr = np.zeros((cap, *old.shape[1:]), dtype=old.dtype)
            arr[: len(keep)] = old[keep]
            setattr(self, name, arr)  # a fresh array: deltas of past batches keep the old
        self.n = len(keep)
        self.map = Int64Map(len(keep))
        if len(keep) and self.arity:
            self.map.put_new(self.keys(self.cols[: self.n], intern=False),
                             np.arange(self.n, dtype=np.int64))
        for ix in self._indexes.values():
            ix.rebuild()
        return new

    def set_alive(self, rows: np.ndarray) -> None:
        """Mark distinct dead ``rows`` alive."""
        self.alive[rows] = True
        self.count += len(rows)

    def set_dead(self, rows: np.ndarray) -> None:
        """Mark distinct alive ``rows`` dead."""
        self.alive[rows] = False
        self.count -= len(rows)

    def trim(self) -> None:
        """Give back the growth slack of the row arrays after a large batch (doubling left up
        to half of them empty; growing by a quarter is left as it is)."""
        cap = len(self.alive)
        if self.n < 65_536 or cap * 2 < self.n * 3:
            return
        keep = max(16, self.n + self.n // 8)
        for name in self._arrays:
            setattr(self, name, getattr(self, name)[:keep].copy())

    def column(self, rows: np.ndarray, p: int) -> np.ndarray:
        """Position ``p`` of the given rows as int64 ids (arithmetic on bindings must not
        wrap)."""
        return self.cols[:, p][rows].astype(np.int64)  # a 1-d gather: 3x cheaper on few rows

    def was_alive(self, rows: np.ndarray) -> np.ndarray:
        """Alive before the batch under way began."""
        return np.where(self.touched[rows], self.tbefore[rows], self.alive[rows])

    def alive_rows(self) -> np.ndarray:
        return np.flatnonzero(self.alive[: self.n])

    def index(self, positions: tuple[int, ...]) -> RowIndex:
        ix = self._indexes.get(positions)
        if ix is None:
            ix = self._indexes[positions] = RowIndex(self, positions)
        return ix

    def probe(self, positions: tuple[int, ...], qcols: list[np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray]:
        """(probe index, row) pairs of every stored row (alive or not) matching on
        ``positions`` (ascending, ``qcols`` in that order); a probe covering every position
        is a key lookup."""
        if len(positions) == self.arity:
            if self.arity == 0:
                if self.n == 0:
                    return np.empty(0, np.int64), np.empty(0, np.int64)
                m = len(qcols[0]) if qcols else 0
                return np.arange(m, dtype=np.int64), np.zeros(m, np.int64)
            k = self.pairs.key(qcols, intern=False)
            rows = self.map.get(k)
            rows[k < 0] = -1
            hit = np.flatnonzero(rows >= 0)
            return hit, rows[hit]
        return self.index(positions).probe(qcols)

    def nbytes(self) -> int:
        per_row = sum(getattr(self, a).itemsize for a in self._arrays if a != "cols")
        per_row += self.cols.itemsize * self.arity
        return (per_row * len(self.alive) + self.map.nbytes()
                + sum(ix.nbytes() for ix in self._indexes.values()))
