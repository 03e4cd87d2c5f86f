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

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from netrules.engine.columnar import kernels
from netrules.engine.columnar.aggregate import AggRule, maintain_aggregate, why_not_aggregate
from netrules.engine.columnar.closure import LinearClosure, Prefill
from netrules.engine.columnar.compaction import compact_rows
from netrules.engine.columnar.copies import CopyStratum
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
from netrules.engine.columnar.relation import KeyedRows, Relation, RowSet
from netrules.engine.columnar.sets import distinct
from netrules.engine.columnar.supports import Supports, gid, split_gid
from netrules.engine.columnar.values import Values
from netrules.engine.ledger import BaseLedger
from netrules.errors import EngineError
from netrules.lang import ast
from netrules.plan import Plan

__all__ = ["ColumnarProgram", "unsupported", "DEFAULT_K"]

DEFAULT_K = 2
#: A stratum is derived afresh when a batch removes more than this share of the facts it
#: reads from below (``ColumnarProgram._recompute_pays``): the first where the compiled
#: closure derives it afresh (``LinearClosure.fits``), the second elsewhere.
RECOMPUTE = (0.1, 0.5)
#: An admission round sorts at most this many candidates inside ``kernels.best_supports``;
#: past it NumPy's sort is the faster (3,000 candidates: 57 µs against 78 µs; 300,000:
#: 26 ms against 19).
SORT_IN_KERNEL = 4096
_NO_ORDER = np.empty(0, np.int64)


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
        self.settled: set[str] = set()  # relations this batch writes no more
        self._net: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def touch(self, rel: Relation, rows: np.ndarray) -> None:
        first = rows[~rel.touched[rows]]
        if len(first):
            rel.tbefore[first] = rel.alive[first]
            rel.touched[first] = True
            self.rows.setdefault(rel.name, []).append(first)

    def hidden(self, rel: Relation, rows: np.ndarray) -> None:
        """``touch`` then ``set_dead`` for distinct rows alive before the caller hid them."""
        first = rows[~rel.touched[rows]]
        if len(first):
            rel.tbefore[first] = True
            rel.touched[first] = True
            self.rows.setdefault(rel.name, []).append(first)
        rel.count -= len(rows)

    def kill(self, name: str, rows: np.ndarray) -> None:
        self.killed.setdefault(name, []).append(rows)

    def end(self, rels: dict[str, Relation]) -> None:
        """Clear the touched flags: the next batch starts from the view as it is."""
        for name, parts in self.rows.items():
            for rows in parts:
                rels[name].touched[rows] = False

    def net(self, rel: Relation) -> tuple[np.ndarray, np.ndarray]:
        """(added, removed) rows of ``rel`` over the batch; kept once the relation is
        ``settled`` (a stratum derived afresh asks for its own, and the batch's end for every
        relation: on TataNld two passes over 20,000 rows for one answer)."""
        hit = self._net.get(rel.name)
        if hit is not None:
            return hit
        parts = self.rows.get(rel.name)
        if not parts:
            e = np.empty(0, np.int64)
            return e, e
        rows = np.concatenate(parts) if len(parts) > 1 else parts[0]
        out = kernels.net_rows(rows.astype(np.int64, copy=False), rel.alive, rel.tbefore)
        if rel.name in self.settled:
            self._net[rel.name] = out
        return out

    def killed_gids(self, code: int, name: str) -> np.ndarray:
        ks = self.killed.get(name)
        return gid(code, np.concatenate(ks)) if ks else np.empty(0, np.int64)


class _Suspects:
    """A rederivation's suspects: their rows, and, built on first use, their own sorted keys
    (``KeyedRows``) for the rounds that match heads against them; the closure takes the rows
    and never needs the keys."""

    def __init__(self, rel: Relation, rows: np.ndarray) -> None:
        self.rel, self.rows = rel, rows
        self._keyed: KeyedRows | None = None

    def find(self, cols: np.ndarray) -> np.ndarray:
        if self._keyed is None:
            self._keyed = KeyedRows(self.rel, self.rows)
        return self._keyed.find(cols)


class _Hidden:
    """A rederivation's suspects found by the relation's own map: rows it holds that this
    batch's kill hid (alive before the batch, touched, dead now). What ``_Suspects`` answers,
    without sorting the suspects' keys, for a rule solved from its body side
    (``ColumnarProgram._from_body``)."""

    def __init__(self, rel: Relation) -> None:
        self.rel = rel

    def find(self, cols: np.ndarray) -> np.ndarray:
        rel = self.rel
        rows = rel.find(cols)
        ok = rows >= 0
        at = rows[ok]
        ok[ok] = rel.touched[at] & rel.tbefore[at] & ~rel.alive[at]
        return np.where(ok, rows, -1)


class _Using:
    """``Supports.using`` for one kill: the indexes of relations the stratum reads only
    (``reads``), and an index's small runs read through offsets made for the kill once it
    has asked the index more than 1/``share`` of its entries (``Buckets.values_of``; a
    partition of americas asks hundreds of thousands of facts, a binary search each).
    The share was measured on americas' ten-link batches: their downs took 356-396 ms of
    CPU at 1/32, 316-346 at 1/256 and at 1/2048."""

    #: ... once the kill has asked more than 1/share of their entries
    share = 64

    def __init__(self, sup: Supports, reads: frozenset[int] | None = None) -> None:
        self.sup = sup
        self.reads = reads  # relation codes worth probing (None: all)
        self.asked: dict[int, int] = {}
        self.scratch: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {}

    def __call__(self, gids: np.ndarray) -> np.ndarray:
        sup = self.sup
        if not len(gids) or not sup.count:
            return np.empty(0, np.int64)
        code, rows = split_gid(gids)
        lo, hi = int(code.min()), int(code.max())
        parts = []
        for c in (lo,) if lo == hi else distinct(code).tolist():
            b = sup.by_body.get(c)
            if b is None or (self.reads is not None and c not in self.reads):
                continue
            sel = rows if lo == hi else rows[code == c]
            self.asked[c] = asked = self.asked.get(c, 0) + len(sel)
            scratch = self.scratch.get(c)
            if scratch is None and asked * self.share > b.n:
                scratch = self.scratch[c] = {}
            sids = b.values_of(sel, scratch)
            parts.append(sids[sup.alive[sids]])
        if not parts:
            return np.empty(0, np.int64)
        return np.concatenate(parts) if len(parts) > 1 else parts[0]


def _one_derivation(srels: frozenset[str], rules: list[_Rule], plan: Plan) -> bool:
    """Whether every fact of the stratum has at most one derivation, so a fact whose kept
    support died is gone and its rederivation would search for nothing: each relation is
    derived by one rule, whose body is one base fact (and conditions), every argument of it
    a constant or a variable the head carries as it is, or of the relation's declared key
    (with ``keys(1,2)`` the ledger holds one link a source and destination).
    The head fixes the body fact then: a localised rule's copy of a link
    (``linkD(@Z,S) :- link(@S,Z,C)``), whose rederivation joins were a tenth of a
    partition's batch."""
    keyed = BaseLedger.for_plan(plan).keys  # the ledger's own keys: one fact per key
    by_head: dict[str, int] = {}
    for r in plan.rules:
        by_head[r.head.relation] = by_head.get(r.head.relation, 0) + 1
    for r in rules:
        rule = r.rule
        if rule.delete or by_head.get(rule.head.relation) != 1 or len(r.atoms) != 1:
            return False
        if any(isinstance(b, ast.Negation | ast.PathAtom) for b in rule.body):
            return False
        (atom,) = r.atoms
        carried = {t.name for t in rule.head.args if isinstance(t, ast.Var)}
        fixed = [isinstance(t, ast.Const) or (isinstance(t, ast.Var) and t.name != "_"
                                             and t.name in carried) for t in atom.args]
        # a base body only: a derived fact killed below may come back in the same batch
        # (rederived, or made again by a lower stratum), and a head it held up must then
        # be rederived (routing_loop's ``loop(@S,D) :- fwd(@S,D,S)`` lost loops)
        if atom.relation in plan.derived:
            return False
        key = keyed.get(atom.relation)
        if not (all(fixed) or (
                key is not None and all(p < len(fixed) and fixed[p] for p in key))):
            return False
    return True


class _Rule:
    """A rule compiled once: a Join per delta atom and one from the head (rederivation)."""

    def __init__(self, rid: int, rule: ast.Rule) -> None:
        self.id, self.rule = rid, rule
        self.atoms = rule.atoms()
        self.by_start = [compile_join(rule, i) for i in range(len(self.atoms))]
        hv = frozenset(t.name for t in rule.head.args
                       if isinstance(t, ast.Var) and t.name != "_")
        self.from_head: Join = compile_join(rule, None, hv, check=True)
        self.negs: list[tuple[ast.Atom, Join]] = []
        for lit in rule.body:
            if isinstance(lit, ast.Negation):
                nv = frozenset(ast.variables_of(lit.atom))
                self.negs.append((lit.atom, compile_join(rule, None, nv)))
        self.copy = _copy_columns(rule)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "copy" not in state:  # (a rule pickled before it had one)
            self.copy = _copy_columns(self.rule)


def _copy_columns(rule: ast.Rule) -> np.ndarray | None:
    """The body columns a copy rule's head takes, per head position, or None: a rule whose
    body is one atom of distinct plain variables and whose head is some of them
    (``reachable(@S,D) :- link(@S,D,C)``). Its derivations are a gather of the body rows'
    columns (``ColumnarProgram._from_atom``), where the join machinery (a table, a join, the
    head's terms) was 15% of TataNld's 100-link down batch, whose stratum is derived afresh
    (its first round meets the copy rule alone)."""
    if rule.delete or len(rule.body) != 1 or not isinstance(rule.body[0], ast.Atom):
        return None
    at: dict[str, int] = {}
    for p, t in enumerate(rule.body[0].args):
        if not isinstance(t, ast.Var) or t.name in at:
            return None
        if t.name != "_":
            at[t.name] = p
    cols = []
    for t in rule.head.args:
        if not isinstance(t, ast.Var) or t.name not in at:
            return None
        cols.append(at[t.name])
    return np.array(cols, dtype=np.int64) if cols else None


class ColumnarProgram:
    """Every relation of a plan as columns, maintained batch by batch."""

    #: copy strata through their row map (copies.py); False: the general path, which the
    #: tests compare it with
    copy_path = True

    def __init__(self, plan: Plan, k: int = DEFAULT_K) -> None:
        why = unsupported(plan)
        if why:
            raise EngineError(why)
        if not 1 <= k <= 127:
            raise EngineError(f"k={k}: the columnar engine keeps 1 to 127 supports a fact")
        self.plan, self.k = plan, k
        kernels.warm()
        self.recompute: float | tuple[float, float] = RECOMPUTE
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
        self.final_kill = {srels for (_s, srels), rules in zip(self.strata, self.rules,
                                                                 strict=True)
                           if rules and _one_derivation(srels, rules, plan)}
        self.closures: dict[frozenset[str], LinearClosure] = {}
        for (_s, srels), rules in zip(self.strata, self.rules, strict=True):
            lc = LinearClosure.of(srels, rules, plan.arity) if rules else None
            if lc is not None:
                self.closures[srels] = lc
        self._copy_strata: dict[frozenset[str], CopyStratum] | None = None  # ``_copies``
        self.batch = 0
        self._in_delta: dict[str, RowSet | np.ndarray] = {}
        self._scratch = np.zeros(0, dtype=np.int32)
        self._made: list[tuple[np.ndarray, np.ndarray | int, np.ndarray]] = []
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
            if d is None:
                return rel.alive[rows]
            if not isinstance(d, RowSet):  # made when first read: most rounds never do
                d = self._in_delta[rel.name] = RowSet(rel.n, d)
            return rel.alive[rows] & ~d.has(rows)
        return read

    def _mark_delta(self, deltas: dict[str, np.ndarray]) -> None:
        self._in_delta = dict(deltas)

    # -- one batch -------------------------------------------------------------------------
    def apply(self, appeared: dict[str, np.ndarray], vanished: dict[str, np.ndarray]
              ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Apply base-fact changes given as rows of ids per relation; returns the net
        (added rows, removed rows) of every relation that changed."""
        gone = {}
        for name, cols in vanished.items():
            rows = self.relation(name, cols.shape[1]).find(cols)
            gone[name] = distinct(rows[rows >= 0])
        came = {name: distinct(self.relation(name, cols.shape[1]).rows_for(cols))
                for name, cols in appeared.items()}
        return self.apply_rows(came, gone)

    def apply_rows(self, appeared: dict[str, np.ndarray], vanished: dict[str, np.ndarray]
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``apply`` given the base relations' distinct stored rows (``relation``,
        ``Relation.rows_for``): a base fact's row never moves, so a caller that kept it
        (``BaseIds``) skips the look-up by columns."""
        compact_rows(self)
        self.batch += 1
        self.supports.touched = []
        self._made = []
        ch = _Changes(self.batch)
        try:
            for name, rows in vanished.items():
                rel = self.rels[name]
                rows = rows[rel.alive[rows]]
                ch.touch(rel, rows)
                rel.set_dead(rows)
                ch.kill(name, rows)
            for name, rows in appeared.items():
                rel = self.rels[name]
                rows = rows[~rel.alive[rows]]
                ch.touch(rel, rows)
                rel.set_alive(rows)
            ch.settled.update(vanished, appeared)  # base relations: no rule writes them
            for (stratum, srels), rules, aggs in zip(self.strata, self.rules, self.aggs,
                                                     strict=True):
                if stratum.index in self.stages:
                    self.stages[stratum.index].maintain(ch)
                    continue
                for ar in aggs:
                    maintain_aggregate(ar, self, ch)
                if rules:
                    cs = self._copies().get(srels) if self.copy_path and not aggs else None
                    if cs is None or not cs.maintain(self, ch):
                        self._maintain(srels, rules, ch)
                ch.settled.update(r.head.relation for r in stratum.rules)
            self.supports.compact()
            self.supports.settle()
            self.supports.trim()
            for rel in self.rels.values():
                rel.trim()
            out = {}
            for name, rel in self.rels.items():
                add, rem = ch.net(rel)
                if len(add) or len(rem):
                    out[name] = (add, rem)
            return out
        finally:
            ch.end(self.rels)

    def _copies(self) -> dict[frozenset[str], CopyStratum]:
        """The strata kept through a row map (copies.py), found once."""
        got = self.__dict__.get("_copy_strata")  # (None in a program pickled before it)
        if got is None:
            got = self._copy_strata = {}
            for (_s, srels), rules in zip(self.strata, self.rules, strict=True):
                cs = CopyStratum.of_stratum(rules, srels in self.final_kill)
                if cs is not None:
                    got[srels] = cs
        return got

    def _below(self, srels: frozenset[str], rules: list[_Rule]) -> set[str]:
        return {a.relation for r in rules for a in r.atoms if a.relation not in srels}

    def _maintain(self, srels: frozenset[str], rules: list[_Rule], ch: _Changes) -> None:
        below = self._below(srels, rules)
        killed = [ch.killed_gids(self.codes[n], n) for n in sorted(below)]
        frontier = np.concatenate(killed) if killed else np.empty(0, np.int64)
        if self._recompute_pays(srels, below, len(frontier)):
            self._recompute(srels, rules, below, ch)
            return
        blocked = self._blocked(srels, rules, ch)
        suspects = self._kill(srels, frontier, ch, blocked, self._reads(rules))
        if suspects:
            for name, rows in suspects.items():
                ch.kill(name, rows)
            if srels not in self.final_kill:
                self._rederive(srels, rules, suspects, ch)
        added: dict[str, np.ndarray] = {}
        for name in below:
            add, _ = ch.net(self.rels[name])
            if len(add):
                added[name] = add
        unblocked = self._unblocked(srels, rules, ch)
        if added or unblocked:
            self._seminaive(srels, rules, added, ch, first=unblocked)
        self._flush()

    def _recompute_pays(self, srels: frozenset[str], below: set[str], killed: int) -> bool:
        """Whether deriving the stratum afresh beats maintaining it: when the batch took away
        a large share of what the stratum is derived from (see ``RECOMPUTE``). Never for a
        stratum of one derivation a fact (``final_kill``): its kill is exact and costs what
        it kills, where deriving afresh costs every fact."""
        if not killed or srels in self.final_kill or not any(self.rels[n].count
                                                             for n in srels):
            return False
        standing = sum(self.rels[n].count for n in below)
        share = self.recompute
        if isinstance(share, tuple):
            lc = self.closures.get(srels)
            share = share[0 if lc is not None and lc.fits(self) else 1]
        return killed > share * (standing + killed)

    def _recompute(self, srels: frozenset[str], rules: list[_Rule], below: set[str],
                   ch: _Changes) -> None:
        """The stratum derived afresh from what stands below, in the rows it has: every fact
        hidden and every support of its rules dropped, then semi-naive from nothing. Facts
        that come back keep their rows, so the batch's net change is what it would be."""
        self.stats["afresh"] = self.stats.get("afresh", 0) + 1  # (no key: pickled before it)
        codes = [self.codes[n] for n in srels]
        self.supports.drop_heads(codes)
        for name in srels:
            rel = self.rels[name]
            first, hidden = kernels.hide_all(np.int64(rel.n), rel.alive, rel.nsup,
                                             rel.touched, rel.tbefore)
            if len(first):
                ch.rows.setdefault(name, []).append(first)
            rel.count -= int(hidden)
        added = {n: self.rels[n].alive_rows() for n in below}
        self._seminaive(srels, rules, {n: r for n, r in added.items() if len(r)}, ch,
                        afresh=True)
        self._flush()
        ch.settled.update(srels)  # derived afresh: its rows are what they will be
        for name in srels:
            rel = self.rels[name]
            _, gone = ch.net(rel)
            if len(gone):
                ch.kill(name, gone)

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
            if tab.n and (c := self._derived(r, tab, srels)) is not None:
                out.append(c)
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

    def _reads(self, rules: list[_Rule]) -> frozenset[int]:
        """Codes of the relations the stratum's rules read (positive atoms: the bodies its
        supports hold)."""
        return frozenset(c for r in rules for a in r.atoms
                         if (c := self.codes.get(a.relation)) is not None)

    def _kill(self, srels: frozenset[str], frontier: np.ndarray, ch: _Changes,
              first: np.ndarray | None = None, reads: frozenset[int] | None = None
              ) -> dict[str, np.ndarray]:
        """Suspects of this stratum: facts whose every kept support used a killed fact (or,
        ``first``, was blocked by a negation), hidden and recorded as changed. A frontier
        fact of a relation no rule of the stratum ``reads`` is not looked up: the supports
        it is in hold facts of other strata (a partition's killed ``linkD`` copies were
        probed in ``reachable``'s index, its pending entries sorted, only for the step to
        drop what it found: 0.3 ms of a 200-link batch).

        Rescuing a suspect on the spot from standing facts of lower rank (which keeps
        supports well-founded) was measured on americas: it saved almost none, since a
        redundant link going down raises the rank of most facts it supported."""
        codes = np.array(sorted(self.codes[n] for n in srels), dtype=np.int64)
        found: dict[str, list[np.ndarray]] = {}
        using = _Using(self.supports, reads)
        while len(frontier) or (first is not None and len(first)):
            sids = using(frontier)
            if first is not None:
                sids = np.concatenate([sids, first[self.supports.alive[first]]])
                first = None
            if len(codes) == 1:
                code = int(codes[0])
                frontier = self._kill_one(code, sids, ch, found)
                if len(frontier) and (reads is None or code in reads) and \
                        self._kill_rest(code, frontier, ch, found):
                    break
                continue
            if len(sids):
                hc, _ = split_gid(self.supports.heads(sids))
                sids = sids[np.isin(hc, codes)]
            if not len(sids):
                break
            sids = self._distinct(sids)
            hc, hr = split_gid(self.supports.kill(sids))
            nxt = []
            for code in codes:
                rows = hr[hc == code]
                if not len(rows):
                    continue
                name = self.names[int(code)]
                rel = self.rels[name]
                # hidden now, so a later frontier step does not pick them again
                gone = kernels.release(rel.nsup, rel.alive, rows)
                if len(gone):
                    ch.hidden(rel, gone)
                    found.setdefault(name, []).append(gone)
                    nxt.append(gid(int(code), gone))
            frontier = np.concatenate(nxt) if nxt else np.empty(0, np.int64)
        out = {n: np.concatenate(p) if len(p) > 1 else p[0] for n, p in found.items()}
        self.stats["suspects"] += sum(len(r) for r in out.values())
        return out

    def _kill_one(self, code: int, sids: np.ndarray, ch: _Changes,
                  found: dict[str, list[np.ndarray]]) -> np.ndarray:
        """A kill step of a stratum of one relation, compiled (``kernels.kill_step``):
        the common case, and the one whose steps a link event repeats tens of times."""
        if not len(sids):
            return np.empty(0, np.int64)
        name = self.names[code]
        rel, sup = self.rels[name], self.supports
        gone, first, heads = kernels.kill_step(sids, sup.alive, sup.rule, sup.head,
                                               sup.head_code, np.int64(code), rel.nsup,
                                               rel.alive, rel.touched, rel.tbefore)
        self._killed(code, gone, first, heads, ch, found)
        return gid(code, gone) if len(gone) else np.empty(0, np.int64)

    def _killed(self, code: int, gone: np.ndarray, first: np.ndarray, heads: np.ndarray,
                ch: _Changes, found: dict[str, list[np.ndarray]]) -> None:
        """Record what a compiled kill of relation ``code`` did: the heads of the supports it
        killed, the facts it hid (``gone``) and those of them the batch touched first."""
        name, sup = self.names[code], self.supports
        sup.count -= len(heads)
        sup.touched.append(gid(code, heads))
        if len(first):
            ch.rows.setdefault(name, []).append(first)
        self.rels[name].count -= len(gone)
        if len(gone):
            found.setdefault(name, []).append(gone)

    def _kill_rest(self, code: int, frontier: np.ndarray, ch: _Changes,
                   found: dict[str, list[np.ndarray]]) -> bool:
        """The kill steps after the first of a stratum of one relation, in one compiled call
        (``kernels.kill_reach``): from the first on, the facts hidden are the stratum's own,
        so each step reads one index, the supports by a body fact of ``code``. False where
        that index has more runs than the call takes (the caller steps on)."""
        b = self.supports.by_body.get(code)
        if b is None:
            return True  # no support reads a fact of the stratum: nothing more dies
        runs = b.kill_runs()
        if runs is None:
            return False
        name = self.names[code]
        rel, sup = self.rels[name], self.supports
        # searched runs read through offsets once the kill asks as ``_Using`` would make them
        dense_after = np.int64(b.n // _Using.share if _Using.share else 1 << 62)
        gone, first, heads = kernels.kill_reach(
            split_gid(frontier)[1], *runs, dense_after, np.int64(b.n), sup.alive, sup.rule,
            sup.head, sup.head_code, np.int64(code), rel.nsup, rel.alive, rel.touched,
            rel.tbefore)
        self._killed(code, gone, first, heads, ch, found)
        return True

    # -- derivation rounds -----------------------------------------------------------------
    def _candidates(self, r: _Rule, tab: Table, srels: frozenset[str]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(head rows of ids, body gids, rank) of a solved table."""
        heads = head_columns(r.rule, self.values, tab)
        return (heads, *self._body(r, tab.atoms, tab.n, srels))

    def _body(self, r: _Rule, atoms: dict[int, np.ndarray], n: int, srels: frozenset[str]
              ) -> tuple[np.ndarray, np.ndarray]:
        """(body gids, rank) of ``n`` derivations given each body atom's rows."""
        body = np.full((n, self.supports.width), -1, dtype=np.int64)
        rank = np.zeros(n, dtype=np.int32)
        for j, atom in enumerate(r.atoms):
            rows = atoms[j]
            body[:, j] = gid(self.codes[atom.relation], rows)
            if atom.relation in srels:
                np.maximum(rank, self.rels[atom.relation].rank[rows], out=rank)
        return body, rank + 1

    def _derived(self, r: _Rule, tab: Table, srels: frozenset[str],
                 only: Mapping[str, _Suspects | _Hidden] | None = None,
                 want: np.ndarray | None = None
                 ) -> tuple[_Rule, np.ndarray, np.ndarray, np.ndarray] | None:
        """(rule, head row, body gids, rank) of the solved table's derivations whose head is
        not alive (and, with ``only``, one of its rows; with ``want``, the given row per
        binding). Heads are matched before the bodies are built: in a rederivation most
        derivations meet a fact that stands, and their bodies would be built for nothing."""
        return self._derived_heads(r, head_columns(r.rule, self.values, tab), tab.atoms,
                                   srels, only, want)

    def _from_atom(self, r: _Rule, i: int, rows: np.ndarray, read: Callable[[int], Reader],
                   srels: frozenset[str],
                   only: Mapping[str, _Suspects | _Hidden] | None = None
                   ) -> tuple[_Rule, np.ndarray, np.ndarray, np.ndarray] | None:
        """``_derived`` of rule ``r`` solved from the given rows of its body atom ``i``, the
        other atoms read as ``read(j)`` says. A copy rule's derivations are a gather of
        those rows' columns (``_copy_columns``), with no table, join or head terms."""
        if r.copy is not None:
            heads = self.rels[r.atoms[0].relation].cols[rows][:, r.copy].astype(np.int64)
            return self._derived_heads(r, heads, {0: rows}, srels, only)
        tab = self.start(r.rule, r.atoms[i], rows, i)
        tab = r.by_start[i].run(self.rels, self.values, tab, read, self._new())
        return self._derived(r, tab, srels, only) if tab.n else None

    def _derived_heads(self, r: _Rule, heads: np.ndarray, atoms: dict[int, np.ndarray],
                       srels: frozenset[str],
                       only: Mapping[str, _Suspects | _Hidden] | None = None,
                       want: np.ndarray | None = None
                       ) -> tuple[_Rule, np.ndarray, np.ndarray, np.ndarray] | None:
        """``_derived`` of derivations given by their head rows and body atoms' rows."""
        name = r.rule.head.relation
        rel = self.rels[name]
        if want is not None:  # solved from the head: the head must be that row again
            rows = want
            ok = np.all(heads == rel.cols[want], axis=1)
            ok[ok] = ~rel.alive[rows[ok]]
        elif only is not None:
            allowed = only.get(name)
            if allowed is None:
                return None
            rows = allowed.find(heads)
            ok = rows >= 0
            ok[ok] = ~rel.alive[rows[ok]]
        else:
            rows = rel.rows_for(heads)
            ok = ~rel.alive[rows]
        if not ok.all():
            idx = np.flatnonzero(ok)
            if not len(idx):
                return None
            rows, atoms = rows[idx], {j: a[idx] for j, a in atoms.items()}
        return (r, rows, *self._body(r, atoms, len(rows), srels))

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

    def _round(self, srels: frozenset[str], rules: list[_Rule], deltas: dict[str, np.ndarray],
               only: dict[str, _Suspects] | None = None, skip_empty: bool = False
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
                    if skip_empty and any(not self.rels[a.relation].count
                                          for j, a in enumerate(r.atoms) if j != i):
                        # another atom reads a relation with no fact (both views: the old
                        # one is alive rows less this round's delta): nothing to derive; the
                        # first round of a stratum derived afresh meets this for every rule
                        # reading the stratum, a join each for nothing. Only there: a load's
                        # first round meets it too, and its join makes the relation's index
                        # while it is empty, which a later batch would build over a
                        # backbone's 1.3 M rows (9 ms)
                        continue
                    def read(j: int, i: int = i) -> Reader:
                        return new if j < i else old
                    if (c := self._from_atom(r, i, rows, read, srels, only)) is not None:
                        out.append(c)
        finally:
            self._in_delta = {}
        return out

    def _admit(self, cands: list[tuple[_Rule, np.ndarray, np.ndarray, np.ndarray]],
               ch: _Changes) -> dict[str, np.ndarray]:
        """Make alive the dead rows derived (``_derived``), each with rank min over its
        candidates and up to K supports of that rank."""
        by_rel: dict[str, list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]] = {}
        for r, rows, body, rank in cands:
            by_rel.setdefault(r.rule.head.relation, []).append((r.id, rows, body, rank))
        born: dict[str, np.ndarray] = {}
        for name, parts in by_rel.items():
            rel = self.rels[name]
            rid: np.ndarray | int
            if len(parts) == 1:
                (rid, rows, body, rank), = parts
            else:
                rows = np.concatenate([p[1] for p in parts])
                body = np.concatenate([p[2] for p in parts])
                rank = np.concatenate([p[3] for p in parts])
                rid = np.concatenate([np.full(len(p[1]), p[0], np.int32) for p in parts])
            # the fact's rank is its least candidate's; only supports of that rank are
            # well-founded, and K of them are kept (a round makes each derivation once)
            order = (np.argsort((rows << 31) | rank) if len(rows) > SORT_IN_KERNEL
                     else _NO_ORDER)
            keep, facts, frank, nsup = kernels.best_supports(rows, rank, order, self.k)
            self._made.append((gid(self.codes[name], rows[keep]),
                               rid if isinstance(rid, int) else rid[keep], body[keep]))
            first = kernels.revive(facts, frank, nsup, rel.rank, rel.nsup, rel.alive,
                                   rel.touched, rel.tbefore)
            if len(first):
                ch.rows.setdefault(name, []).append(first)
            rel.count += len(facts)
            born[name] = facts
        return born

    def _flush(self) -> None:
        """Store the supports admitted since the last flush, in one append: nothing reads
        supports while a stratum derives, and a call per round cost a tenth of a round."""
        made, self._made = self._made, []
        if len(made) == 1:
            self.supports.add(*made[0])
        elif made:
            rid = [np.full(len(h), r, np.int32) if isinstance(r, int) else r
                   for h, r, _ in made]
            self.supports.add(np.concatenate([h for h, _, _ in made]), np.concatenate(rid),
                              np.concatenate([b for _, _, b in made]))

    def _seminaive(self, srels: frozenset[str], rules: list[_Rule],
                   deltas: dict[str, np.ndarray], ch: _Changes,
                   only: dict[str, _Suspects] | None = None,
                   first: list | None = None, afresh: bool = False,
                   pre: Prefill | None = None) -> None:
        """Semi-naive rounds from ``deltas`` (``afresh``: the stratum was just emptied to be
        derived again, so its first round skips rules joining an empty relation; ``pre``: a
        rederivation's prefilled table, made already)."""
        lc = self.closures.get(srels)
        # the prefilled table, asked for once (or given): the suspects do not change
        tried, given = pre is not None, pre
        while deltas or first:
            pre, given = given, None
            if (lc is not None and not first and deltas.keys() == {lc.name}
                    and only is not None and lc.name in only and not tried):
                # a rederivation: its heads in a dense table of the suspects, and every
                # round in one compiled call whatever the sizes (closure.Prefill)
                pre = lc.prefilled(self, only[lc.name].rows)
                tried = True
            if pre is not None or (
                    lc is not None and not first and deltas.keys() == {lc.name}
                    and len(deltas[lc.name]) <= lc.max_work and lc.fits(self)):
                # every round left is a linear rule's: compiled calls (closure.py) while
                # the frontier is narrow, vectorised rounds while it is wide
                assert lc is not None
                allowed = None
                if only is not None:
                    keyed = only.get(lc.name)
                    if keyed is None:
                        return
                    if pre is None and len(keyed.rows) > lc.max_work:
                        lc = None  # many suspects: vectorised rounds
                        continue
                    # a _Suspects: its keys never built; sorted for the kernel's search
                    allowed = keyed.rows if pre is not None else np.sort(keyed.rows)
                rounds, wide = lc.run(self, deltas[lc.name], ch, allowed, pre)
                self.stats["rounds"] += rounds
                if not len(wide):
                    return
                deltas = {lc.name: wide}
                if rounds:
                    continue
            self.stats["rounds"] += 1
            cands = self._round(srels, rules, deltas, only, afresh) + (first or [])
            first, afresh = None, False
            deltas = self._admit(cands, ch)
            deltas = {k: v for k, v in deltas.items() if len(v)}

    def _rederive(self, srels: frozenset[str], rules: list[_Rule],
                  suspects: dict[str, np.ndarray], ch: _Changes) -> None:
        new = self._new()
        cands = []
        lc = self.closures.get(srels)
        fast: frozenset[int] = frozenset()
        pre = None
        if lc is not None and lc.every_pays(self, len(mine := suspects.get(
                lc.name, np.empty(0, np.int64)))):
            # many suspects: a dense table of every row finds R's standing facts for the
            # first step, and then serves the closure as its prefilled table (closure.py)
            pre = lc.prefilled(self, mine, every=True)
            if pre is not None:
                fast = lc.rederives
                cands += lc.rederive(self, mine, pre)
        if pre is None and lc is not None and lc.fits(self):
            # the linear rules solved from the suspects in one compiled pass (closure.py),
            # unless they are many: the vectorised join is faster then (``MAX_WORK``)
            mine = suspects.get(lc.name, np.empty(0, np.int64))
            if 0 < len(mine) <= lc.max_work:
                fast = lc.rederives
                if fast:
                    cands += lc.rederive(self, mine)
        for r in rules:
            rows = suspects.get(r.rule.head.relation)
            if r.id in fast or rows is None or not len(rows):
                continue
            rel = self.rels[r.rule.head.relation]
            if self._from_body(r, len(rows)):
                # a copy of a small relation (``reachable(@S,D) :- link(@S,D,C)``): its rows
                # solved forward and kept where the head is a suspect, not each suspect
                # solved for a body row (americas, ten links down: 247,000 suspects probed
                # for 2,900 links, 8 of a 100 ms batch)
                (atom,) = r.atoms
                if (c := self._from_atom(r, 0, self.rels[atom.relation].alive_rows(),
                                         lambda j: new, srels,
                                         {rel.name: _Hidden(rel)})) is not None:
                    cands.append(c)
                continue
            tab = bind_head(r.rule, rel, rows)
            tab = r.from_head.run(self.rels, self.values, tab, lambda j: new, new)
            if tab.n and (c := self._derived(r, tab, srels, None,
                                             rows[tab.vars["#k"]])) is not None:
                cands.append(c)
        revived = self._admit(cands, ch)
        self.stats["rederived"] += sum(len(v) for v in revived.values())
        left = {}
        for name, rows in suspects.items():
            rel = self.rels[name]
            left[name] = rows[~rel.alive[rows]]
        if revived:
            if pre is not None and lc is not None and lc.name in revived:
                pre.stand(self.rels[lc.name].cols[revived[lc.name]])
            self._seminaive(srels, rules, revived, ch,
                            only={n: _Suspects(self.rels[n], v) for n, v in left.items()},
                            pre=pre)

    def _from_body(self, r: _Rule, suspects: int) -> bool:
        """Whether rederiving ``suspects`` facts by rule ``r`` is cheaper from its body side:
        a rule of one positive atom, from a relation of fewer than a quarter as many facts
        (and rows to scan for them), with no negation or path pattern (its other literals
        are conditions and assignments, which the join evaluates either way)."""
        if len(r.atoms) != 1 or r.negs or any(isinstance(b, ast.PathAtom)
                                              for b in r.rule.body):
            return False
        below = self.rels.get(r.atoms[0].relation)
        return below is not None and 4 * below.count < suspects and below.n < 64 * suspects

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
        return distinct(np.concatenate(t)) if t else np.empty(0, np.int64)

    def fact_of(self, g: int) -> tuple[str, tuple]:
        code, row = split_gid(np.int64(g))
        name = self.names[int(code)]
        return name, self.values.decode_rows(self.rels[name].cols[[int(row)]])[0]

    def rank_of(self, gids: np.ndarray) -> np.ndarray:
        code, rows = split_gid(gids)
        out = np.zeros(len(gids), dtype=np.int64)
        for c in distinct(code):
            m = code == c
            out[m] = self.rels[self.names[int(c)]].rank_at(rows[m])
        return out

    def alive_gids(self, gids: np.ndarray) -> np.ndarray:
        code, rows = split_gid(gids)
        out = np.zeros(len(gids), dtype=bool)
        for c in distinct(code):
            m = code == c
            out[m] = self.rels[self.names[int(c)]].alive[rows[m]]
        return out

    def nbytes(self) -> dict[str, int]:
        return {"relations": sum(r.nbytes() for r in self.rels.values()),
                "supports": self.supports.nbytes(), "pairs": self.pairs.nbytes(),
                "lists": self.values.nbytes()}

    def fact_count(self) -> int:
        return sum(r.count for r in self.rels.values())

