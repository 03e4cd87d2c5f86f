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
from collections.abc import Iterable
from typing import Any, Protocol

from netrules.engine.firing import FactKey
from netrules.engine.ledger import BaseLedger
from netrules.engine.regional.state import RegionState
from netrules.engine.regional.steps import Outbox, Program, insert, kill, rederive, settle
from netrules.engine.strategies.base import BatchStats, Delta, check_batch
from netrules.facts import Fact
from netrules.plan import Plan

__all__ = ["Regions", "LocalRegions", "RegionalEngine", "run_step"]


def run_step(state: RegionState, prog: Program, kind: str, batch: int, common: Any,
             mine: Any) -> Outbox:
    """One region's part of one round (the same code in this process and in executors)."""
    settle(state, batch)
    if kind == "kill":
        return kill(state, prog, common, mine or [])
    if kind == "rederive":
        return rederive(state, prog, common)
    if kind == "insert":
        msgs, seeds = mine or ([], [])
        return insert(state, prog, msgs, seeds)
    raise ValueError(f"unknown round kind {kind!r}")


class Regions(Protocol):
    """Where regions live. ``run`` performs one round: every region in ``targets`` runs
    ``run_step`` with the shared ``common`` payload and its own entry of ``per_region``."""

    parts: int
    prog: Program

    def run(self, kind: str, batch: int, targets: Iterable[int], common: Any,
            per_region: dict[int, Any]) -> dict[int, Outbox]: ...

    def facts(self) -> Iterable[FactKey]: ...

    def counts(self) -> tuple[int, int]: ...  # (view facts, stored support records)

    def jobs(self) -> int: ...  # Spark jobs run so far (0 in process)


class LocalRegions:
    """Regions in this process. With ``rebuild`` every round starts from a pickled snapshot
    plus the replayed log, as a worker that missed earlier rounds would (tests the log)."""

    def __init__(self, prog: Program, parts: int, *, rebuild: bool = False) -> None:
        self.prog, self.parts, self.rebuild = prog, parts, rebuild
        self.states = {g: RegionState(g, prog.k) for g in range(parts)}
        self._snap = {g: pickle.dumps(s) for g, s in self.states.items()} if rebuild else {}
        self._logs: dict[int, list[tuple]] = {g: [] for g in range(parts)}

    def run(self, kind: str, batch: int, targets: Iterable[int], common: Any,
            per_region: dict[int, Any]) -> dict[int, Outbox]:
        out = {}
        for g in targets:
            state = self.states[g]
            if self.rebuild:
                state = pickle.loads(self._snap[g])
                state.replay(self._logs[g])
                state.log = self._logs[g]
            out[g] = run_step(state, self.prog, kind, batch, common, per_region.get(g))
            if self.rebuild:
                state.log = None
                self.states[g] = state
                if len(self._logs[g]) > 50:  # compact now and then, as executors do
                    self._snap[g], self._logs[g] = pickle.dumps(state), []
        return out

    def facts(self) -> Iterable[FactKey]:
        for s in self.states.values():
            yield from s.visible()

    def counts(self) -> tuple[int, int]:
        return (sum(s.facts() for s in self.states.values()),
                sum(s.records() for s in self.states.values()))

    def jobs(self) -> int:
        return 0


class RegionalEngine:
    """Maintains a positive localized program region by region; see the module docstring.
    ``rng`` shuffles every inbox (delivery order must not matter)."""

    def __init__(self, plan: Plan, regions: Regions, *, rng: random.Random | None = None
                 ) -> None:
        self.plan, self.regions, self.rng = plan, regions, rng
        self.prog = regions.prog
        self.ledger = BaseLedger()
        self.batches = 0
        self.progress = bool(os.environ.get("NETRULES_PROGRESS"))  # a line per round

    def _part(self, key: FactKey) -> int:
        return self.prog.part_of(*key)

    def _round(self, stats: BatchStats, kind: str, targets: Iterable[int], common: Any,
               per_region: dict[int, Any]) -> dict[int, Outbox]:
        stats.rounds += 1
        before = self.regions.jobs()
        t0 = time.perf_counter()
        out = self.regions.run(kind, self.batches, sorted(set(targets)), common, per_region)
        stats.spark_jobs += self.regions.jobs() - before
        if self.progress:
            sent = sum(len(m) for o in out.values() for m in o.messages.values())
            print(f"  round {stats.rounds} {kind}: {len(out)} regions, {sent} messages out, "
                  f"{time.perf_counter() - t0:.2f} s", file=sys.stderr, flush=True)
        return out

    def apply(self, batch: Iterable[tuple[str, Fact]]) -> Delta:
        """One batch of signed base facts; returns the net change of every relation."""
        t0 = time.perf_counter()
        batch = list(batch)
        if self.batches == 0:  # the program's own facts come with the first batch
            batch = [("+", f) for f in self.plan.program.facts] + batch
        checked = check_batch(self.plan, batch)
        appeared, vanished = self.ledger.apply(checked)
        self.batches += 1
        stats = BatchStats(strategy="psn (regions)")
        delta = Delta(stats=stats)
        everyone = range(self.regions.parts)
        gone = [(f.relation, f.args) for f in sorted(vanished, key=Fact.key)]
        new = [(f.relation, f.args) for f in sorted(appeared, key=Fact.key)]
        for key in gone:
            delta.remove(key)
        for key in new:
            delta.add(key)
        inbox: dict[int, list] = {}
        suspects: set[FactKey] = set()
        if gone:
            here: dict[int, list[FactKey]] = {}
            for key in gone:
                here.setdefault(self._part(key), []).append(key)
            dead = gone
            per_region: dict[int, Any] = here
            while dead:
                outs = self._round(stats, "kill", everyone, dead, per_region)
                dead = [h for o in outs.values() for h in o.suspects]
                suspects.update(dead)
                per_region = {}
            if suspects:
                outs = self._round(stats, "rederive", everyone, sorted(suspects, key=repr), {})
                inbox = self._route(outs)
        seeds: dict[int, list[FactKey]] = {}
        for key in new:
            seeds.setdefault(self._part(key), []).append(key)
        revived: set[FactKey] = set()
        while inbox or seeds:
            targets = set(inbox) | set(seeds)
            per_region = {g: (inbox.get(g, []), seeds.get(g, [])) for g in targets}
            outs = self._round(stats, "insert", targets, None, per_region)
            for o in outs.values():
                revived.update(o.revived)
                for key in o.added:
                    delta.add(key)
            inbox, seeds = self._route(outs), {}
        lost = suspects - revived
        for key in lost:
            delta.remove(key)
        stats.overdeleted = len(lost)
        stats.rederived = len(revived)
        stats.added = sum(len(r) for r in delta.added.values())
        stats.removed = sum(len(r) for r in delta.removed.values())
        stats.pending_deletions = len(self.ledger.pending_deletions())
        stats.seconds = time.perf_counter() - t0
        return delta

    def _route(self, outs: dict[int, Outbox]) -> dict[int, list]:
        inbox: dict[int, list] = {}
        for o in outs.values():
            for dest, msgs in o.messages.items():
                inbox.setdefault(dest, []).extend(msgs)
        if self.rng is not None:
            for msgs in inbox.values():
                self.rng.shuffle(msgs)
        return inbox

    def load(self, facts: Iterable[Fact]) -> Delta:
        return self.apply([("+", f) for f in facts])

    def views(self) -> dict[str, list[Fact]]:
        """Every view (base relations too), read from the regions: for the CLI and tests,
        not the hot path."""
        out: dict[str, list[Fact]] = {}
        for rel, row in self.regions.facts():
            out.setdefault(rel, []).append(Fact(rel, row, self.plan.locspec.get(rel, 0)))
        return {r: sorted(fs, key=Fact.key) for r, fs in out.items()}

    def state_ratio(self) -> float:
        """Stored support records per view fact, as ``Engine.state_ratio``."""
        facts, records = self.regions.counts()
        return records / facts if facts else 0.0
