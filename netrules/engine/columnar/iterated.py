"""Recursion through an aggregate (best routes), as columns: differential Jacobi iteration.

The stratum means the fixpoint of ``S := T(L, S)`` from nothing (``reference.iterate_stratum``).
As in ``engine/iterated.py``, each step is computed from what changed between the last two
inputs: plain rules fire from the rows that left the input (over the previous input: heads
that may go) and from the rows that joined it (over the new input: heads that come), a head
that may go stays if the new input still derives it, and aggregate rules recompute only the
groups such bindings touch. From nothing, the first step's input gains every lower row, so
materialisation is the same loop.

A batch first *overdeletes*: every stratum row that leaned, directly or through other rows, on
a lost lower row (an aggregate row only when the lost binding gave its extreme, the
value-aware rule of docs/engine.md) is taken out of the first step's input, so no stale route
is extended. Inputs are never copied: a step reads ``(alive & ~minus) | plus`` through masks
over the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netrules.engine.columnar.aggregate import (
    AggRule,
    _group_cols,
    group_rows,
    regroup,
    tables_from,
    touched_groups,
)
from netrules.engine.columnar.joins import Reader, Table, bind_head, head_columns
from netrules.errors import EvalError

if TYPE_CHECKING:
    from netrules.engine.columnar.psn import ColumnarProgram, _Changes, _Rule

__all__ = ["IteratedStage", "MAX_ITERATIONS"]

MAX_ITERATIONS = 10_000
Rows = dict[str, np.ndarray]


def _empty() -> np.ndarray:
    return np.empty(0, np.int64)


class IteratedStage:
    def __init__(self, prog: ColumnarProgram, relations: frozenset[str],
                 plain: list[_Rule], aggs: list[AggRule]) -> None:
        self.prog, self.relations, self.plain, self.aggs = prog, relations, plain, aggs
        self.reads = ({a.relation for r in plain for a in r.atoms}
                      | {a.relation for r in plain for a, _ in r.negs}
                      | {a.relation for r in aggs for a in r.atoms}
                      | {a.relation for r in aggs for a, _ in r.negs})
        self.lower = self.reads - relations
        self.iterations = 0

    # -- views over masks ------------------------------------------------------------------
    def _mask(self, name: str, rows: np.ndarray | None) -> np.ndarray | None:
        if rows is None or not len(rows):
            return None
        m = np.zeros(self.prog.rels[name].n, dtype=bool)
        m[rows] = True
        return m

    def reader(self, minus: Rows, plus: Rows) -> Reader:
        """``(alive & ~minus) | plus`` per relation."""
        mm = {k: self._mask(k, v) for k, v in minus.items()}
        pm = {k: self._mask(k, v) for k, v in plus.items()}

        def read(rel, rows: np.ndarray) -> np.ndarray:
            out = rel.alive[rows]
            for m, minus_ in ((mm.get(rel.name), True), (pm.get(rel.name), False)):
                if m is None:
                    continue
                inside = rows < len(m)  # rows made after the mask are in neither set
                hit = np.zeros(len(rows), dtype=bool)
                hit[inside] = m[rows[inside]]
                out = out & ~hit if minus_ else out | hit
            return out
        return read

    # -- rule firing -----------------------------------------------------------------------
    def _heads(self, r: _Rule, pos: Rows, neg: Rows, read: Reader) -> list[np.ndarray]:
        prog = self.prog
        out = []
        for i, atom in enumerate(r.atoms):
            rows = pos.get(atom.relation)
            if rows is not None and len(rows):
                tab = prog.start(r.rule, atom, rows, i)
                tab = r.by_start[i].run(prog.rels, prog.values, tab, lambda j: read, read)
                if tab.n:
                    out.append(head_columns(r.rule, prog.values, tab))
        for atom, join in r.negs:
            rows = neg.get(atom.relation)
            if rows is not None and len(rows):
                tab = prog.start(r.rule, atom, rows, None)
                tab = join.run(prog.rels, prog.values, tab, lambda j: read, read)
                if tab.n:
                    out.append(head_columns(r.rule, prog.values, tab))
        return out

    def _derivable(self, name: str, rows: np.ndarray, read: Reader) -> np.ndarray:
        prog = self.prog
        rel = prog.rels[name]
        ok = np.zeros(len(rows), dtype=bool)
        for r in self.plain:
            if r.rule.head.relation != name or not len(rows):
                continue
            tab = bind_head(r.rule, rel, rows)
            tab = r.from_head.run(prog.rels, prog.values, tab, lambda j: read, read)
            if tab.n:
                heads = head_columns(r.rule, prog.values, tab)
                k = tab.vars["#k"]
                same = np.all(heads == rel.cols[rows[k]], axis=1)
                ok[k[same]] = True
        return ok

    # -- one step --------------------------------------------------------------------------
    def step(self, d_in: Rows, a_in: Rows, before: Reader, after: Reader
             ) -> tuple[Rows, Rows]:
        """(rows that go, rows that come) from ``S = T(before)`` to ``T(after)``."""
        prog = self.prog
        lost: dict[str, list[np.ndarray]] = {}
        found: dict[str, list[np.ndarray]] = {}
        for r in self.plain:
            name = r.rule.head.relation
            lost.setdefault(name, []).extend(self._heads(r, d_in, a_in, before))
            found.setdefault(name, []).extend(self._heads(r, a_in, d_in, after))
        gone: Rows = {}
        come: Rows = {}
        for name in sorted(set(lost) | set(found)):
            rel = prog.rels[name]
            f = found.get(name) or []
            frows = np.unique(rel.rows_for(np.concatenate(f))) if f else _empty()
            come[name] = frows[~rel.alive[frows]]
            lo = lost.get(name) or []
            if lo:
                lrows = rel.find(np.concatenate(lo))
                lrows = np.unique(lrows[lrows >= 0])
                lrows = lrows[rel.alive[lrows]]
                if len(frows):
                    lrows = lrows[~np.isin(lrows, frows)]
                lrows = lrows[~self._derivable(name, lrows, after)]
                gone[name] = lrows
        for ar in self.aggs:
            groups = touched_groups(ar, prog, d_in, a_in, before, after)
            if len(groups):
                g, c = regroup(ar, prog, groups, after)
                name = ar.rule.head.relation
                gone[name] = np.union1d(gone.get(name, _empty()), g)
                come[name] = np.union1d(come.get(name, _empty()), c)
        return ({k: v for k, v in gone.items() if len(v)},
                {k: v for k, v in come.items() if len(v)})

    # -- a batch ---------------------------------------------------------------------------
    def _overdelete(self, d_low: Rows, a_low: Rows, old: Reader) -> Rows:
        prog = self.prog
        found: dict[str, list[np.ndarray]] = {}
        marks: dict[str, np.ndarray] = {}
        pos, neg = dict(d_low), dict(a_low)
        while any(len(v) for v in pos.values()) or any(len(v) for v in neg.values()):
            newly: dict[str, list[np.ndarray]] = {}
            for r in self.plain:
                heads = self._heads(r, pos, neg, old)
                if heads:
                    rel = prog.rels[r.rule.head.relation]
                    rows = rel.find(np.concatenate(heads))
                    newly.setdefault(rel.name, []).append(rows[rows >= 0])
            for ar in self.aggs:
                rel = prog.rels[ar.rule.head.relation]
                for tab in tables_from(ar, prog, pos, neg, old):
                    newly.setdefault(rel.name, []).append(self._leaned(ar, tab))
            pos, neg = {}, {}
            for name, parts in newly.items():
                rel = prog.rels[name]
                rows = np.unique(np.concatenate(parts))
                rows = rows[rel.alive[rows]]
                mark = marks.get(name)
                if mark is None or len(mark) < rel.n:
                    grown = np.zeros(rel.n, dtype=bool)
                    if mark is not None:
                        grown[: len(mark)] = mark
                    mark = marks[name] = grown
                rows = rows[~mark[rows]]
                if len(rows):
                    mark[rows] = True
                    found.setdefault(name, []).append(rows)
                    pos[name] = rows
        return {k: np.concatenate(v) for k, v in found.items()}

    def _leaned(self, ar: AggRule, tab: Table) -> np.ndarray:
        """Rows of the groups these bindings belong to whose value may move if the
        bindings go: any for COUNT and SUM, only an equal extreme for MIN and MAX."""
        prog = self.prog
        groups = _group_cols(ar, prog, tab)
        qi, rows = group_rows(ar, prog, groups)
        if ar.agg.func in ("MIN", "MAX") and len(rows):
            vals = tab.vars[ar.agg.var.name]  # type: ignore[union-attr]
            rel = prog.rels[ar.rule.head.relation]
            keep = rel.cols[rows, ar.pos] == vals[qi]
            rows = rows[keep]
        return rows

    def maintain(self, ch: _Changes) -> None:
        """Move the stratum from its old fixpoint to the new one (from nothing, when the
        batch brought every lower row: the load)."""
        prog = self.prog
        d_low: Rows = {}
        a_low: Rows = {}
        for name in self.lower:
            add, rem = ch.net(prog.rels[name])
            if len(add):
                a_low[name] = add
            if len(rem):
                d_low[name] = rem
        if not d_low and not a_low:
            return
        # the old input: lower rows as they were (alive less added plus removed)
        old = self.reader(a_low, d_low)
        over = self._overdelete(d_low, a_low, old)
        before = old
        after = self.reader(over, {})
        d_in = {**d_low, **over}
        a_in = dict(a_low)
        for n in range(1, MAX_ITERATIONS + 1):
            gone, come = self.step(d_in, a_in, before, after)
            for name, rows in gone.items():
                rel = prog.rels[name]
                ch.touch(rel, rows)
                rel.set_dead(rows)
                ch.kill(name, rows)
            for name, rows in come.items():
                rel = prog.rels[name]
                ch.touch(rel, rows)
                rel.set_alive(rows)
            if n == 1 and over:
                # the next input differs from F \\ over (not from F) by these
                d_in = {k: v[~np.isin(v, over.get(k, _empty()))] for k, v in gone.items()}
                a_in = dict(come)
                for k, v in over.items():
                    rest = v[~np.isin(v, gone.get(k, _empty()))]
                    a_in[k] = np.union1d(a_in.get(k, _empty()), rest)
            else:
                d_in, a_in = gone, come
            d_in = {k: v for k, v in d_in.items() if len(v)}
            a_in = {k: v for k, v in a_in.items() if len(v)}
            self.iterations += 1
            if not d_in and not a_in:
                return
            before, after = self.reader(a_in, d_in), self.reader({}, {})
        raise EvalError(f"relations {', '.join(sorted(self.relations))} recurse through an "
                        f"aggregate and did not settle after {MAX_ITERATIONS} iterations "
                        "(does a cycle of zero or negative costs keep improving?)")
