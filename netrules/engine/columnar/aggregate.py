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
from netrules.engine.columnar.values import SMALL
from netrules.facts import sort_key
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
        self.body_vars = sorted(set().union(*(ast.variables_of(lit) for lit in rule.body)))


def _group_cols(ar: AggRule, prog: ColumnarProgram, tab: Table) -> np.ndarray:
    cols = []
    for i in ar.group_pos:
        t = ar.rule.head.args[i]
        if isinstance(t, ast.Var):
            cols.append(tab.vars[t.name])
        else:
            cols.append(np.full(tab.n, prog.values.encode(t.value), dtype=np.int64))
    return np.stack(cols, axis=1) if cols else np.zeros((tab.n, 0), dtype=np.int64)


def _touched(ar: AggRule, prog: ColumnarProgram, ch: _Changes) -> np.ndarray:
    """Group rows (ids of the head's non-aggregate arguments) whose bindings changed."""
    new: Reader = lambda rel, rows: rel.alive[rows]  # noqa: E731
    batch = ch.batch
    old: Reader = lambda rel, rows: rel.was_alive(rows, batch)  # noqa: E731
    found = []
    for i, atom in enumerate(ar.atoms):
        add, rem = ch.net(prog.rels[atom.relation])
        for rows, read in ((add, new), (rem, old)):
            if len(rows):
                tab = prog.start(ar.rule, atom, rows, i)
                tab = ar.by_start[i].run(prog.rels, prog.values, tab, lambda j, r=read: r, read)
                found.append(_group_cols(ar, prog, tab))
    for atom, join in ar.negs:
        add, rem = ch.net(prog.rels[atom.relation])
        for rows, read in ((rem, new), (add, old)):
            if len(rows):
                tab = prog.start(ar.rule, atom, rows, None)
                tab = join.run(prog.rels, prog.values, tab, lambda j, r=read: r, read)
                found.append(_group_cols(ar, prog, tab))
    if not found:
        return np.zeros((0, len(ar.group_pos)), dtype=np.int64)
    groups = np.concatenate(found)
    if len(groups) and groups.shape[1]:
        groups = np.unique(groups, axis=0)
    elif len(groups):
        groups = groups[:1]
    return groups


def _order_rank(prog: ColumnarProgram, vals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank of each value in sort_key order, the distinct values by rank)."""
    uniq, inv = np.unique(vals, return_inverse=True)
    if (uniq < SMALL).all():
        return inv, uniq
    decoded = prog.values.decode_column(uniq)
    order = sorted(range(len(uniq)), key=lambda k: sort_key(decoded[k]))
    rank_of = np.empty(len(uniq), dtype=np.int64)
    rank_of[order] = np.arange(len(uniq))
    return rank_of[inv], uniq[order]


def _aggregate(ar: AggRule, prog: ColumnarProgram, groups: np.ndarray) -> np.ndarray:
    """The head rows of the given groups over the new view (groups with no binding vanish)."""
    new: Reader = lambda rel, rows: rel.alive[rows]  # noqa: E731
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
        return np.zeros((0, width), dtype=np.int64)
    gcols = _group_cols(ar, prog, tab)
    same = np.all(gcols == groups[tab.vars["#g"]], axis=1)  # constants in the head
    tab = tab.take(np.flatnonzero(same))
    if tab.n == 0:
        return np.zeros((0, width), dtype=np.int64)
    g = tab.vars["#g"]
    func = ar.agg.func
    if func in ("COUNT", "SUM"):
        # distinct bindings of the body's variables, as the reference counts them
        cols = [g] + [tab.vars[v] for v in ar.body_vars if v in tab.vars]
        uniq = np.unique(np.stack(cols, axis=1), axis=0, return_index=True)[1]
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
        rank, by_rank = _order_rank(prog, raw)
        if ar.payload_pos:
            return _arg_extreme(ar, prog, tab, groups, inv, gs, rank, raw, width)
        best = np.full(len(gs), -1 if func == "MAX" else np.iinfo(np.int64).max, np.int64)
        (np.maximum if func == "MAX" else np.minimum).at(best, inv, rank)
        out_vals = by_rank[best]
    heads = np.zeros((len(gs), width), dtype=np.int64)
    heads[:, ar.pos] = out_vals
    for k, i in enumerate(ar.group_pos):
        heads[:, i] = groups[gs, k]
    return heads


def _arg_extreme(ar: AggRule, prog: ColumnarProgram, tab: Table, groups: np.ndarray,
                 inv: np.ndarray, gs: np.ndarray, rank: np.ndarray, raw: np.ndarray,
                 width: int) -> np.ndarray:
    """Per group, the binding with the extreme value and, among those, the smallest payload
    by ``sort_key`` (``reference.best_pair``'s rule)."""
    pay = head_columns(ar.rule, prog.values, tab, skip=ar.pos)[:, ar.payload_pos]
    uniq, pinv = np.unique(pay, axis=0, return_inverse=True)
    pinv = pinv.reshape(-1)
    decoded = prog.values.decode_rows(uniq)
    order = sorted(range(len(uniq)), key=lambda k: sort_key(tuple(decoded[k])))
    prank = np.empty(len(uniq), dtype=np.int64)
    prank[order] = np.arange(len(uniq))
    vkey = -rank if ar.agg.func == "MAX" else rank
    pick = np.lexsort((prank[pinv], vkey, inv))
    first = pick[np.r_[True, inv[pick][1:] != inv[pick][:-1]]]
    heads = np.zeros((len(gs), width), dtype=np.int64)
    heads[:, ar.pos] = raw[first]
    for k, i in enumerate(ar.group_pos):
        heads[:, i] = groups[gs, k]
    for k, i in enumerate(ar.payload_pos):
        heads[:, i] = pay[first, k]
    return heads


def maintain_aggregate(ar: AggRule, prog: ColumnarProgram, ch: _Changes) -> None:
    """Replace the head rows of every group the batch touched by the group's new value."""
    groups = _touched(ar, prog, ch)
    if not len(groups):
        return
    rel = prog.rels[ar.rule.head.relation]
    heads = _aggregate(ar, prog, groups)
    # the old rows of those groups
    pos = tuple(ar.group_pos)
    if pos:
        qi, old = rel.probe(pos, [groups[:, k] for k in range(len(pos))])
        old = old[rel.alive[old]]
    else:
        old = rel.alive_rows()
    new_rows = rel.rows_for(heads) if len(heads) else np.empty(0, np.int64)
    keep = np.zeros(rel.n, dtype=bool)
    keep[new_rows] = True
    gone = np.unique(old[~keep[old]])
    came = np.unique(new_rows[~rel.alive[new_rows]])
    if len(gone):
        ch.touch(rel, gone)
        rel.set_dead(gone)
        ch.kill(rel.name, gone)
    if len(came):
        ch.touch(rel, came)
        prog.epoch += 1
        rel.set_alive(came, prog.epoch)
