"""PSN maintenance with bounded derivation sets (paper 000, made exact *and* small).

Paper 000 keeps, for every fact, every derivation with its derivation set S and cycle set H;
stored naively that is 3,540 records for the 36 facts of a bidirectional 6-ring. We keep instead
at most K *supports* per fact: one-step derivations (rule, body facts) that are well-founded,
meaning every body fact of the same stratum has a smaller rank than the fact itself. Ranks are
derivation heights (the semi-naive round a fact first appeared in), so following kept supports
always ends at base facts: each support stands for an acyclic derivation with H = ∅. A cyclic
derivation, the one paper 000 detects by finding a fact inside its own S, can never be kept,
because a rank cannot be smaller than itself. Every fact of the least model has an acyclic
derivation, so nothing is lost for set semantics.

Deleting base facts drops the supports that used them; a fact whose every kept support died is
*suspect*, and drops the supports it gave in turn. Suspects are then rederived locally: in one
step from facts that never became suspect (any instance, kept or not), then semi-naively from
everything revived or inserted. Suspects left over lost all support and are deleted; that is
exactly the lost-route case counting gets wrong (a<->b, b->c, delete b->c). Strata with negation
or aggregates are maintained by DRed (``dred.dred_stratum``); the facts those strata hold act as
rank-0 inputs here.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from netrules.engine.firing import FactKey, body_keys
from netrules.engine.iterated import evaluate_iterated
from netrules.engine.joins import fire_rows, rows_for
from netrules.engine.ledger import BaseLedger
from netrules.engine.reference import Database, evaluate_stratum
from netrules.engine.strategies import dred
from netrules.engine.strategies.base import (
    BatchStats,
    Delta,
    Derivation,
    State,
    explain_by_search,
)
from netrules.engine.views import Patched
from netrules.facts import Fact
from netrules.lang import ast
from netrules.plan import Plan, Stratum

__all__ = ["name", "materialize", "apply", "explain", "DEFAULT_K", "gc_paused", "reindex",
           "Support"]

name = "psn"
DEFAULT_K = 2

Support = tuple[int, tuple[FactKey, ...]]  # (rule index in plan.rules, body facts)


def reindex(used_by: dict[FactKey, set[FactKey]], head: FactKey, old: list[Support],
            new: list[Support]) -> None:
    """Keep the reverse index body fact -> heads right when ``head``'s kept supports change
    from ``old`` to ``new`` (shared with ``regional.state``)."""
    if not old:  # the common case: a fact's first supports
        for _, body in new:
            for x in body:
                users = used_by.get(x)
                if users is None:
                    used_by[x] = {head}
                else:
                    users.add(head)
        return
    old_body = {x for _, body in old for x in body}
    new_body = {x for _, body in new for x in body}
    for x in old_body - new_body:
        users = used_by.get(x)
        if users is not None:
            users.discard(head)
            if not users:
                del used_by[x]
    for x in new_body - old_body:
        used_by.setdefault(x, set()).add(head)


class _Supports:
    """Kept supports per fact, their ranks, and the reverse index body fact -> heads.

    ``canon`` holds one key tuple per fact that materialisation's supports share: without it
    every support held two fresh ``(relation, row)`` tuples, 150,000 objects on a 64,000-fact
    view, and freeing them was most of what a rebuild past the crossover paid over
    rematerialising. Keys made later by maintenance need not be canonical (equal is enough).
    """

    def __init__(self, k: int) -> None:
        self.k = k
        self.of: dict[FactKey, list[Support]] = {}
        self.rank: dict[FactKey, int] = {}
        self.used_by: dict[FactKey, set[FactKey]] = {}
        self.records = 0
        self.canon: dict[FactKey, FactKey] = {}

    def set(self, head: FactKey, supports: list[Support]) -> None:
        old = self.of.get(head, [])
        reindex(self.used_by, head, old, supports)
        self.records += len(supports) - len(old)
        if supports:
            self.of[head] = supports
        else:
            self.of.pop(head, None)

    def without(self, head: FactKey, x: FactKey) -> bool:
        """Drop ``head``'s supports that used ``x`` (``set`` with the survivors, without
        rebuilding both body sets: the kill phase calls this once per lost support); True
        when none is left."""
        old = self.of.get(head)
        if not old:
            return True
        kept = [s for s in old if x not in s[1]]
        if len(kept) == len(old):
            return False
        still = {y for _, body in kept for y in body}
        used_by = self.used_by
        for _, body in old:
            if x in body:
                for y in body:
                    if y not in still:
                        users = used_by.get(y)
                        if users is not None:
                            users.discard(head)
                            if not users:
                                del used_by[y]
        self.records -= len(old) - len(kept)
        if kept:
            self.of[head] = kept
        else:
            del self.of[head]
        return not kept

    def append(self, head: FactKey, support: Support) -> None:
        """Add a support the caller knows is new and within K (materialisation's fast path:
        nothing to unindex)."""
        self.of.setdefault(head, []).append(support)
        for x in support[1]:
            users = self.used_by.get(x)
            if users is None:
                self.used_by[x] = {head}
            else:
                users.add(head)
        self.records += 1

    def add(self, head: FactKey, support: Support) -> None:
        cur = self.of.get(head, [])
        if len(cur) < self.k and support not in cur:
            self.set(head, [*cur, support])

    def forget(self, head: FactKey) -> None:
        self.set(head, [])
        self.rank.pop(head, None)
        self.canon.pop(head, None)

    def drop(self, key: FactKey) -> None:
        """A base or lower-stratum fact went: it indexes nothing any more."""
        self.used_by.pop(key, None)
        self.canon.pop(key, None)


_Slots = tuple[tuple[str, int], ...]


def _body_slots(rule: ast.Rule, rels: Iterable[str]) -> tuple[_Slots, _Slots]:
    """Per positive body atom, (relation, its index among the body rows a join returns), and
    the same for the atoms inside the stratum (the ones a rank is taken over); computed once
    per rule."""
    cached = rule.__dict__.get("_nr_psn_slots")
    if cached is None:
        atoms = rule.atoms()
        slots = tuple((a.relation, k) for k, a in enumerate(atoms))
        cached = (slots, tuple(x for x in slots if x[0] in rels))
        object.__setattr__(rule, "_nr_psn_slots", cached)
    return cached


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while supports are built or rewritten: they are
    hundreds of thousands of small acyclic containers (reference counting frees them), and
    the collector's passes over them cost about as much as the joins themselves (measured:
    materialising backbone/north_america takes 1.8 s of CPU paused, 3.0 s not)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _eligible(stratum: Stratum, overrides: Mapping[str, str] | None = None) -> bool:
    """PSN keeps supports for this stratum (no negation or aggregate, no view switched to
    another routine by a per-view override)."""
    if overrides and any(overrides.get(r, "psn") != "psn" for r in stratum.relations):
        return False
    return not stratum.aggregates and not stratum.negation


def _psn_stratum(state: State, stratum: Stratum, I: Database, D: Database, A: Database,
                 stats: BatchStats) -> None:
    sup: _Supports = state.extra["supports"]
    rule_index: dict[int, int] = state.extra["rule_index"]
    rels = stratum.relations
    rng = state.rng

    def rank_of(body: tuple[FactKey, ...]) -> int:
        return 1 + max((sup.rank.get(y, 0) for y in body if y[0] in rels), default=0)

    # 1. Kill: drop supports that used a removed fact; facts left with none become suspect.
    susp = Database()
    queue = [(rel, row) for rel, rows in D.rel.items() for row in rows if (rel, row) not in A]
    while queue:
        x = queue.pop()
        for h in list(sup.used_by.get(x, ())):
            if h[0] not in rels:
                continue
            if sup.without(h, x) and h not in susp:
                susp.add(*h)
                queue.append(h)

    # 2. Rederive suspects in one step from facts that never became suspect.
    # (I \ ((D \ A) ∪ susp)) ∪ A, flattened: a fact of A is shown whatever hides it
    standing = Patched(I, hide=(D, susp), show=(A,))
    revived: list[tuple[FactKey, int, list[Support]]] = []
    suspects = [(rel, row) for rel, rows in susp.rel.items() for row in rows]
    if rng is not None:
        rng.shuffle(suspects)
    for h in suspects:
        cands: list[tuple[int, Support]] = []
        for rule in stratum.rules:
            if rule.head.relation != h[0]:
                continue
            for rows in rows_for(rule, h[1], standing, standing):
                body = body_keys(rule, rows)
                cands.append((rank_of(body), (rule_index[id(rule)], body)))
        if cands:
            cands.sort(key=lambda c: c[0])
            best = cands[: sup.k]
            revived.append((h, best[-1][0], [s for _, s in best]))
    stats.rederived += len(revived)

    # 3. Insert semi-naively from revived facts and lower-strata additions.
    added = Database()
    cur = Patched(I, hide=(D, susp), show=(A, added))
    delta = Database()
    for h, r, supports in revived:
        susp.discard(*h)
        sup.rank[h] = r
        sup.set(h, supports)
        delta.add(*h)
    body_rels = {a.relation for rule in stratum.rules for a in rule.atoms()}
    for rel in body_rels - rels:
        for row in A.rel.get(rel, ()):
            if (rel, row) not in D:
                delta.add(rel, row)
    rules = list(stratum.rules)
    if rng is not None:
        rng.shuffle(rules)
    while any(delta.rel.values()):
        stats.rounds += 1
        new_delta = Database()
        old = Patched(I, hide=(D, susp), show=(A, added), drop=(delta,))
        for rule in rules:
            atoms = rule.atoms()
            for i, atom in enumerate(atoms):
                if not delta.rel.get(atom.relation):
                    continue
                reads = {j: (cur if j < i else delta if j == i else old)
                         for j in range(len(atoms))}
                for row, rows in fire_rows(rule, reads, cur, first=i):
                    h = (rule.head.relation, row)
                    body = body_keys(rule, rows)
                    r = rank_of(body)
                    support = (rule_index[id(rule)], body)
                    if h in cur and h not in new_delta:
                        if r <= sup.rank.get(h, 0):
                            sup.add(h, support)
                        continue
                    if h in new_delta:
                        if r <= sup.rank[h]:
                            sup.add(h, support)
                        continue
                    if h in susp:
                        susp.discard(*h)
                        stats.rederived += 1
                    else:
                        added.add(*h)
                    sup.rank[h] = r
                    sup.set(h, [support])
                    new_delta.add(*h)
        delta = new_delta

    # 4. Suspects never revived lost all support: they go.
    for rel, rows in susp.rel.items():
        for row in rows:
            D.add(rel, row)
            sup.forget((rel, row))
            stats.overdeleted += 1
    for rel, rows in added.rel.items():
        for row in rows:
            A.add(rel, row)
    state.extra["records"] = sup.records


def _stratum_fn_for(state: State):
    """Per stratum: PSN where it keeps supports, else DRed, or FBF where a view asks for it."""
    overrides = state.extra.get("overrides") or {}

    def pick(stratum: Stratum):
        if _eligible(stratum, overrides):
            return _psn_stratum
        if any(overrides.get(r) == "fbf" for r in stratum.relations):
            from netrules.engine.strategies import fbf

            return fbf._stratum_fn(stratum)
        return dred.dred_stratum
    return pick


def materialize(plan: Plan, facts: Iterable[Fact] = (), *, rng: random.Random | None = None,
                k: int = DEFAULT_K, overrides: Mapping[str, str] | None = None) -> State:
    """From scratch, ranks and supports recorded on the way (see ``_materialize``);
    ``overrides`` maps views to the routine that maintains them instead (``parse_spec``)."""
    with gc_paused():
        return _materialize(plan, facts, rng=rng, k=k, overrides=dict(overrides or {}))


def _materialize(plan: Plan, facts: Iterable[Fact], *, rng: random.Random | None,
                 k: int, overrides: dict[str, str]) -> State:
    """From scratch, with ranks and supports recorded on the way: semi-naive rounds over one
    database (no deletion bookkeeping to layer views for), each derivation kept as a support
    while its body ranks stay below the head's."""
    state = State(plan, Database(), BaseLedger(), name, rng)
    sup = state.extra["supports"] = _Supports(k)
    rule_index = state.extra["rule_index"] = {id(r): i for i, r in enumerate(plan.rules)}
    state.extra["overrides"] = overrides
    all_facts = [*plan.program.facts, *facts]
    state.ledger.apply([("+", f) for f in all_facts])
    db = state.db
    for f in state.ledger.present():
        db.add(f.relation, f.args)
    rank, canon = sup.rank, sup.canon
    for stratum in plan.strata:
        if not _eligible(stratum, overrides):
            if stratum.iterated:
                evaluate_iterated(stratum, db, state.extra)
            else:
                evaluate_stratum(stratum, db)
            continue
        rels = stratum.relations
        delta: Database | None = None  # None: the first round reads everything
        while delta is None or any(delta.rel.values()):
            new = Database()
            for rule in stratum.rules:
                atoms = rule.atoms()
                rid = rule_index[id(rule)]
                slots, ranked = _body_slots(rule, rels)
                one = ranked[0] if len(ranked) == 1 else None  # linear recursion, the usual
                head_rel = rule.head.relation
                seen = db.rel[head_rel]
                positions = [None] if delta is None else [
                    i for i, a in enumerate(atoms) if delta.rel.get(a.relation)]
                for i in positions:
                    reads = db if i is None else {j: (delta if j == i else db)
                                                  for j in range(len(atoms))}
                    # a firing reads the database as it was when it started; what it adds
                    # is in ``new``, so the next round fires from it
                    for row, rows in fire_rows(rule, reads, db, first=i):
                        h = (head_rel, row)
                        if row in seen:
                            # most derivations of a known fact: once it has K supports, or
                            # when the body ranks too high to be well-founded, skip the rest
                            cur = sup.of.get(h)
                            if cur is None or len(cur) >= k:
                                continue
                            if one is not None:
                                r = 1 + rank.get((one[0], rows[one[1]]), 0)
                            else:
                                r = 1 + max((rank.get((rel, rows[slot]), 0)
                                             for rel, slot in ranked),
                                            default=0)
                            if r > rank[h]:
                                continue
                            support = (rid, tuple([canon.setdefault(x := (rel, rows[slot]), x)
                                                   for rel, slot in slots]))
                            if support not in cur:
                                sup.append(h, support)
                            continue
                        db.add(head_rel, row)
                        new.add(head_rel, row)
                        h = canon.setdefault(h, h)
                        if one is not None:
                            rank[h] = 1 + rank.get((one[0], rows[one[1]]), 0)
                        else:
                            rank[h] = 1 + max((rank.get((rel, rows[slot]), 0)
                                               for rel, slot in ranked), default=0)
                        sup.append(h, (rid, tuple([canon.setdefault(x := (rel, rows[slot]), x)
                                                   for rel, slot in slots])))
            delta = new
    state.extra["records"] = sup.records
    return state


def apply(state: State, batch: list[tuple[str, Fact]]) -> Delta:
    with gc_paused():
        delta = dred.apply(state, batch, _stratum_fn_for(state))
    # removed base and lower facts no longer index anything
    sup: _Supports = state.extra["supports"]
    for rel, rows in delta.removed.items():
        for row in rows:
            sup.drop((rel, row))
    return delta


def explain(state: State, fact: Fact) -> Derivation | None:
    """The derivation tree given by kept supports (least-rank support first)."""
    sup: _Supports = state.extra["supports"]
    plan = state.plan
    key = (fact.relation, fact.args)
    if key not in state.db:
        return None
    if key not in sup.of:
        return explain_by_search(state, fact)

    def build(k: FactKey) -> Derivation:
        f = Fact(k[0], k[1], plan.locspec.get(k[0], 0))
        supports = sup.of.get(k)
        if not supports:
            if k[0] in plan.derived:
                return explain_by_search(state, f) or Derivation(f, "?")
            return Derivation(f)
        rid, body = min(supports, key=lambda s: max(
            (sup.rank.get(y, 0) for y in s[1]), default=0))
        rule = plan.rules[rid]
        return Derivation(f, rule.label or str(rule.head), [build(y) for y in body])

    return build(key)
