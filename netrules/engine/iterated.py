"""Recursion through an aggregate (an *iterated* stratum), evaluated and maintained by
differential Jacobi iteration.

The stratum means what ``reference.iterate_stratum`` computes: apply every rule at once to the
previous result until it repeats. That naive loop re-derives the whole stratum per iteration
(best routes on a 1,000-node backbone: hundreds of iterations over a million facts). Here each
iteration is computed from the previous one by the facts that changed between them, the way
one-step (non-recursive) maintenance works: ``S_k+1 = T(L, S_k)`` differs from ``S_k = T(L,
S_k-1)`` only through rule instances that use a fact of ``S_k △ S_k-1``, and for aggregate
rules only in the groups such instances touch. From nothing this reproduces the naive
sequence exactly, so ``evaluate`` gives the reference's answer at the cost of the changes.

``maintain`` starts the same iteration from the old fixpoint with the new lower strata. It
settles on a fixpoint of the new program; that is the from-scratch answer whenever the
stratum has a single fixpoint, which is the case the language documents for path-vector
routing with positive link costs (every best route extends a neighbour's best route; the
differential tests check it against the reference after every batch). A withdrawn route is
replaced by the next best one in the iterations that follow, never counted to infinity:
``f_member`` keeps routes loop-free, so each iteration's routes are real paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from netrules.engine.aggregates import AggIndex
from netrules.engine.firing import (
    FactKey,
    changed_bindings,
    changed_heads,
    derivable,
    distinct_bindings,
)
from netrules.engine.joins import bindings_of, fire_rows, probe_patterns
from netrules.engine.reference import (
    Database,
    Overlay,
    aggregate_rule,
)
from netrules.engine.views import Minus, Union
from netrules.errors import EvalError
from netrules.lang import ast
from netrules.plan import Stratum

__all__ = ["evaluate_iterated", "iterate_from_nothing", "apply_once", "maintain_iterated",
           "MAX_ITERATIONS"]

MAX_ITERATIONS = 10_000


class _Current:
    """The stratum's rows now: ``(base \\ gone) ∪ new`` over a read-only ``base``."""

    def __init__(self, base: Any) -> None:
        self.base, self.gone, self.new = base, Database(), Database()
        self.view = Union(Minus(base, self.gone), self.new)

    def remove(self, key: FactKey) -> None:
        if not self.new.discard(*key):
            self.gone.add(*key)

    def add(self, key: FactKey) -> None:
        if not self.gone.discard(*key):
            self.new.add(*key)


def _fired(rule: ast.Rule, pos_delta: Database, neg_delta: Database, read: Any
           ) -> Iterable[dict]:
    """Bindings over ``read`` with a positive atom in ``pos_delta`` or a negated atom whose
    fact is in ``neg_delta`` (which therefore held, or no longer holds, in ``read``)."""
    return changed_bindings(rule, pos_delta, neg_delta, read, read)


Aggs = dict[int, AggIndex]


def _derivable(key: FactKey, rules: list[ast.Rule], read: Any, aggs: Aggs) -> bool:
    for rule in rules:
        if rule.head.relation != key[0]:
            continue
        if rule.head.aggregate():
            ix = aggs[id(rule)]
            if ix.row(ix.key_of_row(key[1])) == key[1]:
                return True
        elif derivable(rule, key[1], read, read):
            return True
    return False


def _step(rules: list[ast.Rule], prev_in: Any, now_in: Any, prev_out: Any,
          d_in: Database, a_in: Database, aggs: Aggs) -> tuple[set[FactKey], set[FactKey]]:
    """``T(now_in)`` against ``prev_out = T(prev_in)``: (rows that go, rows that come), where
    ``now_in`` is ``prev_in`` less ``d_in`` plus ``a_in``. Aggregate rules move their
    per-group index (``aggs``, over ``prev_in`` on entry, ``now_in`` on exit) by the bindings
    that stopped and started holding: no group is rescanned."""
    lost: set[FactKey] = set()
    found: set[FactKey] = set()
    for rule in rules:
        rel = rule.head.relation
        if rule.head.aggregate():
            ix = aggs[id(rule)]
            stopped = distinct_bindings(_fired(rule, d_in, a_in, prev_in))
            started = distinct_bindings(_fired(rule, a_in, d_in, now_in))
            went, came = ix.move(stopped, started)
            lost.update((rel, row) for row in went)
            found.update((rel, row) for row in came)
        else:
            lost.update((rel, row) for row in changed_heads(rule, d_in, a_in, prev_in, prev_in))
            found.update((rel, row) for row in changed_heads(rule, a_in, d_in, now_in, now_in))
    gone = {k for k in lost - found
            if k in prev_out and not _derivable(k, rules, now_in, aggs)}
    come = {k for k in found if k not in prev_out}
    return gone, come


def new_aggregates(stratum: Stratum, read: Any) -> Aggs:
    """The stratum's aggregate indexes over ``read`` (built once; batches then move them)."""
    aggs: Aggs = {}
    for rule in stratum.rules:
        if rule.head.aggregate():
            ix = aggs[id(rule)] = AggIndex(rule)
            ix.update((), distinct_bindings(bindings_of(rule, read)))
    return aggs


def _iterate(stratum: Stratum, lower_old: Any, lower_new: Any, cur: _Current,
             d_in: Database, a_in: Database, *, from_nothing: bool,
             fixed: Database | None = None,
             keep: Callable[[FactKey], bool] | None = None, aggs: Aggs | None = None,
             prev_stratum: Any = None) -> tuple[int, Aggs]:
    """Iterate ``S := T(lower_new, S ∪ fixed)`` from ``cur`` until it repeats; returns
    iterations and the aggregate indexes, now over the fixpoint. ``fixed`` holds stratum
    facts given from outside (a Spark region's facts derived in other regions), read like
    the stratum's own; ``keep`` limits S to the facts a region may read (those located in
    it). ``prev_stratum``: the stratum part of the previous step's input when it is not
    ``cur`` less the changes ``d_in``/``a_in`` (the first step after an overdeletion)."""
    rules, rels = list(stratum.rules), stratum.relations
    last_gone, last_new = Database(), Database()
    prev_lower = lower_old if prev_stratum is None else lower_new

    def with_fixed(view: Any) -> Any:
        return view if fixed is None else Union(view, fixed)

    if from_nothing:  # S_1 = T(L, ∅), in full: nothing to take a difference from
        now_in = Overlay(lower_new, with_fixed(cur.view), rels)
        aggs = new_aggregates(stratum, now_in)
        for key in apply_once(stratum, lower_new, with_fixed(cur.view), aggs):
            if keep is None or keep(key):
                last_new.add(*key)
        for rel, rows in last_new.rel.items():
            for row in rows:
                cur.add((rel, row))
        d_in, a_in, prev_lower = last_gone, last_new, lower_new
    for iteration in range(1 + from_nothing, MAX_ITERATIONS + 1):
        prev_out = cur.view
        before = (prev_stratum if prev_stratum is not None
                  else Union(Minus(prev_out, last_new), last_gone))
        prev_stratum = None
        prev_in = Overlay(prev_lower, with_fixed(before), rels)
        now_in = Overlay(lower_new, with_fixed(prev_out), rels)
        assert aggs is not None or not any(r.head.aggregate() for r in rules)
        gone, come = _step(rules, prev_in, now_in, prev_out, d_in, a_in, aggs or {})
        if keep is not None:
            come = {k for k in come if keep(k)}
        if not gone and not come:
            return iteration, aggs or {}
        last_gone, last_new = Database(), Database()
        for key in gone:
            last_gone.add(*key)
        for key in come:
            last_new.add(*key)
        for key in gone:
            cur.remove(key)
        for key in come:
            cur.add(key)
        d_in, a_in, prev_lower = last_gone, last_new, lower_new
    raise EvalError(f"relations {', '.join(sorted(rels))} recurse through an aggregate and did "
                    f"not settle after {MAX_ITERATIONS} iterations (does a cycle of zero or "
                    "negative costs keep improving?)")


def iterate_from_nothing(stratum: Stratum, lower: Any, fixed: Database | None = None,
                         keep: Callable[[FactKey], bool] | None = None
                         ) -> tuple[Database, int]:
    """The stratum's facts over ``lower`` (plus ``fixed``, always read; only those ``keep``
    accepts are kept): the naive iteration's answer, computed from the changes between
    iterations."""
    facts, iterations, _aggs = _from_nothing(stratum, lower, fixed, keep)
    return facts, iterations


def _from_nothing(stratum: Stratum, lower: Any, fixed: Database | None = None,
                  keep: Callable[[FactKey], bool] | None = None
                  ) -> tuple[Database, int, Aggs]:
    cur = _Current(Database())
    iterations, aggs = _iterate(stratum, lower, lower, cur, Database(), Database(),
                                from_nothing=True, fixed=fixed, keep=keep)
    return cur.new, iterations, aggs


def apply_once(stratum: Stratum, lower: Any, facts: Any, aggs: Aggs | None = None
               ) -> set[FactKey]:
    """Every head one application of the stratum's rules derives from ``facts`` (``aggs``:
    the aggregate indexes over exactly that, when the caller has them)."""
    read = Overlay(lower, facts, stratum.relations)
    out: set[FactKey] = set()
    for rule in stratum.rules:
        if rule.head.aggregate() and aggs is not None:
            ix = aggs[id(rule)]
            rows = {r for r in (ix.row(k) for k in ix.groups) if r is not None}
        elif rule.head.aggregate():
            rows = aggregate_rule(rule, bindings_of(rule, read))
        else:
            rows = {row for row, _ in fire_rows(rule, read, read)}
        out.update((rule.head.relation, row) for row in rows)
    return out


def _slot(stratum: Stratum) -> str:
    return f"iterated_aggregates:{min(stratum.relations)}"


def evaluate_iterated(stratum: Stratum, db: Database, cache: dict | None = None) -> int:
    """Add the stratum's facts to ``db`` (which holds every lower stratum). Returns
    iterations. ``cache`` (a strategy's ``state.extra``) receives the aggregate indexes
    the iteration ended with, so the first batch need not rebuild them (over a million
    routes, that rebuild cost a minute); ``db`` then also gets the lookup indexes
    maintenance will probe (``joins.probe_patterns``), which the first link event on
    americas' best routes otherwise spent 12-15 s building."""
    facts, iterations, aggs = _from_nothing(stratum, db)
    for rel, rows in facts.rel.items():
        for row in rows:
            db.add(rel, row)
    del facts  # before warming: its own indexes need not outlive the copy
    if cache is not None:
        cache[_slot(stratum)] = aggs
        db.warm(probe_patterns(list(stratum.rules)))
    return iterations


def _overdelete(stratum: Stratum, old: Any, d_in: Database, a_in: Database, aggs: Aggs
                ) -> Database:
    """Every stratum fact of the old fixpoint with a derivation that leaned, directly or
    through other such facts, on a lost lower fact (or on one newly true under ``not``);
    an aggregate row goes when a binding it may rest on does (``AggIndex.leans_on``: any
    binding of a count or sum, one giving the extreme of a min or max, so a lost detour
    does not pull down every best route beside it). Starting the iteration without them
    means no stale route is ever extended: a withdrawn route is not hunted along ever longer
    detours (BGP's path exploration), it is simply rebuilt."""
    over = Database()
    pos, neg = d_in, a_in
    while any(pos.rel.values()) or any(neg.rel.values()):
        newly = Database()
        for rule in stratum.rules:
            rel = rule.head.relation
            if rule.head.aggregate():
                ix = aggs[id(rule)]
                pairs = {ix.pair_of(b) for b in _fired(rule, pos, neg, old)}
                rows = {ix.row(k) for k, v in pairs if ix.leans_on(k, v)}
            else:
                rows = set(changed_heads(rule, pos, neg, old, old))
            for row in rows:
                if row is not None and (rel, row) in old and (rel, row) not in over:
                    newly.add(rel, row)
                    over.add(rel, row)
        pos, neg = newly, Database()
    return over


def maintain_iterated(stratum: Stratum, I: Database, D: Database, A: Database,
                      cache: dict | None = None) -> int:
    """DRed's contract for one stratum: ``I`` is the old state, ``D``/``A`` what lower strata
    lost and gained; the stratum's own losses and gains are added to them. Returns
    iterations (0 when nothing the stratum reads changed). ``cache`` (a strategy's
    ``state.extra``) keeps the aggregate indexes from one batch to the next."""
    read = {a.relation for r in stratum.rules for a in r.atoms()} | {
        lit.atom.relation for r in stratum.rules for lit in r.body
        if isinstance(lit, ast.Negation)}
    d_in, a_in = Database(), Database()
    for src, other, dst in ((D, A, d_in), (A, D, a_in)):
        for rel in read - stratum.relations:
            for row in src.rel.get(rel, ()):
                if (rel, row) not in other:
                    dst.add(rel, row)
    if not any(d_in.rel.values()) and not any(a_in.rel.values()):
        return 0
    store = cache if cache is not None else {}
    slot = _slot(stratum)
    aggs = store.pop(slot, None)  # popped: a failed batch must not leave a half-moved index
    if aggs is None:
        aggs = new_aggregates(stratum, Overlay(I, I, stratum.relations))
    old = Overlay(I, I, stratum.relations)
    over = _overdelete(stratum, old, d_in, a_in, aggs)
    cur = _Current(I)
    lower_new = Union(Minus(I, D), A)
    iterations = 0
    if any(over.rel.values()):
        # the first step reads the old fixpoint less everything that leaned on a lost
        # fact: S_1 = T(L_new, F \ over), moved from F = T(L_old, F) by d_in ∪ over
        d_first = Database()
        for src in (d_in, over):
            for rel, rows in src.rel.items():
                for row in rows:
                    d_first.add(rel, row)
        gone, come = _step(list(stratum.rules), old,
                           Overlay(lower_new, Minus(I, over), stratum.relations), cur.view,
                           d_first, a_in, aggs)
        for key in gone:
            cur.remove(key)
        for key in come:
            cur.add(key)
        # the next step's input differs from F \ over by these
        d_in, a_in = Database(), Database()
        for key in gone:
            if key not in over:
                d_in.add(*key)
        for key in come:
            a_in.add(*key)
        for rel, rows in over.rel.items():
            for row in rows:
                if (rel, row) not in gone:
                    a_in.add(rel, row)
        iterations = 1
    iterations += _iterate(stratum, I, lower_new, cur, d_in, a_in, from_nothing=False,
                           aggs=aggs, prev_stratum=Minus(I, over) if iterations else None)[0]
    store[slot] = aggs
    for rel, rows in cur.gone.rel.items():
        for row in rows:
            D.add(rel, row)
    for rel, rows in cur.new.rel.items():
        for row in rows:
            A.add(rel, row)
    return iterations
