"""A copy stratum maintained through a row map: a relation derived by one rule whose body is
one base atom of plain variables and whose head is some of them, each fact with one
derivation (``psn._one_derivation``), such as the localised ``linkD(@Z,S,C) :-
link(@S,Z,C)`` every link-state program has.

Why: such a fact lives exactly as long as the base fact it copies, so a batch's change to
the stratum is a gather of the base rows that changed through a map kept from base row to
copy row (``of``), and its kill a gather of each copy's one support. The general path asked
the supports' index by body fact for the kill and ran a derivation round for the insert:
about thirty distinct calls a batch. After other work has run (the peers bench runs four
contenders between two of ours) each kind of call costs a batch 20-80 µs the first time it
makes it (docs/engine.md, "Cold batches"), which made the copy stratum 240-360 µs of a
small graph's batch of ten links. The kill and the admission themselves are the general
path's (``kernels.kill_step``, ``ColumnarProgram._admit``), so the state they leave is the
one it would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.relation import grow
from netrules.engine.columnar.supports import gid

if TYPE_CHECKING:
    from netrules.engine.columnar.psn import ColumnarProgram, _Changes, _Rule

__all__ = ["CopyStratum"]

_NO_FIRST = np.full(0, -1, np.int32)  # a relation no support has had a head in yet


class CopyStratum:
    """The copy rule ``rule`` of a stratum of one relation, with its row map."""

    def __init__(self, rule: _Rule) -> None:
        self.rule = rule
        self.name = rule.rule.head.relation
        self.body = rule.atoms[0].relation
        self.cols = rule.copy  # body columns the head takes, per head position
        self.of = np.full(64, -1, np.int64)  # body row -> head row, -1: not looked up yet

    @classmethod
    def of_stratum(cls, rules: list[_Rule], one_derivation: bool) -> CopyStratum | None:
        """The copy stratum of ``rules`` if they are one copy rule whose facts have one
        derivation each (``psn._one_derivation``: a base body, no negation), else None."""
        if not one_derivation or len(rules) != 1 or rules[0].copy is None:
            return None
        return cls(rules[0])

    def renumber(self, name: str, new: np.ndarray) -> None:
        """Follow a compaction of relation ``name`` (``new``: old row -> new row, -1
        dropped): the head rows the map holds are renamed. (The body is a base relation,
        which is never compacted.)"""
        if name == self.name:
            self.of = np.where(self.of >= 0, new[np.maximum(self.of, 0)], -1)

    def _rows(self, prog: ColumnarProgram, src: np.ndarray, add: bool) -> np.ndarray:
        """Head rows of body rows ``src`` (-1 where the head was never stored, unless
        ``add``, which stores them), from the map, filled where it has none."""
        body = prog.rels[self.body]
        grow(self, ("of",), len(self.of), body.n, {"of": -1})
        rows = self.of[src]
        miss = rows < 0
        if miss.any():
            head = prog.rels[self.name]
            cols = body.cols[src[miss]][:, self.cols]
            found = head.rows_for(cols) if add else head.find(cols)
            rows[miss] = found
            self.of[src[miss]] = found
        return rows

    def maintain(self, prog: ColumnarProgram, ch: _Changes) -> bool:
        """The batch's change to the stratum, as ``ColumnarProgram._maintain`` would make it;
        False, having changed nothing, where a killed body fact's copy stands on a support
        that is not that fact's (the caller goes the general way)."""
        code = prog.codes[self.name]
        head, sup = prog.rels[self.name], prog.supports
        parts = ch.killed.get(self.body)
        if parts:
            src = np.concatenate(parts) if len(parts) > 1 else parts[0]
            rows = self._rows(prog, src, add=False)
            first = sup.first.get(code, _NO_FIRST)
            sids, ok = kernels.copy_supports(src.astype(np.int64), rows, first, sup.alive,
                                             sup.body, head.alive)
            if not ok:
                return False
            if len(sids):
                found: dict[str, list[np.ndarray]] = {}
                gone, first_rows, heads = kernels.kill_step(
                    sids, sup.alive, sup.rule, sup.head, sup.head_code, np.int64(code),
                    head.nsup, head.alive, head.touched, head.tbefore)
                prog._killed(code, gone, first_rows, heads, ch, found)
                if len(gone):
                    ch.kill(self.name, gone)
                    prog.stats["suspects"] += len(gone)
        add, _ = ch.net(prog.rels[self.body])
        if len(add):
            rows = self._rows(prog, add, add=True)
            dead = ~head.alive[rows]
            if not dead.all():
                rows, add = rows[dead], add[dead]
            if len(rows):
                body = np.full((len(rows), sup.width), -1, dtype=np.int64)
                body[:, 0] = gid(prog.codes[self.body], add)
                rank = np.ones(len(rows), dtype=np.int32)  # a base body: rank 0, plus one
                prog._admit([(self.rule, rows, body, rank)], ch)
                prog._flush()
        return True
