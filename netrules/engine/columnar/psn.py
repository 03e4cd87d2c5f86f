"""PSN with ranks and K supports, a set of facts at a time (paper 000, bounded as in
docs/engine.md): the columnar engine's maintenance of positive strata.

Per batch and stratum, in stratum order:

* **kill**: supports using a fact killed below (a vanished base fact, or a suspect of a lower
  stratum) die; a fact left with no kept support is *suspect* and its own supports die in
  turn: a frontier loop of multimap probes and counts, sized by what it reaches;
* **rederive**: suspects are hidden, then rederived from the standing facts, first in one
  step (the rule bodies solved with the head bound), then semi-naively from the revived,
  each revived fact taking rank 1 + its body's highest rank; suspects never revived are gone;
* **insert**: semi-naive from what appeared below, positions before the delta atom reading the
  new view and positions after it the old one (``in_delta`` marks this round's delta rows),
  so each derivation is made once per round, self-joins included.

A round is a handful of vectorised joins per (rule, delta atom); no Python runs per fact
except builtins that cannot be vectorised.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from netrules.engine.columnar.aggregate import AggRule, maintain_aggregate, why_not_aggregate
from netrules.engine.columnar.iterated import IteratedStage
from netrules.engine.columnar.joins import (
    Join,
    Reader,
    Table,
    _Eval,
    bind_head,
    compile_join,
    head_columns,
)
from netrules.engine.columnar.keys import Pairs
from netrules.engine.columnar.relation import Relation, RowSet
from netrules.engine.columnar.supports import Supports, gid, split_gid
from netrules.engine.columnar.values import Values
from netrules.errors import EngineError
from netrules.lang import ast
from netrules.plan import Plan

__all__ = ["ColumnarProgram", "unsupported", "DEFAULT_K"]

DEFAULT_K = 2


def unsupported(plan: Plan) -> str | None:
    """Why the columnar engine cannot run ``plan`` yet (None when it can)."""
    rules_for: dict[str, int] = {}
    for r in plan.rules:
        rules_for[r.head.relation] = rules_for.get(r.head.relation, 0) + 1
    for s in plan.strata:
        for r in s.rules:
            if not r.atoms():
                return f"`{r}` has no positive body atom"
            if r.head.aggregate():
                why = why_not_aggregate(r)
                if why:
                    return why
                if rules_for[r.head.relation] > 1:
                    return (f"{r.head.relation} is derived by an aggregate rule and others; "
                            "the columnar engine keeps an aggregate relation to one rule")
    return None


class _Changes:
    """Rows whose alive flag moved in this batch; each row's flag before the batch is kept
    on the relation (``tbefore``), so the old view costs no copy."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.rows: dict[str, list[np.ndarray]] = {}
        self.killed: dict[str, list[np.ndarray]] = {}

    def touch(self, rel: Relation, rows: np.ndarray) -> None:
        first = rows[~rel.touched[rows]]
        if len(first):
            rel.tbefore[first] = rel.alive[first]
            rel.touched[first] = True
            self.rows.setdefault(rel.name, []).append(first)

    def kill(self, name: str, rows: np.ndarray) -> None:
        self.killed.setdefault(name, []).append(rows)

    def end(self, rels: dict[str, Relation]) -> None:
        """Clear the touched flags: the next batch starts from the view as it is."""
        for name, parts in self.rows.items():
            for rows in parts:
                rels[name].touched[rows] = False

    def net(self, rel: Relation) -> tuple[np.ndarray, np.ndarray]:
        """(added, removed) rows of ``rel`` over the batch."""
        parts = self.rows.get(rel.name)
        if not parts:
            e = np.empty(0, np.int64)
            return e, e
        rows = np.concatenate(parts) if len(parts) > 1 else parts[0]
        was, now = rel.tbefore[rows], rel.alive[rows]
        return rows[now & ~was], rows[was & ~now]

    def killed_gids(self, code: int, name: str) -> np.ndarray:
        ks = self.killed.get(name)
        return gid(code, np.concatenate(ks)) if ks else np.empty(0, np.int64)


class _Rule:
    """A rule compiled once: a Join per delta atom and one from the head (rederivation)."""

    def __init__(self, rid: int, rule: ast.Rule) -> None:
        self.id, self.rule = rid, rule
        self.atoms = rule.atoms()
        self.by_start = [compile_join(rule, i) for i in range(len(self.atoms))]
        hv = frozenset(t.name for t in rule.head.args
                       if isinstance(t, ast.Var) and t.name != "_")
        self.from_head: Join = compile_join(rule, None, hv)
        self.negs: list[tuple[ast.Atom, Join]] = []
        for lit in rule.body:
            if isinstance(lit, ast.Negation):
                nv = frozenset(ast.variables_of(lit.atom))
                self.negs.append((lit.atom, compile_join(rule, None, nv)))


class ColumnarProgram:
    """Every relation of a plan as columns, maintained batch by batch."""

    def __init__(self, plan: Plan, k: int = DEFAULT_K) -> None:
        why = unsupported(plan)
        if why:
            raise EngineError(why)
        if not 1 <= k <= 127:
            raise EngineError(f"k={k}: the columnar engine keeps 1 to 127 supports a fact")
        self.plan, self.k = plan, k
        self.values = Values()
        self.pairs = Pairs()
        self.rels: dict[str, Relation] = {}
        self.codes: dict[str, int] = {}
        for name in sorted(plan.arity):
            self.codes[name] = len(self.codes)
            self.rels[name] = Relation(name, plan.arity[name], self.pairs)
        self.names = sorted(self.codes, key=self.codes.__getitem__)
        self.strata = [(s, frozenset(r.head.relation for r in s.rules
                                     if not r.head.aggregate())) for s in plan.strata]
        self.rules: list[list[_Rule]] = []
        self.aggs: list[list[AggRule]] = []
        self.stages: dict[int, IteratedStage] = {}
        self.rule_list: list[_Rule | AggRule] = []
        width = 1
        for s, _rels in self.strata:
            compiled: list[_Rule] = []
            aggs: list[AggRule] = []
            for r in s.rules:
                rid = len(self.rule_list)
                c = AggRule(rid, r) if r.head.aggregate() else _Rule(rid, r)
                self.rule_list.append(c)
                (aggs if isinstance(c, AggRule) else compiled).append(c)  # type: ignore[arg-type]
                width = max(width, len(r.atoms()))
            if s.iterated:
                self.stages[s.index] = IteratedStage(self, frozenset(s.relations), compiled,
                                                     aggs)
                compiled, aggs = [], []
            self.rules.append(compiled)
            self.aggs.append(aggs)
        self.supports = Supports(width, k)
        self.batch = 0
        self._in_delta: dict[str, RowSet] = {}
        self._scratch = np.zeros(0, dtype=np.int32)
        self.stats = {"rounds": 0, "suspects": 0, "rederived": 0}

    def relation(self, name: str, arity: int) -> Relation:
        """A relation by name; one the program never mentions is kept as base facts (a
        batch may carry them; the views show them, as every strategy does)."""
        rel = self.rels.get(name)
        if rel is None:
            self.codes[name] = len(self.names)
            self.names.append(name)
            rel = self.rels[name] = Relation(name, arity, self.pairs)
        elif rel.arity != arity:
            raise EngineError(f"{name} takes {rel.arity} arguments, not {arity}")
        return rel

    # -- reading views ---------------------------------------------------------------------
    def _new(self) -> Reader:
        return lambda rel, rows: rel.alive[rows]

    def _old(self) -> Reader:
        def read(rel: Relation, rows: np.ndarray) -> np.ndarray:
            d = self._in_delta.get(rel.name)
            return rel.alive[rows] if d is None else rel.alive[rows] & ~d.has(rows)
        return read

    def _mark_delta(self, deltas: dict[str, np.ndarray]) -> None:
        self._in_delta = {}
        for name, rows in deltas.items():
            self._in_delta[name] = RowSet(self.rels[name].n, rows)

    # -- one batch -------------------------------------------------------------------------
    def apply(self, appeared: dict[str, np.ndarray], vanished: dict[str, np.ndarray]
              ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Apply base-fact changes given as rows of ids per relation; returns the net
        (added rows, removed rows) of every relation that changed."""
        self.batch += 1
        self.supports.touched = []
        ch = _Changes(self.batch)
        try:
            for name, cols in vanished.items():
                rel = self.relation(name, cols.shape[1])
                rows = rel.find(cols)
                rows = np.unique(rows[rows >= 0])
                rows = rows[rel.alive[rows]]
                ch.touch(rel, rows)
                rel.set_dead(rows)
                ch.kill(name, rows)
            for name, cols in appeared.items():
                rel = self.relation(name, cols.shape[1])
                rows = np.unique(rel.rows_for(cols))
                rows = rows[~rel.alive[rows]]
                ch.touch(rel, rows)
                rel.set_alive(rows)
            for (stratum, srels), rules, aggs in zip(self.strata, self.rules, self.aggs,
                                                     strict=True):
                if stratum.index in self.stages:
                    self.stages[stratum.index].maintain(ch)
                    continue
                for ar in aggs:
                    maintain_aggregate(ar, self, ch)
                if rules:
                    self._maintain(srels, rules, ch)
            self.supports.compact()
            self.supports.settle()
            self.supports.trim()
            for rel in self.rels.values():
                rel.settle()
                rel.trim()
            out = {}
            for name, rel in self.rels.items():
                add, rem = ch.net(rel)
                if len(add) or len(rem):
                    out[name] = (add, rem)
            return out
        finally:
            ch.end(self.rels)

    def _below(self, srels: frozenset[str], rules: list[_Rule]) -> set[str]:
        return {a.relation for r in rules for a in r.atoms if a.relation not in srels}

    def _maintain(self, srels: frozenset[str], rules: list[_Rule], ch: _Changes) -> None:
        below = self._below(srels, rules)
        killed = [ch.killed_gids(self.codes[n], n) for n in sorted(below)]
        frontier = np.concatenate(killed) if killed else np.empty(0, np.int64)
        blocked = self._blocked(srels, rules, ch)
        suspects = self._kill(srels, frontier, blocked)
        if suspects:
            for name, rows in suspects.items():
                rel = self.rels[name]
                ch.touch(rel, rows)
                rel.set_dead(rows)
                ch.kill(name, rows)
            self._rederive(srels, rules, suspects, ch)
        added: dict[str, np.ndarray] = {}
        for name in below:
            add, _ = ch.net(self.rels[name])
            if len(add):
                added[name] = add
        unblocked = self._unblocked(srels, rules, ch)
        if added or unblocked:
            self._seminaive(srels, rules, added, ch, first=unblocked)

    def _neg_changes(self, rules: list[_Rule], ch: _Changes, which: int
                     ) -> list[tuple[_Rule, ast.Atom, Join, np.ndarray]]:
        out = []
        for r in rules:
            for atom, join in r.negs:
                rows = ch.net(self.rels[atom.relation])[which]
                if len(rows):
                    out.append((r, atom, join, rows))
        return out

    def _blocked(self, srels: frozenset[str], rules: list[_Rule], ch: _Changes) -> np.ndarray:
        """Kept supports that relied on the absence of a fact that appeared below: the
        derivations that held over the old view and meet a newly added negated row."""
        old: Reader = lambda rel, rows: rel.was_alive(rows)  # noqa: E731
        found = []
        for r, atom, join, rows in self._neg_changes(rules, ch, 0):
            tab = join.run(self.rels, self.values, self.start(r.rule, atom, rows, None),
                           lambda j: old, old)
            if not tab.n:
                continue
            heads, body, _ = self._candidates(r, tab, srels)
            hrel = self.rels[r.rule.head.relation]
            hrows = hrel.find(heads)
            ok = hrows >= 0
            hg = gid(self.codes[hrel.name], hrows[ok])
            body = body[ok]
            qi, sids = self.supports.of_heads(hg)
            live = self.supports.rule[sids] == r.id
            qi, sids = qi[live], sids[live]
            same = np.all(self.supports.bodies(sids) == body[qi], axis=1)
            found.append(sids[same])
        return np.concatenate(found) if found else np.empty(0, np.int64)

    def _unblocked(self, srels: frozenset[str], rules: list[_Rule], ch: _Changes
                   ) -> list[tuple[_Rule, np.ndarray, np.ndarray, np.ndarray]]:
        """Candidates that a negated row removed below lets through (over the new view)."""
        new = self._new()
        out = []
        for r, atom, join, rows in self._neg_changes(rules, ch, 1):
            tab = join.run(self.rels, self.values, self.start(r.rule, atom, rows, None),
                           lambda j: new, new)
            if tab.n:
                out.append((r, *self._candidates(r, tab, srels)))
        return out

    def _distinct(self, ids: np.ndarray) -> np.ndarray:
        """The distinct values of ``ids`` (non-negative) in O(len) through a scratch array
        indexed by value: the kill loop's dedupe without a sort."""
        need = int(ids.max()) + 1 if len(ids) else 0
        if len(self._scratch) < need:
            self._scratch = np.zeros(max(need, 2 * len(self._scratch)), dtype=np.int32)
        pos = np.arange(len(ids), dtype=np.int32)
        self._scratch[ids] = pos
        return ids[self._scratch[ids] == pos]

    def _kill(self, srels: frozenset[str], frontier: np.ndarray,
              first: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Suspects of this stratum: facts whose every kept support used a killed fact (or,
        ``first``, was blocked by a negation)."""
        codes = np.array(sorted(self.codes[n] for n in srels), dtype=np.int64)
        found: dict[str, list[np.ndarray]] = {}
        while len(frontier) or (first is not None and len(first)):
            sids = self.supports.using(frontier)
            if first is not None:
                sids = np.concatenate([sids, first[self.supports.alive[first]]])
                first = None
            if len(sids):
                hc, _ = split_gid(self.supports.heads(sids))
                sids = sids[hc == codes[0]] if len(codes) == 1 else sids[np.isin(hc, codes)]
            if not len(sids):
                break
            sids = self._distinct(sids)
            self.supports.kill(sids)
            hc, hr = split_gid(self.supports.heads(sids))
            nxt = []
            for code in codes if len(codes) > 1 else codes[:1]:
                rows = hr[hc == code] if len(codes) > 1 else hr
                if not len(rows):
                    continue
                name = self.names[int(code)]
                rel = self.rels[name]
                np.subtract.at(rel.nsup, rows, 1)
                rows = self._distinct(rows)
                gone = rows[(rel.nsup[rows] <= 0) & rel.alive[rows]]
                if len(gone):
                    # hide them now, so a later frontier step does not pick them again
                    rel.alive[gone] = False
                    found.setdefault(name, []).append(gone)
                    nxt.append(gid(int(code), gone))
            frontier = np.concatenate(nxt) if nxt else np.empty(0, np.int64)
        out = {}
        for name, parts in found.items():
            rows = np.concatenate(parts)
            self.rels[name].alive[rows] = True  # the caller hides them through set_dead
            out[name] = rows
        self.stats["suspects"] += sum(len(r) for r in out.values())
        return out

    # -- derivation rounds -----------------------------------------------------------------
    def _candidates(self, r: _Rule, tab: Table, srels: frozenset[str]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(head rows of ids, body gids, rank) of a solved table."""
        heads = head_columns(r.rule, self.values, tab)
        body = np.full((tab.n, self.supports.width), -1, dtype=np.int64)
        rank = np.zeros(tab.n, dtype=np.int32)
        for j, atom in enumerate(r.atoms):
            rows = tab.atoms[j]
            body[:, j] = gid(self.codes[atom.relation], rows)
            if atom.relation in srels:
                np.maximum(rank, self.rels[atom.relation].rank[rows], out=rank)
        return heads, body, rank + 1

    def start(self, rule: ast.Rule, atom: ast.Atom, rows: np.ndarray, i: int | None
              ) -> Table:
        """A table binding ``atom``'s variables from the given rows of its relation
        (constants and repeated variables filtered); ``i`` records them as body atom i."""
        rel = self.rels[atom.relation]
        tab = Table(len(rows))
        keep = np.ones(len(rows), dtype=bool)
        later = []
        for p, t in enumerate(atom.args):
            col = rel.column(rows, p)
            if isinstance(t, ast.Var):
                if t.name == "_":
                    continue
                if t.name in tab.vars:
                    keep &= tab.vars[t.name] == col
                else:
                    tab.vars[t.name] = col
            elif isinstance(t, ast.Const):
                c = self.values.lookup(t.value)
                keep &= col == (-1 if c is None else c)
            else:
                later.append(p)
        if i is not None:
            tab.atoms[i] = rows
        if later:
            ev = _Eval(self.values, rule)
            for p in later:
                keep &= rel.cols[rows, p] == ev.term(atom.args[p], tab, atom)
        return tab if keep.all() else tab.take(np.flatnonzero(keep))

    def _round(self, srels: frozenset[str], rules: list[_Rule], deltas: dict[str, np.ndarray]
               ) -> list[tuple[_Rule, np.ndarray, np.ndarray, np.ndarray]]:
        self._mark_delta(deltas)
        new, old = self._new(), self._old()
        out = []
        try:
            for r in rules:
                for i, atom in enumerate(r.atoms):
                    rows = deltas.get(atom.relation)
                    if rows is None or not len(rows):
                        continue
                    tab = self.start(r.rule, atom, rows, i)

                    def read(j: int, i: int = i) -> Reader:
                        return new if j < i else old
                    tab = r.by_start[i].run(self.rels, self.values, tab, read, new)
                    if tab.n:
                        out.append((r, *self._candidates(r, tab, srels)))
        finally:
            self._in_delta = {}
        return out

    def _admit(self, cands: list[tuple[_Rule, np.ndarray, np.ndarray, np.ndarray]],
               ch: _Changes, only: dict[str, RowSet] | None = None
               ) -> dict[str, np.ndarray]:
        """Make the candidates' heads that are not alive facts (restricted to ``only``'s
        rows), each with rank min over its candidates and up to K supports of that rank."""
        by_rel: dict[str, list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]] = {}
        for r, heads, body, rank in cands:
            by_rel.setdefault(r.rule.head.relation, []).append((r.id, heads, body, rank))
        born: dict[str, np.ndarray] = {}
        for name, parts in by_rel.items():
            rel = self.rels[name]
            heads = np.concatenate([p[1] for p in parts])
            body = np.concatenate([p[2] for p in parts])
            rank = np.concatenate([p[3] for p in parts])
            rid = np.concatenate([np.full(len(p[1]), p[0], np.int32) for p in parts])
            if only is not None:
                allowed = only.get(name)
                if allowed is None:
                    continue
                rows = rel.find(heads)
                ok = (rows >= 0)
                ok[ok] = allowed.has(rows[ok]) & ~rel.alive[rows[ok]]
            else:
                rows = rel.rows_for(heads)
                ok = ~rel.alive[rows]
            if not ok.any():
                continue
            rows, body, rank, rid = rows[ok], body[ok], rank[ok], rid[ok]
            order = np.lexsort((rank, rows))
            rows, body, rank, rid = rows[order], body[order], rank[order], rid[order]
            start = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            size = np.diff(np.r_[start, len(rows)])
            pos = np.arange(len(rows)) - np.repeat(start, size)
            # the fact's rank is its least candidate's; only supports of that rank are
            # well-founded, and K of them are kept (a round makes each derivation once)
            keep = (pos < self.k) & (rank == np.repeat(rank[start], size))
            facts, frank = rows[start], rank[start]
            rows, body, rid = rows[keep], body[keep], rid[keep]
            self.supports.add(gid(self.codes[name], rows), rid, body)
            rel.rank[facts] = frank
            rel.nsup[facts] = np.bincount(np.searchsorted(facts, rows), minlength=len(facts))
            ch.touch(rel, facts)
            rel.set_alive(facts)
            born[name] = facts
        return born

    def _seminaive(self, srels: frozenset[str], rules: list[_Rule],
                   deltas: dict[str, np.ndarray], ch: _Changes,
                   only: dict[str, RowSet] | None = None,
                   first: list | None = None) -> None:
        while deltas or first:
            self.stats["rounds"] += 1
            cands = self._round(srels, rules, deltas) + (first or [])
            first = None
            deltas = self._admit(cands, ch, only)
            deltas = {k: v for k, v in deltas.items() if len(v)}

    def _rederive(self, srels: frozenset[str], rules: list[_Rule],
                  suspects: dict[str, np.ndarray], ch: _Changes) -> None:
        new = self._new()
        cands = []
        for r in rules:
            rows = suspects.get(r.rule.head.relation)
            if rows is None or not len(rows):
                continue
            rel = self.rels[r.rule.head.relation]
            tab = bind_head(r.rule, rel, rows)
            tab = r.from_head.run(self.rels, self.values, tab, lambda j: new, new)
            if not tab.n:
                continue
            heads, body, rank = self._candidates(r, tab, srels)
            same = np.all(heads == rel.cols[rows[tab.vars["#k"]]], axis=1)
            if same.any():
                cands.append((r, heads[same], body[same], rank[same]))
        revived = self._admit(cands, ch, {n: RowSet(self.rels[n].n, v)
                                          for n, v in suspects.items()})
        self.stats["rederived"] += sum(len(v) for v in revived.values())
        left = {}
        for name, rows in suspects.items():
            rel = self.rels[name]
            left[name] = rows[~rel.alive[rows]]
        if revived:
            self._seminaive(srels, rules, revived, ch,
                            only={n: RowSet(self.rels[n].n, v) for n, v in left.items()})

    # -- reading ---------------------------------------------------------------------------
    def rows_of(self, name: str) -> np.ndarray:
        rel = self.rels[name]
        return rel.cols[rel.alive_rows()]

    def facts(self, name: str) -> list[tuple]:
        return self.values.decode_rows(self.rows_of(name))

    def decode(self, name: str, rows: np.ndarray) -> list[tuple]:
        return self.values.decode_rows(self.rels[name].cols[rows])

    def encode(self, rows: Iterable[tuple], arity: int) -> np.ndarray:
        return self.values.encode_rows(list(rows), arity)

    def contains(self, name: str, args: tuple) -> bool:
        rel = self.rels.get(name)
        if rel is None or len(args) != rel.arity:
            return False
        ids = [self.values.lookup(v) for v in args]
        if any(i is None for i in ids):
            return False
        row = rel.find(np.array([ids], dtype=np.int64).reshape(1, rel.arity))[0]
        return bool(row >= 0 and rel.alive[row])

    def support_of(self, name: str, args: tuple) -> tuple[str, list[tuple[str, tuple]]] | None:
        """(rule label, body facts) of one kept support of a fact, None for a base fact or a
        fact that does not hold."""
        if not self.contains(name, args):
            return None
        rel = self.rels[name]
        ids = np.array([[self.values.lookup(v) for v in args]], dtype=np.int64)
        row = int(rel.find(ids)[0])
        sids = self.supports.of(int(gid(self.codes[name], np.int64(row))))
        if not len(sids):
            return None
        s = int(sids[0])
        r = self.rule_list[int(self.supports.rule[s])]
        body = []
        for g in self.supports.bodies(np.array([s]))[0]:
            if g < 0:
                continue
            code, brow = split_gid(np.int64(g))
            bname = self.names[int(code)]
            body.append((bname, self.values.decode_rows(self.rels[bname].cols[[int(brow)]])[0]))
        label = r.rule.label or str(r.rule.head)
        return label, body

    def supported_changes(self) -> np.ndarray:
        """Gids of the facts whose kept supports changed in the last batch (distinct)."""
        t = self.supports.touched
        return np.unique(np.concatenate(t)) if t else np.empty(0, np.int64)

    def fact_of(self, g: int) -> tuple[str, tuple]:
        code, row = split_gid(np.int64(g))
        name = self.names[int(code)]
        return name, self.values.decode_rows(self.rels[name].cols[[int(row)]])[0]

    def rank_of(self, gids: np.ndarray) -> np.ndarray:
        code, rows = split_gid(gids)
        out = np.zeros(len(gids), dtype=np.int64)
        for c in np.unique(code):
            m = code == c
            out[m] = self.rels[self.names[int(c)]].rank[rows[m]]
        return out

    def alive_gids(self, gids: np.ndarray) -> np.ndarray:
        code, rows = split_gid(gids)
        out = np.zeros(len(gids), dtype=bool)
        for c in np.unique(code):
            m = code == c
            out[m] = self.rels[self.names[int(c)]].alive[rows[m]]
        return out

    def nbytes(self) -> dict[str, int]:
        return {"relations": sum(r.nbytes() for r in self.rels.values()),
                "supports": self.supports.nbytes(), "pairs": self.pairs.nbytes(),
                "lists": self.values.nbytes()}

    def fact_count(self) -> int:
        return sum(r.count for r in self.rels.values())

