"""Recursion through an aggregate (best routes), as columns: differential iteration.

The stratum means the fixpoint of ``S := T(L, S)`` from nothing (``reference.iterate_stratum``).
As in ``engine/iterated.py``, each step is computed from what changed in its input: plain
rules fire from the rows that left the input (over the previous input: heads that may go) and
from the rows that joined it (over the new input: heads that come), a head that may go stays
if the new input still derives it, and aggregate rules recompute only the groups such bindings
touch. A step is one relation's rules (``step``), fed the changes of what it reads since it
last ran. A load, from nothing, runs every relation on the same input per sweep (Jacobi, the
oracle's sequence); a batch runs them one after another in ``order`` (Gauss-Seidel), so a sweep
carries a change a whole hop (docs/engine.md).

A batch first *overdeletes*: every stratum row that leaned, directly or through other rows, on
a lost lower row (an aggregate row only when the lost binding gave its extreme, the
value-aware rule of docs/engine.md, and not when a remaining binding still gives it) is taken
out of the first step's input, so no stale route is extended. Inputs are never copied: a step
reads ``(alive & ~minus) | plus`` through row sets.

Then the batch derives *cheapest first*. From the overdeleted state every value can only fall
toward the fixpoint, and fed every route as it comes, a best path explores: it takes a long
detour, a shorter one a sweep later, and each interim value travels upstream and is replaced
in turn. So in a batch that took lower rows away, an arg-min relation of one rule over one
atom of the stratum sees that atom's new rows near the least value pending first
(``CHEAPEST_WINDOW``), the rest waiting in its pending input and out of its view; with unit
costs a group's first value is then its last (americas, the Colón - Puerto Limon link down:
470,000 best paths came over 57 sweeps, 239,000 over 68 cheapest first; 3.1 -> 1.8 s). Any
order of delivery reaches the same fixpoint (``maintain``), so this is a schedule, not a
rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.aggregate import (
    AggRule,
    _group_cols,
    aggregate_groups,
    group_rows,
    holds,
    regroup,
    shift_extreme,
    started_tables,
    touched_groups,
)
from netrules.engine.columnar.joins import Reader, Table, bind_head, head_columns
from netrules.engine.columnar.keys import unique_rows
from netrules.engine.columnar.relation import RowSet
from netrules.engine.columnar.sets import distinct, union
from netrules.engine.columnar.values import SMALL
from netrules.errors import EvalError

if TYPE_CHECKING:
    from netrules.engine.columnar.psn import ColumnarProgram, _Changes, _Rule

__all__ = ["IteratedStage", "MAX_ITERATIONS"]

MAX_ITERATIONS = 10_000
#: closures of overdeletion recomputed after keeping aggregate rows a remaining binding holds
RESCUE_ROUNDS = 1
#: in a batch an arg-min relation is fed the rows that joined its input cheapest first
#: (``IteratedStage._cheapest``) once this many wait (fewer come at once), those within a
#: ``CHEAPEST_WINDOW``-th of the least value first: one value at a time while values are
#: small (unit costs), a window that widens with them where a sweep per distinct value
#: would cost more than the detours it saves (americas with link costs 1-100: 30.0 s for
#: 100 link events, 36.4 s fed as they came, 179 s one value at a time)
CHEAPEST_FROM = 2
CHEAPEST_WINDOW = 8
Rows = dict[str, np.ndarray]
#: per relation, the change of each input it reads since it was last computed: (gone, come)
Pending = dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]


def _empty() -> np.ndarray:
    return np.empty(0, np.int64)


def _order(relations: frozenset[str], reads: dict[str, set[str]]) -> list[str]:
    """Relations in an order where each comes after those it reads, but for the reads that
    close a cycle (in name order where there is a choice, so runs repeat)."""
    out: list[str] = []
    left = set(relations)
    while left:
        ready = sorted(n for n in left if not (reads[n] & left) - {n})
        pick = ready[0] if ready else min(left, key=lambda n: (len(reads[n] & left), n))
        out.append(pick)
        left.remove(pick)
    return out


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
        self.held = 0  # steps whose input came cheapest first, some of it held back
        for name in relations:
            prog.rels[name].unranked()
        self.plain_of: dict[str, list[_Rule]] = {}
        self.aggs_of: dict[str, list[AggRule]] = {}
        self.reads_of: dict[str, set[str]] = {name: set() for name in relations}
        for r in plain:
            self.plain_of.setdefault(r.rule.head.relation, []).append(r)
        for ar in aggs:
            self.aggs_of.setdefault(ar.rule.head.relation, []).append(ar)
        for r in [*plain, *aggs]:
            self.reads_of[r.rule.head.relation] |= ({a.relation for a in r.atoms}
                                                   | {a.relation for a, _ in r.negs})
        self.readers_of: dict[str, list[str]] = {}
        self.order = _order(relations, self.reads_of)
        for name in self.order:
            for r in sorted(self.reads_of[name] & relations):
                self.readers_of.setdefault(r, []).append(name)

    # -- views over row sets ---------------------------------------------------------------
    def reader(self, minus: Rows, plus: Rows) -> Reader:
        """``(alive & ~minus) | plus`` per relation."""
        mm = {k: RowSet(self.prog.rels[k].n, v) for k, v in minus.items() if len(v)}
        pm = {k: RowSet(self.prog.rels[k].n, v) for k, v in plus.items() if len(v)}

        def read(rel, rows: np.ndarray) -> np.ndarray:
            out = rel.alive[rows]
            m = mm.get(rel.name)
            if m is not None:
                out &= ~m.has(rows)
            p = pm.get(rel.name)
            if p is not None:
                out |= p.has(rows)
            return out
        return read

    # -- rule firing -----------------------------------------------------------------------
    def _heads(self, r: _Rule, pos: Rows, neg: Rows, read: Reader,
               src: _Nodes | None = None) -> list[np.ndarray]:
        """Head rows of the bindings over ``read`` that use a row of ``pos`` or meet a row
        of ``neg`` at a negated atom; ``src`` collects the node each came from."""
        prog = self.prog
        out = []
        for i, atom in enumerate(r.atoms):
            rows = pos.get(atom.relation)
            if rows is not None and len(rows):
                tab = prog.start(r.rule, atom, rows, i)
                tab = r.by_start[i].run(prog.rels, prog.values, tab, lambda j: read, read)
                if tab.n:
                    out.append(head_columns(r.rule, prog.values, tab))
                    if src is not None:
                        src.append(src.node(atom.relation, tab.atoms[i]))
        for atom, join in r.negs:
            rows = neg.get(atom.relation)
            if rows is not None and len(rows):
                tab = prog.start(r.rule, atom, rows, None)
                tab = join.run(prog.rels, prog.values, tab, lambda j: read, read)
                if tab.n:
                    out.append(head_columns(r.rule, prog.values, tab))
                    if src is not None:
                        src.append(np.full(tab.n, _Nodes.ROOT, dtype=np.int64))
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

    # -- one relation's rules -------------------------------------------------------------
    def step(self, name: str, d_in: Rows, a_in: Rows, before: Reader, after: Reader,
             over: tuple[Rows, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows that go, rows that come) of ``name`` when its rules' input moves from
        ``before`` to ``after`` (``d_in`` left it, ``a_in`` joined it); the alive rows of
        ``name`` are its rules' heads over ``before``.

        ``over``: the batch's overdeleted rows and those of ``name``, on ``name``'s first
        step of the batch. Every head a binding over ``before`` derives from an overdeleted
        row is itself overdeleted (``before`` is the old view less hidden rows, and the
        closure followed the old view), so those heads are taken as they are rather than
        joined for again: on a link down, the largest step of the batch."""
        prog = self.prog
        rel = prog.rels[name]
        lost: list[np.ndarray] = []
        found: list[np.ndarray] = []
        d_lost = d_in
        if over is not None:
            d_lost = {r: _without(rows, over[0].get(r)) for r, rows in d_in.items()}
        for r in self.plain_of.get(name, ()):
            lost.extend(self._heads(r, d_lost, a_in, before))
            found.extend(self._heads(r, a_in, d_in, after))
        frows = distinct(rel.rows_for(np.concatenate(found))) if found else _empty()
        come = frows[~rel.alive[frows]]
        gone = _empty()
        hidden = over[1] if over is not None and self.plain_of.get(name) else None
        if lost or hidden is not None:
            lrows = rel.find(np.concatenate(lost)) if lost else _empty()
            lrows = distinct(lrows[lrows >= 0])
            if hidden is not None:
                lrows = union(lrows, hidden)
            lrows = lrows[rel.alive[lrows]]
            if len(frows):
                lrows = lrows[~RowSet(rel.n, frows).has(lrows)]
            gone = lrows[~self._derivable(name, lrows, after)]
        aggs = self.aggs_of.get(name, ())
        alone = len(aggs) == 1 and not self.plain_of.get(name)  # the relation's one rule
        for ar in aggs:
            if ar.shifts and alone:
                g, c = shift_extreme(ar, prog, d_in, a_in, before, after)
            else:
                groups = touched_groups(ar, prog, d_in, a_in, before, after)
                if not len(groups):
                    continue
                g, c = regroup(ar, prog, groups, after)
            gone = union(gone, g)
            come = union(come, c)
        return gone, come

    # -- a batch ---------------------------------------------------------------------------
    def _overdelete(self, d_low: Rows, a_low: Rows, old: Reader) -> Rows:
        """Rows that leaned, directly or through other rows, on a lost lower row, less the
        aggregate rows whose value a remaining binding still gives (``_rescue``): with unit
        costs a best cost loses one of its equal-cost routes at almost every link event,
        and dropping it took down the best paths of every node upstream, which the
        iteration then derived again unchanged (on americas, 780,000 rows taken out for
        41,000 that changed)."""
        graph = _Nodes(self.prog, self.relations | self.lower)
        over = self._closure(d_low, a_low, old, graph)
        blocked: Rows = {}
        for _ in range(RESCUE_ROUNDS):
            rescued = self._rescue(over, a_low)
            if not rescued:
                break
            blocked = _union(blocked, rescued)
            over = graph.reach(d_low, blocked)
        return over

    def _rescue(self, over: Rows, a_low: Rows) -> Rows:
        """Aggregate rows of ``over`` whose group, aggregated afresh over what surely
        remains (rows not in ``over``, lower rows that were there before the batch), gives
        the same row. Their witnesses are outside every later, smaller ``over``, so keeping
        them keeps the start of the iteration grounded. Relations go in ``self.order``, so
        a best path may rest on a best cost kept just before it."""
        prog = self.prog
        gone = dict(over)
        out: Rows = {}
        for name in self.order:
            rows = gone.get(name)
            if rows is None or not self.aggs_of.get(name):
                continue
            rel = prog.rels[name]
            read = self.reader(_union(gone, a_low), {})
            aggs = self.aggs_of[name]
            if len(aggs) == 1 and aggs[0].from_head is not None and not self.plain_of.get(name):
                # the relation's one rule: a row stays if a binding still gives it
                k = rows[holds(aggs[0], prog, rows, read)]
                if len(k):
                    out[name] = k
                    gone[name] = np.setdiff1d(rows, k, assume_unique=True)
                continue
            kept = []
            for ar in aggs:
                groups = rel.cols[rows][:, ar.group_pos].astype(np.int64)
                heads = aggregate_groups(ar, prog, unique_rows(groups)[0], read)
                if len(heads):
                    found = rel.find(heads)
                    kept.append(found[found >= 0])
            if kept:
                k = np.concatenate(kept)
                k = distinct(k[RowSet(rel.n, rows).has(k)])
                if len(k):
                    out[name] = k
                    gone[name] = np.setdiff1d(rows, k, assume_unique=True)
        return out

    def _closure(self, d_low: Rows, a_low: Rows, old: Reader, graph: _Nodes) -> Rows:
        """Every stratum row that leans, directly or through others, on a lost lower row,
        over the old view; ``graph`` keeps each leaning (an edge from the row leant on),
        so a closure that must not spread from some rows is a search, not these joins."""
        prog = self.prog
        found: dict[str, list[np.ndarray]] = {}
        marks: dict[str, np.ndarray] = {}
        pos, neg = dict(d_low), dict(a_low)
        while any(len(v) for v in pos.values()) or any(len(v) for v in neg.values()):
            newly: dict[str, list[np.ndarray]] = {}
            for r in self.plain:
                src = graph.sources()
                heads = self._heads(r, pos, neg, old, src)
                if heads:
                    rel = prog.rels[r.rule.head.relation]
                    rows = rel.find(np.concatenate(heads))
                    hit = (rows >= 0) & rel.alive[np.maximum(rows, 0)]
                    graph.edges(src.all()[hit], rel.name, rows[hit])
                    newly.setdefault(rel.name, []).append(rows[hit])
            for ar in self.aggs:
                rel = prog.rels[ar.rule.head.relation]
                for start, tab in started_tables(ar, prog, pos, neg, old):
                    qi, rows = self._leaned(ar, tab)
                    rows_alive = rel.alive[rows]
                    qi, rows = qi[rows_alive], rows[rows_alive]
                    src = (graph.node(ar.atoms[start].relation, tab.atoms[start][qi])
                           if start >= 0 else np.full(len(rows), _Nodes.ROOT, np.int64))
                    graph.edges(src, rel.name, rows)
                    newly.setdefault(rel.name, []).append(rows)
            pos, neg = {}, {}
            for name, parts in newly.items():
                rel = prog.rels[name]
                rows = distinct(np.concatenate(parts))
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

    def _leaned(self, ar: AggRule, tab: Table) -> tuple[np.ndarray, np.ndarray]:
        """(binding, row) for the rows of the groups these bindings belong to whose value
        may move if the bindings go: any for COUNT and SUM, only an equal extreme for MIN
        and MAX."""
        prog = self.prog
        groups = _group_cols(ar, prog, tab)
        qi, rows = group_rows(ar, prog, groups)
        if ar.agg.func in ("MIN", "MAX") and len(rows):
            vals = tab.vars[ar.agg.var.name]  # type: ignore[union-attr]
            rel = prog.rels[ar.rule.head.relation]
            keep = rel.cols[rows, ar.pos] == vals[qi]
            qi, rows = qi[keep], rows[keep]
            if ar.payload_pos and len(rows):
                # an arg-min row is its group's least (value, payload): a binding with the
                # same value and another payload was not chosen, and losing it moves nothing
                pay = head_columns(ar.rule, prog.values, tab.take(qi), skip=ar.pos)
                keep = np.all(rel.cols[rows][:, ar.payload_pos] == pay[:, ar.payload_pos],
                              axis=1)
                qi, rows = qi[keep], rows[keep]
        return qi, rows

    def maintain(self, ch: _Changes) -> None:
        """Move the stratum from its old fixpoint to the new one (from nothing, when the
        batch brought every lower row: the load).

        Relations are recomputed one at a time in ``self.order`` (Gauss-Seidel), each from
        what changed in its inputs since it was last computed, so one sweep carries a change
        through route and best path: a hop per sweep, where a Jacobi step that
        recomputes everything from the last step's state needs one per relation of the
        cycle. Any order reaches the same fixpoint: from the overdeleted state every row is
        grounded in rows below, as in the from-scratch iteration."""
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
        over = self._overdelete(d_low, a_low, self.reader(a_low, d_low))
        # rows overdeleted but not yet recomputed: the current view hides them
        hidden: Rows = dict(over)
        pending: Pending = {}
        for name in self.order:
            p = {}
            for r in self.reads_of[name]:
                d, a = d_low.get(r, over.get(r)), a_low.get(r)
                if d is not None or a is not None:
                    p[r] = (_empty() if d is None else d, _empty() if a is None else a)
            if p:
                pending[name] = p
        # From nothing every relation waits for the whole sweep (Jacobi): the oracle's own
        # sequence of iterations, so a load is the oracle's answer for every program, not only
        # for those with one fixpoint (maintenance needs that anyway).
        jacobi = all(prog.rels[n].count == 0 for n in self.relations)
        # cheapest first after an overdeletion only: a batch that only adds spreads its
        # values outwards, cheapest first already, and holding rows back there only adds
        # sweeps (americas, link costs 1-100: 14.1 s for 50 link ups, 18.8 s holding)
        cheapest = not jacobi and bool(d_low)
        for _ in range(MAX_ITERATIONS):
            if not pending:
                return
            self.iterations += 1
            done = []
            for name in self.order:
                p = pending.pop(name, None)
                if p is None:
                    continue
                wait = self._cheapest(name, p) if cheapest else None
                d_in = {r: d for r, (d, _) in p.items() if len(d)}
                a_in = {r: a for r, (_, a) in p.items() if len(a)}
                unseen = hidden if wait is None else _union(hidden, {wait[0]: wait[1]})
                after = self.reader(unseen, {})
                before = self.reader(_union(unseen, a_in), d_in)
                first = (over, hidden[name]) if name in hidden else None
                done.append((name, *self.step(name, d_in, a_in, before, after, first)))
                if not jacobi:
                    self._publish(ch, pending, hidden, *done.pop())
                    if wait is not None:  # still to come, as far as ``name`` has seen
                        _merge(pending.setdefault(name, {}), wait[0], _empty(), wait[1])
            for name, gone, come in done:
                self._publish(ch, pending, hidden, name, gone, come)
        raise EvalError(f"relations {', '.join(sorted(self.relations))} recurse through an "
                        f"aggregate and did not settle after {MAX_ITERATIONS} iterations "
                        "(does a cycle of zero or negative costs keep improving?)")

    def _levelled(self) -> dict[str, tuple[str, int]]:
        """The arg-min relations fed cheapest first: made by one rule, a_MIN over one atom
        of the stratum whose value it copies; per relation, that atom's relation and the
        value's position in it (found once; a stage pickled before it finds them then)."""
        got = self.__dict__.get("_levelled_of")
        if got is None:
            got = self._levelled_of = {}
            for name, ars in self.aggs_of.items():
                ar = ars[0]
                if (len(ars) == 1 and not self.plain_of.get(name) and ar.agg.func == "MIN"
                        and ar.copies is not None and ar.atoms[0].relation in self.relations):
                    got[name] = (ar.atoms[0].relation, ar.copies[ar.pos])
        return got

    def _cheapest(self, name: str, p: dict[str, tuple[np.ndarray, np.ndarray]]
                  ) -> tuple[str, np.ndarray] | None:
        """Hold back the input rows that joined arg-min relation ``name`` past the window
        of the least value among them (``CHEAPEST_WINDOW``): ``p`` keeps those within it,
        and the rest are returned (their relation, rows) to wait in its pending input, out
        of its view meanwhile (docs/engine.md, "Cheapest first"). None when nothing waits:
        not such a relation, fewer than ``CHEAPEST_FROM`` rows, all in the window, or values
        that are not small non-negative integers (only those have ids in the order of their
        values)."""
        lev = self._levelled().get(name)
        if lev is None:
            return None
        src, at = lev
        got = p.get(src)
        if got is None or len(got[1]) < max(CHEAPEST_FROM, 2):
            return None
        d, a = got
        v = self.prog.rels[src].cols[a, at]
        least = int(v.min())
        if least < 0 or v.max() >= SMALL:
            return None
        now = v <= least + least // CHEAPEST_WINDOW
        if now.all():
            return None
        p[src] = (d, a[now])
        self.held = self.__dict__.get("held", 0) + 1
        return src, a[~now]

    def _publish(self, ch: _Changes, pending: Pending, hidden: Rows, name: str,
                 gone: np.ndarray, come: np.ndarray) -> None:
        """Apply a relation's step and add it to the pending input of its readers."""
        prog = self.prog
        rel = prog.rels[name]
        if len(gone):
            ch.touch(rel, gone)
            rel.set_dead(gone)
            ch.kill(name, gone)
        if len(come):
            ch.touch(rel, come)
            rel.set_alive(come)
        # what its readers see change: from the view (hidden rows out) to the rows
        h = hidden.pop(name, None)
        if h is not None:
            gone, come = (np.setdiff1d(gone, h, assume_unique=True),
                          union(come, np.setdiff1d(h, gone, assume_unique=True)))
        if not len(gone) and not len(come):
            return
        for q in self.readers_of[name]:
            _merge(pending.setdefault(q, {}), name, gone, come)
            if not any(len(d) or len(a) for d, a in pending[q].values()):
                del pending[q]


def _without(rows: np.ndarray, drop: np.ndarray | None) -> np.ndarray:
    if drop is None or not len(rows) or not len(drop):
        return rows
    return rows[~RowSet(int(drop.max()) + 1, drop).has(rows)]


def _union(a: Rows, b: Rows) -> Rows:
    out = dict(a)
    for k, v in b.items():
        out[k] = union(out[k], v) if k in out else v
    return out


def _merge(p: dict[str, tuple[np.ndarray, np.ndarray]], name: str, gone: np.ndarray,
           come: np.ndarray) -> None:
    """Add a change to a reader's pending input change, netting a row that went and came
    back (or came and went) since the reader last looked."""
    old = p.get(name)
    if old is None:
        p[name] = (gone, come)
        return
    d0, a0 = old
    d = union(np.setdiff1d(d0, come, assume_unique=True),
                   np.setdiff1d(gone, a0, assume_unique=True))
    a = union(np.setdiff1d(a0, gone, assume_unique=True),
                   np.setdiff1d(come, d0, assume_unique=True))
    p[name] = (d, a)


class _Sources(list):
    """Source nodes of head rows, in the order ``_heads`` makes them."""

    def __init__(self, nodes: _Nodes) -> None:
        super().__init__()
        self.node = nodes.node

    def all(self) -> np.ndarray:
        return np.concatenate(self) if self else _empty()


class _Nodes:
    """The rows an overdeletion reached, as a graph: a node per (relation, row), an edge
    from each row to a row that leant on it. Recording the first closure's edges makes the
    closures after a rescue one compiled search (``kernels.reach``) instead of a join per
    hop: with unit costs a closure runs as many rounds as the longest route it reaches."""

    ROOT = -1  # the source of heads reached from a negated atom: always reached

    def __init__(self, prog: ColumnarProgram, names: frozenset[str] | set[str]) -> None:
        self.names = sorted(names)
        self.off: dict[str, int] = {}
        at = 0
        for name in self.names:
            self.off[name] = at
            at += prog.rels[name].n
        self.src: list[np.ndarray] = []
        self.dst: list[np.ndarray] = []

    def node(self, name: str, rows: np.ndarray) -> np.ndarray:
        return rows.astype(np.int64) + self.off[name]

    def sources(self) -> _Sources:
        return _Sources(self)

    def edges(self, src: np.ndarray, name: str, rows: np.ndarray) -> None:
        if len(rows):
            self.src.append(src)
            self.dst.append(self.node(name, rows))

    def reach(self, roots: Rows, blocked: Rows) -> Rows:
        """Rows reached from ``roots`` along the recorded edges without entering a
        ``blocked`` row, by relation (roots themselves left out)."""
        src = np.concatenate(self.src) if self.src else _empty()
        dst = np.concatenate(self.dst) if self.dst else _empty()
        start = [np.array([self.ROOT], np.int64)]
        start += [self.node(n, r) for n, r in roots.items() if len(r)]
        stop = [self.node(n, r) for n, r in blocked.items() if len(r)]
        nodes, inv = np.unique(np.concatenate([src, dst, *start, *stop]), return_inverse=True)
        m = len(src)
        s_local, d_local = inv[:m], inv[m:2 * m]
        k = 2 * m + sum(len(x) for x in start)
        got = kernels.reach(len(nodes), s_local, d_local, inv[2 * m:k], inv[k:])
        reached = np.sort(nodes[got])  # distinct: the kernel visits a node once
        reached = reached[~np.isin(reached, np.concatenate(start))]
        out: Rows = {}
        bounds = [self.off[n] for n in self.names] + [np.iinfo(np.int64).max]
        for j, name in enumerate(self.names):
            part = reached[(reached >= bounds[j]) & (reached < bounds[j + 1])]
            if len(part) and name not in roots:
                out[name] = part - self.off[name]
        return out
