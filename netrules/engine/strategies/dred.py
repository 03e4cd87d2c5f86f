"""Optimised DRed (paper 003, Algorithm 4): overdelete, one-step rederive, insert, per stratum.

No state beyond the facts. Each stratum overdeletes every fact with an old derivation that used
a deleted fact (or a fact newly true under ``not``), rederives in one step those that still have
a derivation from surviving facts, then inserts semi-naively over the new state. ``I`` is left
untouched until every stratum is done, as the paper requires: later strata match old instances
against it. Aggregate rules (never recursive after stratification) are recomputed and diffed
when their body relations changed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable

from netrules.engine.aggregates import AggIndex
from netrules.engine.firing import (
    FactKey,
    changed_bindings,
    changed_heads,
    derivable,
    fire_from_delta,
)
from netrules.engine.iterated import maintain_iterated
from netrules.engine.joins import bindings_of
from netrules.engine.ledger import BaseLedger
from netrules.engine.reference import Database
from netrules.engine.strategies.base import (
    BatchStats,
    Delta,
    Derivation,
    State,
    check_batch,
    explain_by_search,
    timed,
)
from netrules.engine.views import Minus, Union
from netrules.facts import Fact
from netrules.lang import ast
from netrules.plan import Plan, Stratum

__all__ = ["name", "materialize", "apply", "explain", "maintain", "dred_stratum"]

name = "dred"

StratumFn = Callable[[State, Stratum, Database, Database, Database, BatchStats], None]


def _recursive_positions(rule: ast.Rule, stratum: Stratum) -> list[int]:
    return [i for i, a in enumerate(rule.atoms()) if a.relation in stratum.relations]


def _holds(rule: ast.Rule, b: dict, db: object) -> bool:
    """Whether binding ``b`` (variables only) satisfies ``rule``'s body in ``db``."""
    start = {k: v for k, v in b.items() if isinstance(k, str)}
    return bool(bindings_of(rule, db, db, start=start))


def _binding_changes(rule: ast.Rule, I: Database, D: Database, A: Database
                     ) -> tuple[list[dict], list[dict]]:
    """Body bindings of ``rule`` that stopped holding and that started, found by firing the
    rule from the changed facts only (the same delta positions as OVERDELETE and INSERT)."""
    new = Union(Minus(I, D), A)
    d_a, a_d = Minus(D, A), Minus(A, D)
    out: list[dict[frozenset, dict]] = [{}, {}]
    for idx, (changed_pos, changed_neg, other, check_in) in enumerate(
            ((d_a, a_d, I, new), (a_d, d_a, new, I))):
        for b in changed_bindings(rule, changed_pos, changed_neg, other, other):
            key = frozenset(kv for kv in b.items() if isinstance(kv[0], str))
            if key not in out[idx] and not _holds(rule, b, check_in):
                out[idx][key] = b
    return list(out[0].values()), list(out[1].values())


def _aggregate_changes(state: State, stratum: Stratum, I: Database, D: Database,
                       A: Database) -> tuple[set[FactKey], set[FactKey], list[AggIndex]]:
    """(rows to overdelete, rows to insert, the stratum's aggregate indexes), moving each
    aggregate rule's groups by the bindings that changed (no rescan of unchanged groups)."""
    indexes: dict[int, AggIndex] = state.extra.setdefault("aggregates", {})
    gone, rows = set(), set()
    used = []
    for rule in stratum.rules:
        if not rule.head.aggregate():
            continue
        ix = indexes.get(id(rule))
        if ix is None:
            ix = indexes[id(rule)] = AggIndex(rule)
            ix.update((), bindings_of(rule, I))  # first use: the old state's bindings
        used.append(ix)
        body_rels = {a.relation for a in rule.atoms()} | {
            b.atom.relation for b in rule.body if isinstance(b, ast.Negation)}
        if not any(D.rel.get(r) or A.rel.get(r) for r in body_rels):
            continue
        removed, added = _binding_changes(rule, I, D, A)
        rel = rule.head.relation
        went, came = ix.move(removed, added)
        gone.update((rel, row) for row in went)
        rows.update((rel, row) for row in came)
    return gone, rows, used


def dred_stratum(state: State, stratum: Stratum, I: Database, D: Database, A: Database,
                 stats: BatchStats) -> None:
    """Algorithm 4, lines 41-43, for one stratum; grows the global D and A."""
    if stratum.iterated:
        stats.rounds += maintain_iterated(stratum, I, D, A, state.extra)
        return
    plain = [r for r in stratum.rules if not r.head.aggregate()]
    recursive = [r for r in plain if _recursive_positions(r, stratum)]
    d_minus_a, a_minus_d = Minus(D, A), Minus(A, D)
    agg_gone, agg_rows, agg_ix = _aggregate_changes(state, stratum, I, D, A)

    # OVERDELETE (lines 45-51)
    n_d: set[FactKey] = set(agg_gone)
    for rule in plain:
        for row in changed_heads(rule, d_minus_a, a_minus_d, I, I):
            n_d.add((rule.head.relation, row))
    neg_old = Union(I, A)
    delete_phase(recursive, n_d, I, D, Minus(I, d_minus_a), neg_old, stats)

    # REDERIVE (line 42): one step from surviving old facts
    n_a: set[FactKey] = set()
    surviving = Minus(I, Minus(D, A))
    for rel in stratum.relations:
        deleted = [row for row in D.rel.get(rel, ()) if (rel, row) not in A]
        for row in deleted:
            if (rel, row) in agg_rows or any(
                    ix.rule.head.relation == rel and ix.row(ix.key_of_row(row)) == row
                    for ix in agg_ix) or any(
                    derivable(r, row, surviving, neg_old)
                    for r in plain if r.head.relation == rel):
                n_a.add((rel, row))
                stats.rederived += 1

    n_a |= agg_rows
    insert_phase(stratum, I, D, A, n_a, stats)


def delete_phase(recursive: list[ast.Rule], n_d: set[FactKey], I: Database, D: Database,
                 surviving: object, neg_old: object, stats: BatchStats,
                 survives: Callable[[FactKey, Database], bool] | None = None) -> None:
    """OVERDELETE (Algorithm 4, lines 47-51): delete the threatened old facts, round by round,
    each round's consequences computed before the round joins D. FBF's DELETEUNPROVED
    (Algorithm 5, lines 69-76) is the same loop with ``survives`` proving facts first; it gets
    the round's deletions so far, which its backward chaining must not use."""
    while True:
        delta = Database()
        for key in n_d:
            if key in D or key not in I:
                continue
            if survives is None or not survives(key, delta):
                delta.add(*key)
        if not any(delta.rel.values()):
            break
        stats.rounds += 1
        n_d = fire_from_delta(recursive, delta, surviving, neg_old)
        for rel, rows in delta.rel.items():
            for row in rows:
                D.add(rel, row)
                stats.overdeleted += 1


def insert_phase(stratum: Stratum, I: Database, D: Database, A: Database, n_a: set[FactKey],
                 stats: BatchStats) -> None:
    """INSERT (Algorithm 4, lines 52-58): seeds ``n_a`` plus every instance with a positive
    atom newly added or a negated atom newly deleted below, then semi-naively to a fixpoint
    over the new state ``(I \\ D) ∪ A``. Shared with FBF (Algorithm 5, line 65)."""
    plain = [r for r in stratum.rules if not r.head.aggregate()]
    recursive = [r for r in plain if _recursive_positions(r, stratum)]
    new = Union(Minus(I, D), A)
    for rule in plain:
        for row in changed_heads(rule, Minus(A, D), Minus(D, A), new, new):
            n_a.add((rule.head.relation, row))
    while True:
        delta = Database()
        for key in n_a:
            if key not in new:
                delta.add(*key)
        if not any(delta.rel.values()):
            break
        stats.rounds += 1
        for rel, rows in delta.rel.items():
            for row in rows:
                A.add(rel, row)
        n_a = fire_from_delta(recursive, delta, new, new)


def maintain(state: State, appeared: set[Fact], vanished: set[Fact], stats: BatchStats,
             stratum_fn: Callable[[Stratum], StratumFn] | None = None) -> Delta:
    """Run every stratum over the net base change and commit ``I := (I \\ D) ∪ A``."""
    I = state.db
    D, A = Database(), Database()
    for f in vanished:
        if (f.relation, f.args) in I:
            D.add(f.relation, f.args)
    for f in appeared:
        if (f.relation, f.args) not in I:
            A.add(f.relation, f.args)
    for stratum in state.plan.strata:
        fn = stratum_fn(stratum) if stratum_fn else dred_stratum
        fn(state, stratum, I, D, A, stats)
    delta = Delta(stats=stats)
    for rel, rows in D.rel.items():
        for row in rows:
            if (rel, row) not in A:
                delta.remove((rel, row))
    for rel, rows in A.rel.items():
        for row in rows:
            if (rel, row) not in D:
                delta.add((rel, row))
    for rel, rows in delta.removed.items():
        for row in rows:
            I.discard(rel, row)
    for rel, rows in delta.added.items():
        for row in rows:
            I.add(rel, row)
    stats.added = sum(len(v) for v in delta.added.values())
    stats.removed = sum(len(v) for v in delta.removed.values())
    stats.pending_deletions = len(state.ledger.pending_deletions())
    return delta


def materialize(plan: Plan, facts: Iterable[Fact] = (), *,
                rng: random.Random | None = None) -> State:
    state = State(plan, Database(), BaseLedger(), name, rng)
    apply(state, [("+", f) for f in [*plan.program.facts, *facts]])
    return state


def apply(state: State, batch: list[tuple[str, Fact]],
          stratum_fn: Callable[[Stratum], StratumFn] | None = None) -> Delta:
    """One batch: the ledger's net change, then every stratum (DRed unless ``stratum_fn``
    picks another per-stratum routine, as PSN does), timed."""
    t0 = time.perf_counter()
    stats = BatchStats(strategy=state.strategy)
    appeared, vanished = state.ledger.apply(check_batch(state.plan, batch))
    delta = maintain(state, appeared, vanished, stats, stratum_fn)
    timed(stats, t0)
    return delta


def explain(state: State, fact: Fact) -> Derivation | None:
    return explain_by_search(state, fact)
