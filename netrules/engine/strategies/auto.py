"""The default strategy: the columnar engine for every program it maintains; for the others
(recursion through an aggregate, per-view overrides), per-fact PSN while a batch threatens a
small part of the view, a from-scratch rebuild past the crossover (paper 003 §10: incremental
maintenance loses to rematerialisation once a batch deletes enough).

Why not decide on the batch's size alone: what PSN pays for a deletion is the number of facts
left without a kept support (the *suspects* it must rederive or delete), and one link can
orphan a third of a sparse backbone's view while a hundred links in a dense core orphan almost
nothing. So ``apply`` first runs PSN's kill phase read-only over the supports index
(``used_by``), stopping as soon as the count passes the threshold: the estimate costs at most
what the cheap case would and is exact there. A rebuild costs about as much as rematerialising
(``psn.materialize`` is within a few percent of it), so it wins once suspects exceed
``THRESHOLD`` of the facts (a batch deleting over twice that share of the base facts skips the
count: it only ever confirmed the rebuild, at a third of the rebuild's cost); insertions, which
PSN handles semi-naively, still go by their share of the base facts. ``bench/crossover.py``
measures both (docs/benchmarks.md); the choice and its reason are recorded in the batch
statistics.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Mapping

from netrules.engine.firing import FactKey
from netrules.engine.strategies import columnar, psn
from netrules.engine.strategies.base import (
    BatchStats,
    Delta,
    Derivation,
    State,
    check_batch,
    diff_databases,
)
from netrules.facts import Fact
from netrules.plan import Plan

__all__ = ["name", "materialize", "apply", "explain", "THRESHOLD", "INSERT_THRESHOLD",
           "suspects"]

name = "auto"
THRESHOLD = 0.2  # suspects / facts above which a rebuild beats PSN
INSERT_THRESHOLD = 0.15  # inserted / present base facts above which a rebuild does


def materialize(plan: Plan, facts: Iterable[Fact] = (), *,
                rng: random.Random | None = None,
                overrides: Mapping[str, str] | None = None) -> State:
    """The columnar engine where it maintains the program (no per-view overrides), else
    per-fact PSN with the crossover below."""
    if not overrides and columnar.supported(plan):
        state = columnar.materialize(plan, facts, rng=rng)
    else:
        state = psn.materialize(plan, facts, rng=rng, overrides=overrides)
    state.strategy = name
    return state


def _net_change(state: State, batch: list[tuple[str, Fact]]) -> tuple[list[Fact], list[Fact]]:
    """(base facts the batch makes appear, base facts it makes vanish), ledger untouched."""
    appear, vanish = state.ledger.preview(batch)
    return sorted(appear, key=Fact.key), sorted(vanish, key=Fact.key)


def suspects(state: State, vanished: Iterable[FactKey], limit: int | None = None) -> int:
    """How many derived facts PSN's kill phase would leave without a kept support if
    ``vanished`` went, counted without touching the state; stops once past ``limit``."""
    sup = state.extra["supports"]
    used_by, of = sup.used_by, sup.of
    dead = set(vanished)
    queue = list(dead)
    n = 0
    while queue:
        for h in used_by.get(queue.pop(), ()):
            if h in dead:
                continue
            kept = of.get(h)
            if not kept:
                continue
            for _, body in kept:  # plain loops: this runs once per support reached
                for y in body:
                    if y in dead:
                        break
                else:
                    break  # a support with no dead body fact: h stands
            else:
                dead.add(h)
                queue.append(h)
                n += 1
                if limit is not None and n > limit:
                    return n
    return n


def apply(state: State, batch: list[tuple[str, Fact]]) -> Delta:
    if columnar.owns(state):
        delta = columnar.apply(state, batch)
        delta.stats.strategy = "auto:columnar"
        return delta
    t0 = time.perf_counter()
    batch = check_batch(state.plan, batch)
    appear, vanish = _net_change(state, batch)
    facts = max(1, state.fact_count())
    base = max(1, len(state.ledger))
    limit = int(THRESHOLD * facts)
    inserted = len(appear) / base
    lost = 0
    if len(vanish) > 2 * THRESHOLD * base:
        # so much of the network gone that counting would only confirm a rebuild (at half
        # the links: 65-96% of the facts suspect on every topology measured), while the
        # count itself costs a third of a rebuild of what is left
        why = f"{len(vanish) / base:.0%} of base deleted > {2 * THRESHOLD:.0%}"
    elif vanish and (lost := suspects(state, ((f.relation, f.args) for f in vanish),
                                      limit)) > limit:
        why = f"over {limit:,} suspects ({THRESHOLD:.0%} of the facts)"
    elif inserted > INSERT_THRESHOLD:
        why = f"{inserted:.0%} of base inserted > {INSERT_THRESHOLD:.0%}"
    else:
        delta = psn.apply(state, batch)
        delta.stats.strategy = (f"auto:psn ({lost:,} suspects, {lost / facts:.1%} of the "
                                f"facts; {inserted:.0%} of base inserted)")
        delta.stats.seconds = time.perf_counter() - t0
        return delta
    state.ledger.apply(batch)
    with psn.gc_paused():  # the diff and the old state's release allocate and free a lot
        fresh = psn.materialize(state.plan, sorted(state.ledger.present(), key=Fact.key),
                                rng=state.rng, overrides=state.extra.get("overrides"))
        stats = BatchStats(strategy=f"auto:rebuild ({why})", rounds=1)
        delta = diff_databases(state.db, fresh.db, stats)
        state.db, state.extra = fresh.db, fresh.extra
    stats.pending_deletions = len(state.ledger.pending_deletions())
    stats.seconds = time.perf_counter() - t0
    return delta


def explain(state: State, fact: Fact) -> Derivation | None:
    if columnar.owns(state):
        return columnar.explain(state, fact)
    return psn.explain(state, fact)
