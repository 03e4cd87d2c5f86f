"""The engine façade: one maintained program, whatever strategy or backend keeps it.

The pipeline, the CLI and the benchmarks talk to this class only. Updates are signed base
facts; every call returns the batch's net Delta with its statistics.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from netrules.engine import strategies
from netrules.engine.ledger import BaseLedger
from netrules.engine.reference import solve_body
from netrules.engine.strategies.base import Delta, Derivation, State
from netrules.errors import EngineError, NetrulesError
from netrules.facts import Fact
from netrules.lang import ast
from netrules.plan import Plan

__all__ = ["Engine"]


class Engine:
    """A program's views, maintained by ``strategy`` (``auto`` by default: PSN, or a rebuild
    past the crossover)."""

    def __init__(self, plan: Plan, strategy: str = "auto", *, rng: random.Random | None = None
                 ) -> None:
        """``strategy`` may carry per-view overrides: ``"auto,bestPath=dred"``."""
        if plan.reactive:
            raise EngineError(
                "the program has event rules (" + ", ".join(
                    r.label or str(r.head.relation) for r in plan.reactive) + "): they fire on "
                "events and run under netrules.engine.reactive.Reactive, not as views")
        self.plan = plan
        name, overrides = strategies.parse_spec(strategy)
        unknown = sorted(set(overrides) - set(plan.arity))
        if unknown:
            raise EngineError(f"strategy {strategy!r} names {', '.join(unknown)}, not a "
                              f"relation of the program ({', '.join(sorted(plan.arity))})")
        self.strategy = strategies.get(name)
        self._rng, self._overrides = rng, overrides
        if overrides:
            self.state: State = self.strategy.materialize(plan, [], rng=rng,
                                                          overrides=overrides)
        else:
            self.state = self.strategy.materialize(plan, [], rng=rng)
        self.batches = 0

    def apply(self, batch: Iterable[tuple[str, Fact]]) -> Delta:
        """Apply one batch of signed base facts; returns the net change of every relation.
        A batch that fails (a builtin error on the new facts, an aggregate recursion that
        does not settle) leaves the views and the ledger as they were before it."""
        saved = self.state.ledger.copy()
        try:
            delta = self.strategy.apply(self.state, list(batch))
        except NetrulesError:
            self._restore(saved)
            raise
        self.batches += 1
        stale = self.state.ledger.last
        delta.stats.ledger_duplicates = stale["duplicates"]
        delta.stats.ledger_superseded = stale["superseded"]
        return delta

    def _restore(self, ledger: BaseLedger) -> None:
        """Rebuild the state from the ledger as it stood (strategies change their state in
        place while a batch runs, so a failed one is not simply undone)."""
        kw = {"overrides": self._overrides} if self._overrides else {}
        state = self.strategy.materialize(self.plan, [], rng=self._rng, **kw)
        present = ledger.present()
        self.strategy.apply(state, [("+", f) for f in sorted(present, key=Fact.key)])
        state.ledger = ledger
        self.state = state

    def load(self, facts: Iterable[Fact]) -> Delta:
        return self.apply(("+", f) for f in facts)

    def views(self, relations: Iterable[str] | None = None) -> dict[str, list[Fact]]:
        allv = self.state.views()
        if relations is None:
            return allv
        return {r: allv.get(r, []) for r in relations}

    def view(self, relation: str) -> list[Fact]:
        if relation not in self.plan.arity:
            raise EngineError(f"unknown relation {relation!r}; the program has "
                              f"{', '.join(sorted(self.plan.arity))}")
        return self.state.db.facts(relation, self.plan.locspec.get(relation, 0))

    def contains(self, fact: Fact) -> bool:
        return (fact.relation, fact.args) in self.state.db

    def explain(self, fact: Fact) -> Derivation | None:
        """Why ``fact`` holds: a derivation tree down to base facts (None if it does not)."""
        return self.strategy.explain(self.state, fact)

    def query(self, atom: ast.Atom) -> list[Fact]:
        """Facts matching an atom such as ``reachable(@a, X)`` (constants filter, variables
        range)."""
        if atom.relation not in self.plan.arity:
            raise EngineError(f"unknown relation {atom.relation!r}; the program has "
                              f"{', '.join(sorted(self.plan.arity))}")
        if len(atom.args) != self.plan.arity[atom.relation]:
            raise EngineError(f"{atom.relation} takes {self.plan.arity[atom.relation]} "
                              f"arguments, the query gives {len(atom.args)}")
        probe = ast.Rule(ast.Atom("_q", atom.args, None), (atom,))
        rows = set()
        for b in solve_body(probe, self.state.db):
            rows.add(tuple(b[("#row", 0)]))  # type: ignore[index]
        loc = self.plan.locspec.get(atom.relation, 0)
        return sorted((Fact(atom.relation, r, loc) for r in rows), key=Fact.key)

    def pending_deletions(self) -> dict[Fact, int]:
        return self.state.ledger.pending_deletions()

    def state_ratio(self) -> float:
        """Stored derivation records per view fact (bounded-state target: <= 3)."""
        n = self.state.fact_count()
        return self.state.stored_records() / n if n else 0.0
