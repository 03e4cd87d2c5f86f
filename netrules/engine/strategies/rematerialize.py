"""Rematerialisation: recompute every view from scratch and diff. The crossover fallback for
large batches (paper 003 §10) and the simplest possible strategy to check the others against.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable

from netrules.engine.ledger import BaseLedger
from netrules.engine.reference import Database, evaluate_program
from netrules.engine.strategies.base import (
    BatchStats,
    Delta,
    Derivation,
    State,
    check_batch,
    diff_databases,
    explain_by_search,
    timed,
)
from netrules.facts import Fact
from netrules.plan import Plan

__all__ = ["name", "materialize", "apply", "explain"]

name = "rematerialize"


def materialize(plan: Plan, facts: Iterable[Fact] = (), *,
                rng: random.Random | None = None) -> State:
    state = State(plan, Database(), BaseLedger(), name, rng)
    apply(state, [("+", f) for f in facts])
    return state


def apply(state: State, batch: list[tuple[str, Fact]]) -> Delta:
    t0 = time.perf_counter()
    stats = BatchStats(strategy=name, rounds=1)
    state.ledger.apply(check_batch(state.plan, batch))
    views = evaluate_program(state.plan, state.ledger.present())
    new = Database(f for facts in views.values() for f in facts)
    delta = diff_databases(state.db, new, stats)
    state.db = new
    stats.pending_deletions = len(state.ledger.pending_deletions())
    timed(stats, t0)
    return delta


def explain(state: State, fact: Fact) -> Derivation | None:
    return explain_by_search(state, fact)
