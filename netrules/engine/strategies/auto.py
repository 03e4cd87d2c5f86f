"""The default-by-cost strategy: PSN for batches small next to the network, a from-scratch
rebuild past the crossover (paper 003 §10: incremental maintenance loses to rematerialisation
once a batch deletes a large enough share of the explicit facts).

The estimate is the batch's net base change over the number of base facts. ``THRESHOLD``
comes from ``bench/crossover.py`` (see docs/benchmarks.md); the decision and its reason are
recorded in the batch statistics so an operator can see which path ran.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable

from netrules.engine.strategies import psn
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

__all__ = ["name", "materialize", "apply", "explain", "THRESHOLD"]

name = "auto"
THRESHOLD = 0.15


def materialize(plan: Plan, facts: Iterable[Fact] = (), *,
                rng: random.Random | None = None) -> State:
    state = psn.materialize(plan, facts, rng=rng)
    state.strategy = name
    return state


def _net_change(state: State, batch: list[tuple[str, Fact]]) -> int:
    bal: dict[Fact, int] = {}
    for sign, f in batch:
        bal[f] = bal.get(f, 0) + (1 if sign == "+" else -1)
    n = 0
    for f, d in bal.items():
        before = state.ledger.balance.get(f, 0)
        n += (before > 0) != (before + d > 0)
    return n


def apply(state: State, batch: list[tuple[str, Fact]]) -> Delta:
    batch = check_batch(state.plan, batch)
    base = max(1, sum(1 for n in state.ledger.balance.values() if n > 0))
    share = _net_change(state, batch) / base
    if share <= THRESHOLD:
        delta = psn.apply(state, batch)
        delta.stats.strategy = f"auto:psn ({share:.1%} of base facts)"
        return delta
    t0 = time.perf_counter()
    state.ledger.apply(batch)
    fresh = psn.materialize(state.plan, sorted(state.ledger.present(), key=Fact.key),
                            rng=state.rng)
    stats = BatchStats(strategy=f"auto:rebuild ({share:.1%} of base facts > {THRESHOLD:.0%})",
                       rounds=1)
    delta = diff_databases(state.db, fresh.db, stats)
    state.db, state.extra = fresh.db, fresh.extra
    stats.pending_deletions = len(state.ledger.pending_deletions())
    stats.seconds = time.perf_counter() - t0
    return delta


def explain(state: State, fact: Fact) -> Derivation | None:
    return psn.explain(state, fact)

