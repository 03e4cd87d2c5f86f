"""One region's share of a resident program, per fact, and the log that lets any worker
rebuild it: the counting stages of a columnar region (``columnar.py``), or every stage with
``Program(columnar=False)``.

A region holds the facts located at its nodes; for facts of positive strata the rank and the
kept supports of each (PSN's bounded derivation sets, see ``strategies/psn.py``), the reverse
index body fact -> local heads, and the suspects of the batch in flight; for facts of strata
with aggregates or negation their derivation counts and the aggregate groups located here
(``counting.py``). ``flips`` nets every fact's appearances and disappearances in the batch: the
next stratum reads what changed below it from there, and the driver its delta. Every change
goes through a method that appends it to ``log`` when logging is on: a region is stored as a
snapshot plus the changes since, so the worker that runs a round need not be the worker that
ran the last one, and a worker holding an up-to-date copy never decodes the snapshot
(``spark/resident.py``).
"""

from __future__ import annotations

from typing import Any

from netrules.engine.aggregates import AggIndex
from netrules.engine.firing import FactKey
from netrules.engine.reference import Database
from netrules.engine.strategies.psn import Support, reindex
from netrules.facts import Value
from netrules.lang import ast

__all__ = ["RegionState", "Support"]


class RegionState:
    """Facts, ranks, kept supports and suspects of one region; see the module docstring."""

    def __init__(self, region: int, k: int) -> None:
        self.region, self.k = region, k
        self.db = Database()
        self.susp = Database()  # derived facts here whose every kept support died this batch
        self.rank: dict[FactKey, int] = {}
        self.sup: dict[FactKey, list[Support]] = {}
        self.used_by: dict[FactKey, set[FactKey]] = {}
        self.cnt: dict[FactKey, int] = {}  # derivations of a counted fact located here
        self.aggs: dict[int, AggIndex] = {}  # by rule id: the groups located here
        self.touched: set[FactKey] = set()  # counts moved since the stratum last looked
        self.over: set[FactKey] = set()  # counted facts overdeleted in the batch in flight
        self.flips: dict[FactKey, int] = {}  # net +1/-1 per fact shown or hidden this batch
        self.step_flips: dict[FactKey, int] = {}  # the same for the step in flight (unlogged)
        # facts whose kept supports the step in flight changed (unlogged): what a driver that
        # mirrors one support per fact for ``explain`` is sent (``Program.report_supports``)
        self.step_sup: set[FactKey] = set()
        self.batch = 0
        self.log: list[tuple] | None = None

    def _flip(self, key: FactKey, sign: int) -> None:
        for d in (self.flips, self.step_flips):
            n = d.get(key, 0) + sign
            if n:
                d[key] = n
            else:
                del d[key]

    def shown(self, key: FactKey) -> bool:
        """Whether ``key`` is in the views now (held and not suspect)."""
        return key in self.db and key not in self.susp

    # -- changes (each one logged) -------------------------------------------------------
    def add(self, key: FactKey, rank: int | None = None) -> None:
        if self.db.add(*key):
            self._flip(key, 1)
            self.step_sup.add(key)
        if rank is not None:
            self.rank[key] = rank
        if self.log is not None:
            self.log.append(("a", key, rank))

    def remove(self, key: FactKey) -> None:
        """Gone for good: the fact, its rank, its supports, its suspicion (not its count:
        a counted fact is removed while derivations may still arrive)."""
        if self.shown(key):
            self._flip(key, -1)
        self.db.discard(*key)
        self.susp.discard(*key)
        self.rank.pop(key, None)
        reindex(self.used_by, key, self.sup.pop(key, []), [])
        self.step_sup.add(key)
        if self.log is not None:
            self.log.append(("r", key))

    def set_rank(self, key: FactKey, rank: int) -> None:
        self.rank[key] = rank
        if self.log is not None:
            self.log.append(("k", key, rank))

    def set_supports(self, key: FactKey, supports: list[Support]) -> None:
        reindex(self.used_by, key, self.sup.get(key, []), supports)
        if supports:
            self.sup[key] = supports
        else:
            self.sup.pop(key, None)
        self.step_sup.add(key)
        if self.log is not None:
            self.log.append(("s", key, tuple(supports)))

    def suspect(self, key: FactKey, on: bool) -> None:
        if on:
            if self.susp.add(*key) and key in self.db:
                self._flip(key, -1)
        elif self.susp.discard(*key) and key in self.db:
            self._flip(key, 1)
        if self.log is not None:
            self.log.append(("u", key, on))

    def begin(self, batch: int) -> None:
        self.batch = batch
        self.flips, self.over, self.touched = {}, set(), set()
        if self.log is not None:
            self.log.append(("b", batch))

    def bump(self, key: FactKey, n: int) -> None:
        """Move the derivation count of a counted fact located here (by 0: only look at
        it again next round)."""
        c = self.cnt.get(key, 0) + n
        self.step_sup.add(key)
        if c:
            self.cnt[key] = c
        else:
            self.cnt.pop(key, None)
        self.touched.add(key)
        if self.log is not None:
            self.log.append(("c", key, n))

    def new_groups(self, rid: int, rule: ast.Rule) -> AggIndex:
        """The aggregate index of rule ``rid`` here (created, and logged, on first use)."""
        ix = self.aggs.get(rid)
        if ix is None:
            ix = self.aggs[rid] = AggIndex(rule)
            if self.log is not None:
                self.log.append(("n", rid, rule))
        return ix

    def move_groups(self, rid: int, removed: list[tuple[tuple, Value]],
                    added: list[tuple[tuple, Value]]) -> tuple[set[tuple], set[tuple]]:
        """Move rule ``rid``'s groups by (group, value) pairs; the head rows that went and
        came (the caller moves their counts, logged on their own)."""
        if self.log is not None:
            self.log.append(("m", rid, removed, added))
        return self.aggs[rid].move_pairs(removed, added)

    def take_touched(self) -> set[FactKey]:
        touched, self.touched = self.touched, set()
        if self.log is not None:
            self.log.append(("t",))
        return touched

    def mark_over(self, key: FactKey) -> None:
        self.over.add(key)
        if self.log is not None:
            self.log.append(("o", key))

    def take_over(self) -> set[FactKey]:
        over, self.over = self.over, set()
        if self.log is not None:
            self.log.append(("O",))
        return over

    # -- derived operations ----------------------------------------------------------------
    def without(self, head: FactKey, x: FactKey) -> bool:
        """Drop ``head``'s supports that used ``x``; True when none is left."""
        old = self.sup.get(head)
        if not old:
            return True
        kept = [s for s in old if x not in s[1]]
        if len(kept) != len(old):
            self.set_supports(head, kept)
        return not kept

    def records(self) -> int:
        """Stored derivation records: kept supports, counts, and aggregate group values."""
        return (sum(len(s) for s in self.sup.values()) + len(self.cnt)
                + sum(len(g.values) for ix in self.aggs.values() for g in ix.groups.values()))

    def facts(self) -> int:
        """Facts held, suspects left over from the last batch not counted."""
        return sum(len(rows) for rows in self.db.rel.values()) - \
            sum(len(rows) for rows in self.susp.rel.values())

    def first_supports(self, keys: set[FactKey]) -> dict[FactKey, Support | None]:
        """Each key's first kept support (None: gone, suspect or counted). The first is a
        lowest-ranked one and every kept support's body ranks below its head, so following
        first supports always ends at base facts."""
        out: dict[FactKey, Support | None] = {}
        for key in keys:
            sups = self.sup.get(key)
            out[key] = sups[0] if sups and key not in self.susp else None
        return out

    def visible(self) -> list[FactKey]:
        return [(rel, row) for rel, rows in self.db.rel.items() for row in rows
                if (rel, row) not in self.susp]

    # -- the log ---------------------------------------------------------------------------
    def replay(self, ops: list[tuple]) -> None:
        """Apply logged changes (logging off while they are applied)."""
        log, self.log = self.log, None
        try:
            for op in ops:
                kind = op[0]
                if kind == "a":
                    self.add(op[1], op[2])
                elif kind == "r":
                    self.remove(op[1])
                elif kind == "k":
                    self.set_rank(op[1], op[2])
                elif kind == "s":
                    self.set_supports(op[1], list(op[2]))
                elif kind == "u":
                    self.suspect(op[1], op[2])
                elif kind == "b":
                    self.begin(op[1])
                elif kind == "c":
                    self.bump(op[1], op[2])
                elif kind == "n":
                    self.new_groups(op[1], op[2])
                elif kind == "m":
                    self.move_groups(op[1], op[2], op[3])
                elif kind == "t":
                    self.take_touched()
                elif kind == "o":
                    self.mark_over(op[1])
                elif kind == "O":
                    self.take_over()
                else:
                    raise ValueError(f"region {self.region}: unknown logged change {kind!r}")
        finally:
            self.log = log

    def __getstate__(self) -> dict[str, Any]:
        """Rows, ranks, supports (with their reverse index: rebuilding it took most of a
        load), suspects, counts and groups, and the batch in flight's flips (a snapshot may
        be taken between two rounds); the databases' indexes are rebuilt when first
        probed."""
        return {"region": self.region, "k": self.k, "batch": self.batch,
                "rows": {r: list(rows) for r, rows in self.db.rel.items() if rows},
                "susp": {r: list(rows) for r, rows in self.susp.rel.items() if rows},
                "rank": self.rank, "sup": self.sup, "used_by": self.used_by,
                "cnt": self.cnt, "aggs": self.aggs, "touched": self.touched,
                "over": self.over, "flips": self.flips}

    def __setstate__(self, st: dict[str, Any]) -> None:
        self.__init__(st["region"], st["k"])  # type: ignore[misc]
        self.batch = st["batch"]
        for rel, rows in st["rows"].items():
            self.db.rel[rel] = set(rows)  # no index yet: nothing to keep current
        for rel, rows in st["susp"].items():
            for row in rows:
                self.susp.add(rel, row)
        self.rank, self.sup, self.used_by = st["rank"], st["sup"], st["used_by"]
        self.cnt, self.aggs, self.touched = st["cnt"], st["aggs"], st["touched"]
        self.over, self.flips = st["over"], st["flips"]
