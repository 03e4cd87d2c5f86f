"""Aggregate rules maintained group by group: a batch recomputes only the groups it touched.

A group is touched when a body binding of it appeared or vanished. Bindings that appeared
hold a row added below (or lack a negated row removed below) and are found by joining from
those rows over the new view; bindings that vanished hold a removed row (or lack a negated row
added below) and are found over the *old* view (``Relation.was_alive``). Each touched group is
then aggregated afresh from the new view with its variables bound, and the head rows of those
groups are replaced by the result: exact for MIN, MAX, COUNT and SUM alike, at the cost of the
touched groups only (paper 004's trace-proportional aggregate maintenance, without keeping the
trace).

Grouping follows the reference: by the head's other arguments, over distinct bindings of the
body's variables; MIN and MAX order values as ``netrules.facts.sort_key`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from netrules.engine.columnar.joins import Join, Reader, Table, compile_join, head_columns
from netrules.engine.columnar.keys import group_ids, unique_rows
from netrules.engine.columnar.relation import RowSet
from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.values import SMALL
from netrules.lang import ast

if TYPE_CHECKING:
    from netrules.engine.columnar.psn import ColumnarProgram, _Changes

__all__ = ["AggRule", "why_not_aggregate", "maintain_aggregate"]


def why_not_aggregate(rule: ast.Rule) -> str | None:
    pos, agg = rule.head.aggregate()  # type: ignore[misc]
    g = rule.grouping
    for i, t in enumerate(rule.head.args):
        if g is not None and i in g.group and not isinstance(t, ast.Var | ast.Const):
            return f"the aggregate head of `{rule}` groups by an expression ({t})"
    if agg.var is None and agg.func != "COUNT":
        return f"`{rule}` aggregates nothing"
    return None


class AggRule:
    def __init__(self, rid: int, rule: ast.Rule) -> None:
        self.id, self.rule = rid, rule
        self.pos, self.agg = rule.head.aggregate()  # type: ignore[misc]
        self.atoms = rule.atoms()
        self.by_start = [compile_join(rule, i) for i in range(len(self.atoms))]
        self.negs: list[tuple[ast.Atom, Join]] = []
        for lit in rule.body:
            if isinstance(lit, ast.Negation):
                nv = frozenset(ast.variables_of(lit.atom))
                self.negs.append((lit.atom, compile_join(rule, None, nv)))
        g = rule.grouping
        assert g is not None
        # a row per group (the planner's grouping, ``Rule.grouping``); payload arguments come
        # from a binding achieving the extreme: an arg-min
        self.group_pos = list(g.group)
        self.payload_pos = list(g.payload)
        gv = frozenset(t.name for i, t in enumerate(rule.head.args)
                       if i in g.group and isinstance(t, ast.Var) and t.name != "_")
        self.by_group = compile_join(rule, None, gv)
        self.group_vars = sorted(gv)
        # an extreme moves by its old row and what came, unless its chosen binding went
        # (``shift_extreme``); a negated atom's change would need both directions' joins
        self.shifts = self.agg.func in ("MIN", "MAX") and self.agg.var is not None \
            and not self.negs
        self.copies = self._copies()
        # solving the body for a given head row, its value bound too: is that row still
        # a binding's (``holds``)
        hv = [self.agg.var.name if i == self.pos else getattr(t, "name", None)  # type: ignore[union-attr]
              for i, t in enumerate(rule.head.args)] if self.shifts else [None]
        self.head_vars = hv if None not in hv and "_" not in hv else None
        self.from_head = (compile_join(rule, None, frozenset(hv), check=True)
                          if self.head_vars else None)
        self.body_vars = sorted(set().union(*(ast.variables_of(lit) for lit in rule.body)))
        # per positive atom (then per negated atom), the atom positions holding the group's
        # arguments when the atom alone binds them all: a changed row's group is then read
        # off the row, with no join (``touched_groups``)
        self.group_at = [self._group_at(a) for a in self.atoms]
        self.neg_group_at = [self._group_at(a) for a, _ in self.negs]

    def _copies(self) -> list[int] | None:
        """For a body of one atom of distinct variables, the atom position each head
        argument copies (the aggregate's its variable's): a binding is a row, and its head
        is the row's columns rearranged, with no join (``_binding_heads``)."""
        body = self.rule.body
        if len(body) != 1 or not isinstance(body[0], ast.Atom) or self.agg.var is None:
            return None
        names = [t.name if isinstance(t, ast.Var) else None for t in body[0].args]
        if None in names or "_" in names or len(set(names)) != len(names):
            return None
        out = []
        for i, t in enumerate(self.rule.head.args):
            name = self.agg.var.name if i == self.pos else getattr(t, "name", None)  # type: ignore[union-attr]
            if name not in names:
                return None
            out.append(names.index(name))
        return out

    def _group_at(self, atom: ast.Atom) -> list[int] | None:
        at = []
        for i in self.group_pos:
            t = self.rule.head.args[i]
            if not isinstance(t, ast.Var) or t.name == "_":
                return None
            p = next((p for p, a in enumerate(atom.args)
                      if isinstance(a, ast.Var) and a.name == t.name), None)
            if p is None:
                return None
            at.append(p)
        return at


def _group_cols(ar: AggRule, prog: ColumnarProgram, tab: Table) -> np.ndarray:
    cols = []
    for i in ar.group_pos:
        t = ar.rule.head.args[i]
        if isinstance(t, ast.Var):
            cols.append(tab.vars[t.name])
        else:
            cols.append(np.full(tab.n, prog.values.encode(t.value), dtype=np.int64))
    return np.stack(cols, axis=1) if cols else np.zeros((tab.n, 0), dtype=np.int64)


Rows = dict[str, np.ndarray]


def tables_from(ar: AggRule, prog: ColumnarProgram, pos: Rows, neg: Rows, read: Reader
                ) -> list[Table]:
    """Body bindings over ``read`` that use a row of ``pos`` (at a positive atom) or meet a
    row of ``neg`` (at a negated atom)."""
    return [t for _, t in started_tables(ar, prog, pos, neg, read)]


def started_tables(ar: AggRule, prog: ColumnarProgram, pos: Rows, neg: Rows, read: Reader
                   ) -> list[tuple[int, Table]]:
    """``tables_from`` with the body atom each table started from (-1: a negated atom),
    whose rows are ``tab.atoms[i]``: overdeletion records which row a group leant on."""
    out = []
    for i, atom in enumerate(ar.atoms):
        rows = pos.get(atom.relation)
        if rows is not None and len(rows):
            tab = prog.start(ar.rule, atom, rows, i)
            out.append((i, ar.by_start[i].run(prog.rels, prog.values, tab,
                                              lambda j: read, read)))
    for atom, join in ar.negs:
        rows = neg.get(atom.relation)
        if rows is not None and len(rows):
            tab = prog.start(ar.rule, atom, rows, None)
            out.append((-1, join.run(prog.rels, prog.values, tab, lambda j: read, read)))
    return [(i, t) for i, t in out if t.n]


def _distinct_groups(ar: AggRule, found: list[np.ndarray]) -> np.ndarray:
    if not found:
        return np.zeros((0, len(ar.group_pos)), dtype=np.int64)
    groups = np.concatenate(found)
    if len(groups) and groups.shape[1]:
        groups = unique_rows(groups)[0]
    elif len(groups):
        groups = groups[:1]
    return groups


def touched_groups(ar: AggRule, prog: ColumnarProgram, d_in: Rows, a_in: Rows,
                   before: Reader, after: Reader) -> np.ndarray:
    """Groups with a binding that stopped holding (over ``before``) or started (``after``),
    when ``d_in`` left the input and ``a_in`` joined it; a superset where an atom binds
    every group argument: the changed rows' own groups, read off the rows (a group whose
    value did not move is recomputed to the rows it has, so ``regroup`` reports nothing
    for it, and four joins per step are saved)."""
    found: list[np.ndarray] = []
    joined: list[int] = []
    atoms = [*ar.atoms, *(a for a, _ in ar.negs)]
    for i, (atom, at) in enumerate(zip(atoms, [*ar.group_at, *ar.neg_group_at], strict=True)):
        if at is None:
            joined.append(i if i < len(ar.atoms) else len(ar.atoms) - 1 - i)
            continue
        rel = prog.rels[atom.relation]
        for rows in (d_in.get(atom.relation), a_in.get(atom.relation)):
            if rows is not None and len(rows):
                found.append(rel.cols[rows][:, at].astype(np.int64))
    if joined:
        found += [_group_cols(ar, prog, t)
                  for t in _tables(ar, prog, d_in, a_in, before, joined)
                  + _tables(ar, prog, a_in, d_in, after, joined)]
    return _distinct_groups(ar, found)


def _tables(ar: AggRule, prog: ColumnarProgram, pos: Rows, neg: Rows, read: Reader,
            which: list[int]) -> list[Table]:
    """``tables_from`` for the atoms in ``which`` only (negated atom k as ``-1 - k``)."""
    if len(which) == len(ar.atoms) + len(ar.negs):
        return tables_from(ar, prog, pos, neg, read)
    pos = {a.relation: pos[a.relation] for i, a in enumerate(ar.atoms)
           if i in which and a.relation in pos}
    neg = {a.relation: neg[a.relation] for k, (a, _) in enumerate(ar.negs)
           if -1 - k in which and a.relation in neg}
    return tables_from(ar, prog, pos, neg, read)


def _touched(ar: AggRule, prog: ColumnarProgram, ch: _Changes) -> np.ndarray:
    """Group rows (ids of the head's group arguments) whose bindings changed in the batch."""
    new: Reader = lambda rel, rows: rel.alive[rows]  # noqa: E731
    old: Reader = lambda rel, rows: rel.was_alive(rows)  # noqa: E731
    d_in: Rows = {}
    a_in: Rows = {}
    for name in {a.relation for a in ar.atoms} | {a.relation for a, _ in ar.negs}:
        add, rem = ch.net(prog.rels[name])
        d_in[name], a_in[name] = rem, add
    return touched_groups(ar, prog, d_in, a_in, old, new)


def _order_rank(prog: ColumnarProgram, vals: np.ndarray, group: np.ndarray) -> np.ndarray:
    """A rank per value that orders it as ``sort_key`` does against every other value of
    its group. Only values sharing a group with a different value are decoded and compared
    (a best route usually has one least-cost candidate, so paths are rarely compared)."""
    if (vals < SMALL).all():
        return vals
    pair = unique_rows(np.stack([group, vals], axis=1))[0]
    many = np.bincount(pair[:, 0], minlength=int(group.max()) + 1) > 1
    contested = many[group]
    rank = np.zeros(len(vals), dtype=np.int64)
    if contested.any():
        rank[contested] = prog.values.order_rank(vals[contested])
    return rank


def aggregate_groups(ar: AggRule, prog: ColumnarProgram, groups: np.ndarray,
                     read: Reader | None = None) -> np.ndarray:
    """The head rows of the given groups over ``read`` (default: the alive view); a group
    with no binding has no row."""
    return _aggregate(ar, prog, groups, read)[1]


def _aggregate(ar: AggRule, prog: ColumnarProgram, groups: np.ndarray,
               read: Reader | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(index into ``groups`` of each head, the heads) of ``aggregate_groups``."""
    none = np.empty(0, np.int64)
    new: Reader = read or (lambda rel, rows: rel.alive[rows])
    tab = Table(len(groups))
    keep = np.ones(len(groups), dtype=bool)
    for k, i in enumerate(ar.group_pos):
        t = ar.rule.head.args[i]
        if isinstance(t, ast.Var) and t.name != "_":
            if t.name in tab.vars:
                keep &= tab.vars[t.name] == groups[:, k]
            else:
                tab.vars[t.name] = groups[:, k]
    tab.vars["#g"] = np.arange(len(groups), dtype=np.int64)
    if not keep.all():
        tab = tab.take(np.flatnonzero(keep))
    tab = ar.by_group.run(prog.rels, prog.values, tab, lambda j: new, new)
    width = len(ar.rule.head.args)
    if tab.n == 0:
        return none, np.zeros((0, width), dtype=np.int64)
    gcols = _group_cols(ar, prog, tab)
    same = np.all(gcols == groups[tab.vars["#g"]], axis=1)  # constants in the head
    tab = tab.take(np.flatnonzero(same))
    if tab.n == 0:
        return none, np.zeros((0, width), dtype=np.int64)
    g = tab.vars["#g"]
    func = ar.agg.func
    if func in ("COUNT", "SUM"):
        # distinct bindings of the body's variables, as the reference counts them
        cols = [g] + [tab.vars[v] for v in ar.body_vars if v in tab.vars]
        uniq = unique_rows(np.stack(cols, axis=1))[1]
        tab = tab.take(np.sort(uniq))
        g = tab.vars["#g"]
    gs, inv = np.unique(g, return_inverse=True)
    if func == "COUNT":
        vals = np.bincount(inv, minlength=len(gs)).astype(np.int64)
        out_vals = prog.values.encode_many(vals.tolist()) if (vals >= SMALL).any() else vals
    elif func == "SUM":
        raw = tab.vars[ar.agg.var.name]  # type: ignore[union-attr]
        if (raw < SMALL).all():
            sums = np.bincount(inv, weights=raw, minlength=len(gs))
            out_vals = prog.values.encode_many(int(x) for x in sums)
        else:
            dec = prog.values.decode_column(raw)
            acc: list = [0] * len(gs)
            for k, v in zip(inv.tolist(), dec, strict=True):
                acc[k] = acc[k] + v
            out_vals = prog.values.encode_many(acc)
    else:
        raw = tab.vars[ar.agg.var.name]  # type: ignore[union-attr]
        rank = _order_rank(prog, raw, inv)
        if ar.payload_pos:
            return gs, _arg_extreme(ar, prog, tab, groups, inv, gs, rank, raw, width)
        pick = np.lexsort((-rank if func == "MAX" else rank, inv))
        first = pick[np.r_[True, inv[pick][1:] != inv[pick][:-1]]]
        out_vals = raw[first]
    heads = np.zeros((len(gs), width), dtype=np.int64)
    heads[:, ar.pos] = out_vals
    for k, i in enumerate(ar.group_pos):
        heads[:, i] = groups[gs, k]
    return gs, heads


def _arg_extreme(ar: AggRule, prog: ColumnarProgram, tab: Table, groups: np.ndarray,
                 inv: np.ndarray, gs: np.ndarray, rank: np.ndarray, raw: np.ndarray,
                 width: int) -> np.ndarray:
    """Per group, the binding with the extreme value and, among those, the smallest payload
    by ``sort_key`` (``reference.best_pair``'s rule)."""
    pay = head_columns(ar.rule, prog.values, tab, skip=ar.pos)[:, ar.payload_pos]
    first = _pick(ar, prog, inv, len(gs), rank, pay)
    heads = np.zeros((len(gs), width), dtype=np.int64)
    heads[:, ar.pos] = raw[first]
    for k, i in enumerate(ar.group_pos):
        heads[:, i] = groups[gs, k]
    for k, i in enumerate(ar.payload_pos):
        heads[:, i] = pay[first, k]
    return heads


def _pick(ar: AggRule, prog: ColumnarProgram, inv: np.ndarray, n: int, rank: np.ndarray,
          pay: np.ndarray) -> np.ndarray:
    """Index of each group's chosen candidate (``inv``: group of each, 0..n-1, every group
    present): the extreme ``rank``, then the least payload among those reaching it."""
    vkey = -rank if ar.agg.func == "MAX" else rank
    if pay.shape[1] == 1:
        best = prog.values.least_keyed(vkey, pay[:, 0], inv)
        if best is not None:
            return best
    order = np.lexsort((vkey, inv))
    first = order[np.r_[True, inv[order][1:] != inv[order][:-1]]]
    best = np.empty(n, dtype=np.int64)
    best[inv[first]] = vkey[first]
    if not pay.shape[1]:
        return first
    at = np.flatnonzero(vkey == best[inv])
    prank = np.zeros(len(at), dtype=np.int64)
    tied = np.bincount(inv[at], minlength=n) > 1
    if tied[inv[at]].any():
        sel = at[tied[inv[at]]]
        prank[tied[inv[at]]] = _payload_rank(prog, pay[sel], inv[sel])
    pick = np.lexsort((prank, inv[at]))
    return at[pick[np.r_[True, inv[at][pick][1:] != inv[at][pick][:-1]]]]


def _payload_rank(prog: ColumnarProgram, pay: np.ndarray, group: np.ndarray) -> np.ndarray:
    """A rank per row of tied payloads (``group``: each row's group index, from 0) that
    puts each group's least payload (by ``sort_key`` of the tuple) first. A single list
    column, a route, is compared within its group from the front
    (``Values.least_in_groups``): 0 for the least, 1 for the rest; otherwise every payload
    is ranked against every other, column by column."""
    if pay.shape[1] == 1:
        best = prog.values.least_in_groups(pay[:, 0], group)
        if best is not None:
            r = np.ones(len(pay), dtype=np.int64)
            r[best[best >= 0]] = 0
            return r
    cols = [prog.values.order_rank(pay[:, k]) for k in range(pay.shape[1])]
    order = np.lexsort(cols[::-1])
    r = np.empty(len(pay), dtype=np.int64)
    r[order] = np.arange(len(pay))
    return r


def group_rows(ar: AggRule, prog: ColumnarProgram, groups: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(probe index, alive row) of the head rows of the given groups."""
    rel = prog.rels[ar.rule.head.relation]
    pos = tuple(ar.group_pos)
    if pos:
        qi, rows = rel.probe(pos, [groups[:, k] for k in range(len(pos))])
        live = rel.alive[rows]
        return qi[live], rows[live]
    rows = rel.alive_rows()
    return np.zeros(len(rows), np.int64), rows


def regroup(ar: AggRule, prog: ColumnarProgram, groups: np.ndarray,
            read: Reader | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rows that go, rows that come) when the given groups are aggregated afresh over
    ``read`` and compared with the alive rows of those groups."""
    rel = prog.rels[ar.rule.head.relation]
    gs, heads = _aggregate(ar, prog, groups, read)
    qi, old = group_rows(ar, prog, groups)
    kept = np.empty(0, np.int64)
    if len(heads) and len(old):
        # most groups a step touches come out as they were: a head equal to its group's
        # alive row is that row, found without keying it (three hash probes a row)
        at = np.full(len(groups), -1, dtype=np.int64)
        at[gs] = np.arange(len(gs))
        h = at[qi]
        has = np.flatnonzero(h >= 0)
        same = has[np.all(rel.cols[old[has]] == heads[h[has]], axis=1)]
        kept = old[same]
        changed = np.ones(len(heads), dtype=bool)
        changed[h[same]] = False
        heads = heads[changed]
    new_rows = rel.rows_for(heads) if len(heads) else np.empty(0, np.int64)
    stay = np.concatenate([kept, new_rows])
    gone = old[~RowSet(rel.n, stay).has(old)] if len(stay) else old
    return distinct(gone), distinct(new_rows[~rel.alive[new_rows]])


def _binding_heads(ar: AggRule, prog: ColumnarProgram, tabs: list[Table]) -> np.ndarray:
    """Each binding's head row with its own value at the aggregate's position: the row
    its group would hold were it the group's only binding."""
    width = len(ar.rule.head.args)
    out = []
    for tab in tabs:
        heads = head_columns(ar.rule, prog.values, tab, skip=ar.pos)
        heads[:, ar.pos] = tab.vars[ar.agg.var.name]  # type: ignore[union-attr]
        out.append(heads)
    return np.concatenate(out) if out else np.zeros((0, width), dtype=np.int64)


def _changed_heads(ar: AggRule, prog: ColumnarProgram, rows: Rows, read: Reader
                   ) -> np.ndarray:
    """``_binding_heads`` of the bindings over ``read`` that use one of ``rows``."""
    if ar.copies is not None:
        atom = ar.atoms[0]
        got = rows.get(atom.relation)
        if got is None or not len(got):
            return np.zeros((0, len(ar.rule.head.args)), dtype=np.int64)
        return prog.rels[atom.relation].cols[got][:, ar.copies].astype(np.int64)
    return _binding_heads(ar, prog, tables_from(ar, prog, rows, {}, read))


def holds(ar: AggRule, prog: ColumnarProgram, rows: np.ndarray, read: Reader) -> np.ndarray:
    """Which of the given head rows of a MIN or MAX rule some binding over ``read`` still
    gives as it is (value and payload): where ``read`` sees a subset of the bindings the
    rows were chosen from, exactly the rows their groups, aggregated afresh over
    ``read``, would give again, found by solving the body for the rows instead of
    reading every binding of their groups."""
    rel = prog.rels[ar.rule.head.relation]
    tab = Table(len(rows))
    keep = np.ones(len(rows), dtype=bool)
    for p, name in enumerate(ar.head_vars):  # type: ignore[arg-type]
        col = rel.column(rows, p)
        if name in tab.vars:
            keep &= tab.vars[name] == col
        else:
            tab.vars[name] = col
    tab.vars["#k"] = np.arange(len(rows), dtype=np.int64)
    if not keep.all():
        tab = tab.take(np.flatnonzero(keep))
    tab = ar.from_head.run(prog.rels, prog.values, tab, lambda j: read, read)  # type: ignore[union-attr]
    out = np.zeros(len(rows), dtype=bool)
    out[tab.vars["#k"]] = True
    return out


def shift_extreme(ar: AggRule, prog: ColumnarProgram, d_in: Rows, a_in: Rows,
                  before: Reader, after: Reader) -> tuple[np.ndarray, np.ndarray]:
    """``regroup`` of the groups a MIN or MAX rule's input change touches, without reading
    their other bindings where it can: a group whose chosen binding did not leave keeps it
    or takes a better one that came, so its new row is the extreme of its old row and the
    bindings that joined it (on a best route, the old best path and the routes that
    changed). Only a group that lost the binding it chose is aggregated afresh, and a group
    that had no row gets the extreme of what came (nothing else of it held before)."""
    rel = prog.rels[ar.rule.head.relation]
    gone_b = _changed_heads(ar, prog, d_in, before)
    came_b = _changed_heads(ar, prog, a_in, after)
    if not len(gone_b) and not len(came_b):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    gp = ar.group_pos
    groups, inv = group_ids(np.concatenate([gone_b, came_b])[:, gp])
    ng = len(gone_b)
    qi, old = group_rows(ar, prog, groups)
    held = np.bincount(qi, minlength=len(groups))
    cur = np.full(len(groups), -1, dtype=np.int64)
    cur[qi] = old
    many = held > 1  # not one row per group: aggregate it afresh
    lost = np.zeros(len(groups), dtype=bool)
    if ng:
        g = inv[:ng]
        has = cur[g] >= 0
        same = np.all(rel.cols[cur[g[has]]] == gone_b[has], axis=1)
        lost[g[has][same]] = True
    # candidates per group: its old row, then the bindings that came
    with_row = np.flatnonzero((cur >= 0) & ~many)
    c = np.flatnonzero(~many[inv[ng:]])
    cand = np.concatenate([rel.cols[cur[with_row]].astype(np.int64), came_b[c]])
    cg = np.concatenate([with_row, inv[ng:][c]])
    hp: list[np.ndarray] = []
    hg: list[np.ndarray] = []
    fresh = many.copy()
    if len(cand):
        gs, ginv = np.unique(cg, return_inverse=True)
        rank = _order_rank(prog, cand[:, ar.pos], ginv)
        first = _pick(ar, prog, ginv, len(gs), rank, cand[:, ar.payload_pos])
        # a group that lost its chosen binding is settled only by a binding that came
        # and is at least as good (every other binding was no better than the lost one);
        # if its old row still wins, its other bindings must be read
        old_won = first < len(with_row)
        fresh[gs[old_won & lost[gs]]] = True
        ok = ~fresh[gs]
        hp.append(cand[first[ok]])
        hg.append(gs[ok])
    redo = np.flatnonzero(fresh)
    if len(redo):
        gs, heads = _aggregate(ar, prog, groups[redo], after)
        hp.append(heads)
        hg.append(redo[gs])
    if not hp:
        return distinct(old), np.empty(0, np.int64)
    heads, at = np.concatenate(hp), np.concatenate(hg)
    # a head equal to its group's old row is that row (most groups a step touches keep
    # theirs): found without keying it
    was = cur[at]
    same = np.flatnonzero(was >= 0)
    same = same[np.all(rel.cols[was[same]] == heads[same], axis=1)]
    changed = np.ones(len(heads), dtype=bool)
    changed[same] = False
    new_rows = rel.rows_for(heads[changed]) if changed.any() else np.empty(0, np.int64)
    stay = np.concatenate([was[same], new_rows])
    gone = old[~RowSet(rel.n, stay).has(old)] if len(stay) else old
    return distinct(gone), distinct(new_rows[~rel.alive[new_rows]])


def maintain_aggregate(ar: AggRule, prog: ColumnarProgram, ch: _Changes) -> None:
    """Replace the head rows of every group the batch touched by the group's new value."""
    groups = _touched(ar, prog, ch)
    if not len(groups):
        return
    rel = prog.rels[ar.rule.head.relation]
    gone, came = regroup(ar, prog, groups)
    if len(gone):
        ch.touch(rel, gone)
        rel.set_dead(gone)
        ch.kill(rel.name, gone)
    if len(came):
        ch.touch(rel, came)
        rel.set_alive(came)
