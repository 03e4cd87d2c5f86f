"""FBF / B/F (paper 003, Algorithm 5): before deleting a threatened fact, *prove* it survives.

DRed overdeletes every fact an old derivation of which used a deleted fact, then rederives;
on a mesh that is most of the view. FBF checks each threatened fact by backward chaining over
the surviving old facts (each fact checked once: set C), proves it by forward chaining from
non-recursive rules and lower strata (SATURATE, set P; facts it reaches but has not checked are
delayed in Y), and deletes only what it cannot prove. This is the never-abort strategy, so no
fact is left blocked (B = ∅) and no one-step rederivation is needed (Theorem 25(e)).

Strata with negation or aggregates go to DRed, as in the PSN strategy; backward chaining
recurses once per checked fact, so deep chains raise the recursion limit for the batch.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterable

from netrules.engine.firing import FactKey, body_keys, changed_heads, derivable, fire_from_delta
from netrules.engine.joins import rows_for
from netrules.engine.ledger import BaseLedger
from netrules.engine.reference import Database, Overlay
from netrules.engine.strategies import dred
from netrules.engine.strategies.base import (
    BatchStats,
    Delta,
    Derivation,
    State,
    explain_by_search,
)
from netrules.engine.views import Minus, Union
from netrules.facts import Fact
from netrules.plan import Plan, Stratum

__all__ = ["name", "materialize", "apply", "explain"]

name = "fbf"


def _fbf_stratum(state: State, stratum: Stratum, I: Database, D: Database, A: Database,
                 stats: BatchStats) -> None:
    rels = stratum.relations
    recursive = [r for r in stratum.rules
                 if any(a.relation in rels for a in r.atoms())]
    nonrecursive = [r for r in stratum.rules if r not in recursive]
    d_minus_a = Minus(D, A)
    surviving = Minus(I, d_minus_a)          # I \ (D \ A)
    neg_old = Union(I, A)                    # negatives are matched against I ∪ A
    C, P, Y = set(), Database(), set()       # checked, proved, delayed
    delta_d = Database()                     # Δ_D of the current DELETEUNPROVED iteration

    def saturate(f: FactKey) -> bool:
        C.add(f)
        grounded = f in Y or any(
            derivable(r, f[1], surviving, neg_old)
            for r in nonrecursive if r.head.relation == f[0])
        if not grounded:
            return False
        n_p = {f}
        proof_view = Overlay(surviving, P, rels)  # P for this stratum, I \ (D \ A) below
        while True:
            delta_p = Database()
            for g in n_p:
                if g in C and g not in P:
                    delta_p.add(*g)
                elif g not in C:
                    Y.add(g)
            if not any(delta_p.rel.values()):
                return True
            for rel, rows in delta_p.rel.items():
                for row in rows:
                    P.add(rel, row)
            n_p = fire_from_delta(recursive, delta_p, proof_view, neg_old)

    def check(f: FactKey) -> None:
        if f in C:
            return
        if saturate(f):
            return
        # backward chaining over old recursive instances whose body is not known deleted
        not_deleted = Minus(I, Minus(Union(D, delta_d), A))
        for rule in recursive:
            if rule.head.relation != f[0]:
                continue
            for rows in rows_for(rule, f[1], not_deleted, neg_old):
                for g in body_keys(rule, rows):
                    if g[0] in rels:
                        check(g)
                if f in P:
                    return

    # DELETEUNPROVED (lines 67-76)
    n_d: set[FactKey] = set()
    for rule in stratum.rules:
        for row in changed_heads(rule, d_minus_a, Minus(A, D), I, I):
            n_d.add((rule.head.relation, row))
    def survives(f: FactKey, round_deleted: Database) -> bool:
        nonlocal delta_d
        delta_d = round_deleted
        check(f)
        return f in P

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 50_000))
    try:
        dred.delete_phase(recursive, n_d, I, D, surviving, neg_old, stats, survives)
    finally:
        sys.setrecursionlimit(limit)
    stats.rederived += sum(len(v) for v in P.rel.values())
    dred.insert_phase(stratum, I, D, A, set(), stats)


def _stratum_fn(stratum: Stratum):
    plain = not stratum.aggregates and not stratum.negation and not stratum.iterated
    return _fbf_stratum if plain else dred.dred_stratum


def materialize(plan: Plan, facts: Iterable[Fact] = (), *,
                rng: random.Random | None = None) -> State:
    state = State(plan, Database(), BaseLedger(), name, rng)
    apply(state, [("+", f) for f in [*plan.program.facts, *facts]])
    return state


def apply(state: State, batch: list[tuple[str, Fact]]) -> Delta:
    return dred.apply(state, batch, _stratum_fn)


def explain(state: State, fact: Fact) -> Derivation | None:
    return explain_by_search(state, fact)
