"""The driver of a resident program: the base-fact ledger, the round loop, and nothing else.

The driver keeps only what is as small as the network: the ledger of base facts (so a batch's
net change, a deletion waiting for its insertion, and any split or order of a batch behave as
in every other engine) and the messages of the round in flight. Views, ranks and supports stay
in the regions, held by a ``Regions`` executor: ``LocalRegions`` in this process (tests, small
views) or ``spark.resident.SparkRegions`` in Spark executors.
"""

from __future__ import annotations

import os
import pickle
import random
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from netrules.engine.firing import FactKey
from netrules.engine.ledger import BaseLedger
from netrules.engine.reference import solve_body
from netrules.engine.regional.columnar import ColumnarRegion, bind
from netrules.engine.regional.counting import count, overdelete, witness
from netrules.engine.regional.rounds import Outcome, run_rounds
from netrules.engine.regional.state import RegionState, Support
from netrules.engine.regional.steps import Outbox, Program, insert, kill, rederive, settle
from netrules.engine.strategies.base import BatchStats, Delta, Derivation, check_batch
from netrules.engine.views import Patched
from netrules.errors import EngineError
from netrules.facts import Fact
from netrules.lang import ast
from netrules.plan import Plan

__all__ = ["Regions", "LocalRegions", "RegionalEngine", "run_step", "shuffler", "query_rows",
           "new_region", "Region"]

Region = RegionState | ColumnarRegion


def new_region(prog: Program, g: int) -> Region:
    """An empty region ``g``: columns, unless ``prog.per_fact`` says why not."""
    return RegionState(g, prog.k) if prog.per_fact else ColumnarRegion(g, prog)


def run_step(state: Region, prog: Program, step: tuple[str, int], batch: int,
             common: Any, mine: Any) -> Outbox:
    """One region's part of one round (the same code in this process and in executors);
    ``step`` is (kind, stage)."""
    if isinstance(state, ColumnarRegion):
        return state.step(step, batch, common, mine)
    state.step_sup = set()
    settle(state, batch)
    kind, s = step
    stage = prog.stages[s]
    state.step_flips = {}
    if kind == "kill":
        out = kill(state, prog, stage, common, mine or [])
    elif kind == "rederive":
        out = rederive(state, prog, common)
    elif kind == "insert":
        msgs, seeds = mine or ([], [])
        out = insert(state, prog, stage, msgs, seeds, below=bool(common))
    elif kind == "over":
        out = overdelete(state, prog, stage, bool(common), mine)
    elif kind == "count":
        out = count(state, prog, stage, bool(common), mine or [])
    else:
        raise ValueError(f"unknown round kind {kind!r}")
    out.flips, state.step_flips = state.step_flips, {}
    if prog.report_supports:
        out.supports = state.first_supports(state.step_sup)
        for key, sup in out.supports.items():  # counted facts keep counts, not supports
            if sup is None and key[0] in prog.counted and state.shown(key):
                out.supports[key] = witness(state, prog, key)
    state.step_sup = set()
    return out


class Regions(Protocol):
    """Where regions live. ``batch`` runs every round of one batch (``rounds.run_rounds``)
    and reports what changed; ``rng`` shuffles every inbox."""

    parts: int
    prog: Program

    def batch(self, number: int, gone: list[FactKey], new: list[FactKey],
              rng: random.Random | None) -> Outcome: ...

    def facts(self) -> Iterable[FactKey]: ...

    def query(self, atom: ast.Atom, region: int | None) -> list[tuple]: ...

    def counts(self) -> tuple[int, int]: ...  # (view facts, stored support records)

    def jobs(self) -> int: ...  # Spark jobs run so far (0 in process)


def query_rows(state: Region, atom: ast.Atom) -> set[tuple]:
    """Rows of ``atom``'s relation shown in this region that match it (constants filter,
    variables range): ``Engine.query`` on one region."""
    probe = ast.Rule(ast.Atom("_q", atom.args, None), (atom,))
    shown = state.shown(atom.relation) if isinstance(state, ColumnarRegion) else \
        Patched(state.db, hide=(state.susp,))
    return {tuple(b[("#row", 0)]) for b in solve_body(probe, shown)}  # type: ignore[index]


def shuffler(rng: random.Random | None) -> Callable[[int, list], None] | None:
    """``run_rounds``' inbox shuffle drawn from ``rng`` (None: delivery in order)."""
    return None if rng is None else (lambda _dest, msgs: rng.shuffle(msgs))


class LocalRegions:
    """Regions in this process. With ``rebuild`` every round starts from a pickled snapshot
    plus the replayed log, as a worker that missed earlier rounds would (tests the log); the
    log is folded into a new snapshot once it holds more than ``compact_after`` entries."""

    def __init__(self, prog: Program, parts: int, *, rebuild: bool = False,
                 compact_after: int = 50) -> None:
        self.prog, self.parts, self.rebuild = prog, parts, rebuild
        self.compact_after = compact_after
        self.states = {g: new_region(prog, g) for g in range(parts)}
        self._snap = {g: pickle.dumps(s) for g, s in self.states.items()} if rebuild else {}
        self._logs: dict[int, list[tuple]] = {g: [] for g in range(parts)}

    def batch(self, number: int, gone: list[FactKey], new: list[FactKey],
              rng: random.Random | None) -> Outcome:
        def exchange(step: tuple[str, int], targets: list[int], common: Any,
                     per_region: dict[int, Any]) -> dict[int, Outbox]:
            return self.run(step, number, targets, common, per_region)

        return run_rounds(exchange, self.parts, self.prog.stages, gone, new, self.prog.part_of,
                          shuffler(rng))

    def run(self, step: tuple[str, int], batch: int, targets: Iterable[int], common: Any,
            per_region: dict[int, Any]) -> dict[int, Outbox]:
        out = {}
        for g in targets:
            state = self.states[g]
            if self.rebuild:
                state = bind(pickle.loads(self._snap[g]), self.prog)
                state.replay(self._logs[g])
                state.log = self._logs[g]
            out[g] = run_step(state, self.prog, step, batch, common, per_region.get(g))
            if self.rebuild:
                state.log = None
                self.states[g] = state
                if len(self._logs[g]) > self.compact_after:  # now and then, as executors do
                    self._snap[g], self._logs[g] = pickle.dumps(state), []
        return out

    def facts(self) -> Iterable[FactKey]:
        for s in self.states.values():
            yield from s.visible()

    def query(self, atom: ast.Atom, region: int | None) -> list[tuple]:
        states = self.states.values() if region is None else [self.states[region]]
        return sorted({row for s in states for row in query_rows(s, atom)}, key=repr)

    def counts(self) -> tuple[int, int]:
        return (sum(s.facts() for s in self.states.values()),
                sum(s.records() for s in self.states.values()))

    def jobs(self) -> int:
        return 0


class RegionalEngine:
    """Maintains a localized program region by region; see the module docstring.
    ``rng`` shuffles every inbox (delivery order must not matter)."""

    def __init__(self, plan: Plan, regions: Regions | None, *,
                 rng: random.Random | None = None) -> None:
        """``regions`` None: a subclass places them when the first batch comes
        (``_place``), as ``ResidentEngine`` cuts them from the topology that batch draws."""
        self.plan, self.rng = plan, rng
        self._regions = regions
        self.ledger = BaseLedger.for_plan(plan)
        # with ``prog.report_supports``: one kept support per derived fact, fed by what each
        # batch changed (never a read of the regions), so ``explain`` runs no job
        self.supports: dict[FactKey, Support] = {}
        self.batches = 0  # batches applied
        self._number = 0  # batches started
        self.progress = bool(os.environ.get("NETRULES_PROGRESS"))  # a line per round

    @property
    def regions(self) -> Regions:
        if self._regions is None:
            raise EngineError("no regions yet: they are placed by the first batch")
        return self._regions

    @property
    def prog(self) -> Program:
        return self.regions.prog

    def _place(self, batch: list[tuple]) -> Regions:
        """The regions, when the constructor was given none (see ``__init__``)."""
        raise EngineError("this engine was built without regions")

    def apply(self, batch: Iterable[tuple[str, Fact]]) -> Delta:
        """One batch of signed base facts; returns the net change of every relation. A batch
        that fails leaves the ledger as it was (the regions keep what a finished round
        wrote; a gang job keeps nothing)."""
        t0 = time.perf_counter()
        batch = list(batch)
        if self.batches == 0:  # the program's own facts come with the first batch
            batch = [("+", f) for f in self.plan.program.facts] + batch
        checked = check_batch(self.plan, batch)
        if self._regions is None:
            self._regions = self._place(checked)
        saved = self.ledger.copy()
        appeared, vanished = self.ledger.apply(checked)
        prog = self.regions.prog
        stats = BatchStats(strategy="psn (regions)" if prog.per_fact else
                           "columnar (regions; counting stages per fact)"
                           if prog.fact_stages else "columnar (regions)")
        delta = Delta(stats=stats)
        gone = [(f.relation, f.args) for f in sorted(vanished, key=Fact.key)]
        new = [(f.relation, f.args) for f in sorted(appeared, key=Fact.key)]
        jobs = self.regions.jobs()
        self._number += 1  # never reused, even by a batch that failed part-way
        try:
            outcome = self.regions.batch(self._number, gone, new, self.rng)
        except BaseException:
            self.ledger = saved
            raise
        self.batches += 1
        stats.spark_jobs = self.regions.jobs() - jobs
        stats.rounds = len(outcome.trace)
        if self.progress:
            for i, (kind, ran, sent, secs) in enumerate(outcome.trace, 1):
                print(f"  round {i} {kind}: {ran} regions, {sent} messages out, {secs:.2f} s",
                      file=sys.stderr, flush=True)
        for key, sup in outcome.supports.items():
            if sup is None:
                self.supports.pop(key, None)
            else:
                self.supports[key] = sup
        for key, n in outcome.flips.items():  # every fact shown or hidden, netted
            if n > 0:
                delta.add(key)
            elif n < 0:
                delta.remove(key)
        lost = outcome.suspects - outcome.revived
        stats.overdeleted = len(lost) + outcome.n_suspects - outcome.n_revived
        stats.rederived = len(outcome.revived) + outcome.n_revived
        stats.added = sum(len(r) for r in delta.added.values())
        stats.removed = sum(len(r) for r in delta.removed.values())
        stats.pending_deletions = len(self.ledger.pending_deletions())
        stats.seconds = time.perf_counter() - t0
        return delta

    def load(self, facts: Iterable[Fact]) -> Delta:
        return self.apply([("+", f) for f in facts])

    def views(self) -> dict[str, list[Fact]]:
        """Every view (base relations too), read from the regions: for the CLI and tests,
        not the hot path."""
        out: dict[str, list[Fact]] = {}
        for rel, row in self.regions.facts() if self._regions is not None else ():
            out.setdefault(rel, []).append(Fact(rel, row, self.plan.locspec.get(rel, 0)))
        return {r: sorted(fs, key=Fact.key) for r, fs in out.items()}

    def explain(self, fact: Fact) -> Derivation | None:
        """Why ``fact`` holds, from the mirrored first supports (``Program.report_supports``
        must be on): a tree down to base facts. A fact of a counting stage (aggregate,
        negation) keeps counts, not supports: its region reports one rule instance deriving
        it (``counting.witness``); without one (its body at another node, COUNT/SUM) it
        comes back with its rule and no children, which the pipeline completes for
        aggregates with ``query``. None: no support kept and not a base or counted fact."""
        if self._regions is None:
            return None
        if not self.prog.report_supports:
            raise EngineError("this engine was built without report_supports; it cannot "
                              "explain facts")
        plan, rules, sups = self.plan, self.prog.rules, self.supports
        counted = self.prog.counted

        def build(key: FactKey, path: set[FactKey]) -> Derivation:
            f = Fact(key[0], key[1], plan.locspec.get(key[0], 0))
            sup = sups.get(key)
            if sup is None or key in path:  # a base fact, a counted one, or (never) a cycle
                rule = next((r for r in rules if r.head.relation == key[0]), None)
                label = None if rule is None else rule.label or str(rule.head)
                return Derivation(f, label if key[0] in counted else None)
            rule = rules[sup[0]]
            path.add(key)
            kids = [build(b, path) for b in sup[1]]
            path.discard(key)
            return Derivation(f, rule.label or str(rule.head), kids)

        key = (fact.relation, fact.args)
        if key not in self.supports and fact.relation not in counted and \
                fact.relation in plan.derived:
            return None
        return build(key, set())

    def query(self, atom: ast.Atom) -> list[Fact]:
        """Facts matching ``atom`` (``Engine.query``): in the one region holding its location
        when that is a constant, else in all; one Spark job on executors."""
        rel = atom.relation
        if rel not in self.plan.arity:
            raise EngineError(f"unknown relation {rel!r}; the program has "
                              f"{', '.join(sorted(self.plan.arity))}")
        if len(atom.args) != self.plan.arity[rel]:
            raise EngineError(f"{rel} takes {self.plan.arity[rel]} arguments, the query "
                              f"gives {len(atom.args)}")
        loc = self.plan.locspec.get(rel, 0)
        if self._regions is None:
            return []
        region = None
        if loc is not None and isinstance(atom.args[loc], ast.Const):
            probe = [None] * len(atom.args)
            probe[loc] = atom.args[loc].value  # type: ignore[union-attr]
            region = self.prog.part_of(rel, tuple(probe))
        elif loc is None:
            region = 0
        return [Fact(rel, row, loc) for row in self.regions.query(atom, region)]

    def pending_deletions(self) -> dict[Fact, int]:
        return self.ledger.pending_deletions()

    def state_ratio(self) -> float:
        """Stored support records per view fact, as ``Engine.state_ratio``."""
        if self._regions is None:
            return 0.0
        facts, records = self.regions.counts()
        return records / facts if facts else 0.0
