"""One region's share of a resident program, and the log that lets any worker rebuild it.

A region holds the facts located at its nodes, the rank and the kept supports of each derived
one (PSN's bounded derivation sets, see ``strategies/psn.py``), the reverse index body fact ->
local heads, and the suspects of the batch in flight. Every change goes through a method that
appends it to ``log`` when logging is on: a region is stored as a snapshot plus the changes
since, so the worker that runs a round need not be the worker that ran the last one, and a
worker holding an up-to-date copy never decodes the snapshot (``spark/resident.py``).
"""

from __future__ import annotations

from typing import Any

from netrules.engine.firing import FactKey
from netrules.engine.reference import Database
from netrules.engine.strategies.psn import Support, reindex

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
        self.batch = 0
        self.log: list[tuple] | None = None

    # -- changes (each one logged) -------------------------------------------------------
    def add(self, key: FactKey, rank: int | None = None) -> None:
        self.db.add(*key)
        if rank is not None:
            self.rank[key] = rank
        if self.log is not None:
            self.log.append(("a", key, rank))

    def remove(self, key: FactKey) -> None:
        """Gone for good: the fact, its rank, its supports, its suspicion."""
        self.db.discard(*key)
        self.susp.discard(*key)
        self.rank.pop(key, None)
        reindex(self.used_by, key, self.sup.pop(key, []), [])
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
        if self.log is not None:
            self.log.append(("s", key, tuple(supports)))

    def suspect(self, key: FactKey, on: bool) -> None:
        if on:
            self.susp.add(*key)
        else:
            self.susp.discard(*key)
        if self.log is not None:
            self.log.append(("u", key, on))

    def begin(self, batch: int) -> None:
        self.batch = batch
        if self.log is not None:
            self.log.append(("b", batch))

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
        return sum(len(s) for s in self.sup.values())

    def facts(self) -> int:
        """Facts held, suspects left over from the last batch not counted."""
        return sum(len(rows) for rows in self.db.rel.values()) - \
            sum(len(rows) for rows in self.susp.rel.values())

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
                else:
                    raise ValueError(f"region {self.region}: unknown logged change {kind!r}")
        finally:
            self.log = log

    def __getstate__(self) -> dict[str, Any]:
        """Rows, ranks, supports (with their reverse index: rebuilding it took most of a
        load) and suspects; the databases' indexes are rebuilt when first probed."""
        return {"region": self.region, "k": self.k, "batch": self.batch,
                "rows": {r: list(rows) for r, rows in self.db.rel.items() if rows},
                "susp": {r: list(rows) for r, rows in self.susp.rel.items() if rows},
                "rank": self.rank, "sup": self.sup, "used_by": self.used_by}

    def __setstate__(self, st: dict[str, Any]) -> None:
        self.__init__(st["region"], st["k"])  # type: ignore[misc]
        self.batch = st["batch"]
        for rel, rows in st["rows"].items():
            self.db.rel[rel] = set(rows)  # no index yet: nothing to keep current
        for rel, rows in st["susp"].items():
            for row in rows:
                self.susp.add(rel, row)
        self.rank, self.sup, self.used_by = st["rank"], st["sup"], st["used_by"]
