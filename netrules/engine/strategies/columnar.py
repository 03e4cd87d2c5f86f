"""The columnar engine behind the strategy interface: facts as integer columns, PSN with ranks
and K supports a set at a time (``netrules/engine/columnar/``).

Programs whose strata it does not maintain yet (aggregates, negation, recursion through an
aggregate) are handed whole to ``psn``, and the batch statistics say so (``strategy``); a
program is never split between the two representations.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from netrules.engine.columnar.base_ids import BaseIds
from netrules.engine.columnar.psn import ColumnarProgram, unsupported
from netrules.engine.ledger_columns import ColumnLedger
from netrules.engine.strategies import psn
from netrules.engine.strategies.base import (
    BatchStats,
    Delta,
    Derivation,
    State,
    check_batch,
)
from netrules.errors import EngineError
from netrules.facts import Fact, Value
from netrules.plan import Plan

__all__ = ["name", "materialize", "apply", "explain", "supported", "owns", "renew",
           "ColumnDelta"]

name = "columnar"


def supported(plan: Plan) -> bool:
    return unsupported(plan) is None


def owns(state: State) -> bool:
    """Is ``state`` held in columns (rather than handed to psn)?"""
    return "program" in state.extra


class ColumnDelta(Delta):
    """A Delta whose rows stay as id columns until someone reads ``added``/``removed`` as
    tuples; the pipeline reads ``columns`` instead and never builds a tuple per fact."""

    def __init__(self, prog: ColumnarProgram,
                 changes: dict[str, tuple[np.ndarray, np.ndarray]], stats: BatchStats) -> None:
        self.prog, self.columns, self.stats = prog, changes, stats
        # the row arrays as of this batch: a later batch may compact a relation
        # (``Relation.compact``) and renumber its rows, but never writes a row it already
        # has into an array, so these keep answering for this delta's rows
        self._cols = {r: prog.rels[r].cols for r in changes}
        self._added = _Decoded(self, 0)
        self._removed = _Decoded(self, 1)

    def ids(self, relation: str, which: int) -> np.ndarray:
        """The id rows added (``which`` 0) or removed (1) in ``relation``."""
        rows = self.columns[relation][which]
        return self._cols[relation][rows].astype(np.int64)

    @property  # type: ignore[override]
    def added(self) -> Mapping[str, set[tuple]]:
        return self._added

    @property  # type: ignore[override]
    def removed(self) -> Mapping[str, set[tuple]]:
        return self._removed

    def add(self, key: Any) -> None:  # pragma: no cover - built whole, never grown
        raise TypeError("a ColumnDelta is built whole")

    remove = add


class _Decoded(Mapping[str, set[tuple]]):
    """One side of a ColumnDelta as relation -> set of tuples, each relation decoded the
    first time it is read (the link states read one relation of millions of changes)."""

    def __init__(self, delta: ColumnDelta, which: int) -> None:
        self.delta, self.which = delta, which
        self.names = [r for r, rows in delta.columns.items() if len(rows[which])]
        self.cache: dict[str, set[tuple]] = {}

    def __getitem__(self, rel: str) -> set[tuple]:
        if rel not in self.cache:
            if rel not in self.names:
                raise KeyError(rel)
            ids = self.delta.ids(rel, self.which)
            self.cache[rel] = set(self.delta.prog.values.decode_rows(ids))
        return self.cache[rel]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


class ColumnarDB:
    """The read side of ``State.db`` over the columns: what the façade and ``query`` use."""

    def __init__(self, prog: ColumnarProgram) -> None:
        self.prog = prog

    @property
    def rel(self) -> dict[str, set[tuple]]:
        return {name: set(self.prog.facts(name)) for name, r in self.prog.rels.items()
                if r.count}

    def __contains__(self, item: tuple[str, tuple]) -> bool:
        return self.prog.contains(item[0], tuple(item[1]))

    def has(self, relation: str) -> bool:
        r = self.prog.rels.get(relation)
        return bool(r and r.count)

    def facts(self, relation: str, locspec: int | None = 0) -> list[Fact]:
        if relation not in self.prog.rels:
            return []
        return sorted((Fact(relation, row, locspec) for row in self.prog.facts(relation)),
                      key=Fact.key)

    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterator[tuple]:
        rel = self.prog.rels.get(relation)
        if rel is None or not rel.count:
            return iter(())
        pos = tuple(sorted(bound))
        if not pos:
            return iter(self.prog.facts(relation))
        ids = [self.prog.values.lookup(bound[p]) for p in pos]
        if any(i is None for i in ids):
            return iter(())
        _, rows = rel.probe(pos, [np.array([i], dtype=np.int64) for i in ids])
        rows = rows[rel.alive[rows]]
        return iter(self.prog.decode(relation, rows))

    def probe(self, relation: str, pos: tuple[int, ...], key: tuple) -> Iterator[tuple]:
        return self.lookup(relation, dict(zip(pos, key, strict=True)))


class ColumnarState(State):
    def views(self) -> dict[str, list[Fact]]:
        prog: ColumnarProgram = self.extra["program"]
        return {r: self.db.facts(r, self.plan.locspec.get(r, 0))
                for r in sorted(prog.rels) if prog.rels[r].count}

    def fact_count(self) -> int:
        return self.extra["program"].fact_count()

    def stored_records(self) -> int:
        return int(self.extra["program"].supports.count)


def materialize(plan: Plan, facts: Iterable[Fact] = (), *, rng: random.Random | None = None,
                overrides: Mapping[str, str] | None = None) -> State:
    if overrides or not supported(plan):
        state = psn.materialize(plan, facts, rng=rng, overrides=overrides)
        state.extra["fallback"] = unsupported(plan) or "per-view overrides"
        return state
    prog = ColumnarProgram(plan)
    state = ColumnarState(plan, ColumnarDB(prog), ColumnLedger(), name, rng,
                          {"program": prog})  # type: ignore[arg-type]
    start = [("+", f) for f in [*plan.program.facts, *facts]]
    if start:
        apply(state, start)
    return state


def _ledger(state: State) -> ColumnLedger:
    """The state's ledger as a ``ColumnLedger`` (a state made before it had one converts
    once), with the table of its facts' id rows."""
    led = state.ledger
    if not isinstance(led, ColumnLedger):
        led = state.ledger = ColumnLedger.of(led)
    return led


def _base_ids(state: State, led: ColumnLedger) -> BaseIds:
    ids = state.extra.get("base_ids")
    if not isinstance(ids, BaseIds) or ids.numbers is not led.numbers:
        ids = state.extra["base_ids"] = BaseIds(led.numbers)
    return ids


#: The program is made again from the base facts it holds (``renew``) once its
#: dictionaries (list cells, key prefixes) hold more than RENEW_GROWTH times the entries they
#: held after it was last made, and RENEW_AT more.
RENEW_GROWTH = 2.0
RENEW_AT = 1 << 16


def _dictionaries(prog: ColumnarProgram) -> int:
    return len(prog.values) + len(prog.pairs)


def renew(state: State) -> None:
    """Make the state's program again from the base facts it holds, the ledger kept.

    Why: the dictionaries are append-only (a value's id never changes, so no row need be
    renamed when one goes), so a view whose values keep changing leaves every value it ever
    held behind: americas best routes, 150 link flaps after the load, 304 MB of path cells
    against 76 MB, key prefixes doubled. Compaction (``columnar/compaction.py``) bounds the
    rows; this bounds the dictionaries, once they have doubled: a materialisation (americas
    best routes: about 4 s) every doubling, from what the program holds, so the views, and
    every delta after, are what they were. Which equally good supports facts keep may change,
    and ranks are made afresh; the store's derivations name supports that still hold."""
    old: ColumnarProgram = state.extra["program"]
    present = _present(state)
    if present is None:
        old.built = _dictionaries(old)  # (cannot happen: not again before they double)
        return
    prog = ColumnarProgram(state.plan, old.k)
    for tuned in ("recompute", "copy_path", "compact_at", "compact_share", "renew_at",
                  "renew_growth"):
        if tuned in old.__dict__:
            setattr(prog, tuned, old.__dict__[tuned])
    stats = {**old.stats, "renewals": old.stats.get("renewals", 0) + 1}
    # the old program let go before the new one is filled, so the two are never whole at
    # once (unless a caller still holds a delta of it): it is a cycle (its iterated stages
    # name it, as a delta's decoded sides name the delta), which only the collector frees
    del old
    ids = BaseIds(_ledger(state).numbers)
    state.extra["program"], state.extra["base_ids"], state.db = prog, ids, ColumnarDB(prog)
    gc.collect()
    prog.apply_rows(ids.rows(prog, present, add=True), {})
    prog.stats = stats
    prog.built = _dictionaries(prog)


def _present(state: State) -> np.ndarray | None:
    """Numbers of the base facts the state's program holds, or None if they are not all
    found (a ledger pickled before it kept rows finds them by their columns first)."""
    prog: ColumnarProgram = state.extra["program"]
    led = _ledger(state)
    ids = _base_ids(state, led)
    try:
        ids.rows(prog, np.arange(len(led.numbers), dtype=np.int64), add=False)
    except EngineError:  # (facts of one relation with two widths: refused when they came)
        return None
    present = ids.present(prog)
    held = sum(r.count for n, r in prog.rels.items() if n not in state.plan.derived)
    return present if len(present) == held else None


def _renew_due(prog: ColumnarProgram) -> bool:
    built = prog.__dict__.get("built")  # (set after the first batch)
    if built is None:
        return False
    growth = prog.__dict__.get("renew_growth", RENEW_GROWTH)
    return _dictionaries(prog) > max(built * growth,
                                     built + prog.__dict__.get("renew_at", RENEW_AT))


def apply(state: State, batch: list[tuple[str, Fact]]) -> Delta:
    if not owns(state):
        return psn.apply(state, batch)
    t0 = time.perf_counter()
    if _renew_due(state.extra["program"]):
        renew(state)
    prog: ColumnarProgram = state.extra["program"]
    led = _ledger(state)
    batch = batch if isinstance(batch, list) else list(batch)
    # plain updates of base facts seen before: no check (each was checked when first
    # seen; ``known`` checks the signs) and the registers written as arrays
    got = None if led.lifetimes else led.known(batch)
    if got is None:
        batch = check_batch(state.plan, batch)
        if not led.lifetimes and all(len(u) == 2 for u in batch):  # new facts, numbered now
            for _, f in batch:
                led.number(f)
            got = led.known(batch)
    if got is not None:
        appeared, vanished = led.plain(*got)
    else:  # timed updates or soft state: the ledger's general path
        facts_in, facts_out = led.apply(batch)
        appeared = np.array([led.number(f) for f in facts_in], dtype=np.int64)
        vanished = np.array([led.number(f) for f in facts_out], dtype=np.int64)
    before = dict(prog.stats)
    ids = _base_ids(state, led)
    changes = prog.apply_rows(ids.rows(prog, appeared, add=True),
                              ids.rows(prog, vanished, add=False))
    stats = BatchStats(strategy=name)
    stats.rounds = prog.stats["rounds"] - before["rounds"]
    stats.overdeleted = prog.stats["suspects"] - before["suspects"]
    stats.rederived = prog.stats["rederived"] - before["rederived"]
    stats.added = int(sum(len(a) for a, _ in changes.values()))
    stats.removed = int(sum(len(r) for _, r in changes.values()))
    stats.pending_deletions = led.pending_count()
    stats.seconds = time.perf_counter() - t0
    if "built" not in prog.__dict__:  # the dictionaries as the program's first batch left them
        prog.built = _dictionaries(prog)
    return ColumnDelta(prog, changes, stats)


def explain(state: State, fact: Fact) -> Derivation | None:
    """The derivation tree of kept supports; they are well-founded, so it ends at base
    facts."""
    if not owns(state):
        return psn.explain(state, fact)
    prog: ColumnarProgram = state.extra["program"]
    plan = state.plan
    aggregated = {r.head.relation for r in plan.rules if r.head.aggregate()}

    def build(rel: str, args: tuple, depth: int) -> Derivation:
        f = Fact(rel, args, plan.locspec.get(rel, 0))
        if rel not in plan.derived:
            return Derivation(f)
        if rel in aggregated:  # no supports: the store's witness comes from the pipeline
            return Derivation(f, "aggregate")
        sup = prog.support_of(rel, args)
        if sup is None or depth > 10_000:
            return Derivation(f, "?")
        label, body = sup
        return Derivation(f, label, [build(r, a, depth + 1) for r, a in body])

    if not prog.contains(fact.relation, fact.args):
        return None
    return build(fact.relation, fact.args, 0)
