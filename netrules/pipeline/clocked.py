"""The pipeline's engine for programs with event rules: ``Reactive`` on the event log's clock.

``BatchProcessor`` hands every engine a batch of stamped updates and wants back the batch's
net change. A program read as P2 reads it (``periodic``, ``delete``: ``netrules.lang.events``)
cannot be kept as views, so this adapter runs it on ``netrules.engine.reactive.Reactive``
instead: a batch's updates are applied instant by instant in event-time order, every timer,
expiry and discovery beacon due before an instant fires first, and the net change of all of
them is the batch's delta. Events are never read from a wall clock, so a replay of the same
log in the same batches fires the same events at the same times; ``checkpoint``/``resume``
carry the clock across a restart in the batch stats, beside the base-fact ledger.

What an update means: ``link`` (``link_relation``), when the program takes it as an event
fed from outside, goes through ``Discovery`` (state in, announcements out); other events fed
from outside occur on ``+`` (a ``-`` is counted as ``retracted`` and has no effect: an event
is not undone); everything else is a stamped base fact as for a view program. An update
stamped before the clock (delivered late) is applied at the clock, and counted as ``late``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from itertools import groupby
from typing import Any

from netrules.engine.ledger import BaseLedger
from netrules.engine.reactive import Reactive
from netrules.engine.strategies.base import Delta, Derivation
from netrules.facts import Fact
from netrules.lang import ast
from netrules.pipeline.discovery import Discovery
from netrules.plan import Plan

__all__ = ["ClockedEngine"]


class _NetDelta:
    """Sub-deltas folded into one net change (a row added then removed is no change)."""

    def __init__(self) -> None:
        self.delta = Delta()
        self.stats: Counter[str] = Counter()
        self.strategy = ""

    def fold(self, d: Delta) -> None:
        for rel, rows in d.removed.items():
            self._move(rel, rows, self.delta.added, self.delta.removed)
        for rel, rows in d.added.items():
            self._move(rel, rows, self.delta.removed, self.delta.added)
        st = d.stats
        self.stats.update({"rounds": st.rounds, "overdeleted": st.overdeleted,
                           "rederived": st.rederived, "ledger_duplicates": st.ledger_duplicates,
                           "ledger_superseded": st.ledger_superseded})
        self.stats["seconds"] += st.seconds  # type: ignore[assignment]
        self.strategy = st.strategy or self.strategy

    @staticmethod
    def _move(rel: str, rows: Iterable[tuple], undo: dict[str, set[tuple]],
              do: dict[str, set[tuple]]) -> None:
        cancel, keep = undo.get(rel, set()), do.setdefault(rel, set())
        for row in rows:
            if row in cancel:
                cancel.discard(row)
            else:
                keep.add(row)

    def finish(self, announced: str | None) -> Delta:
        """The net Delta; its counts leave out ``announced`` (link states, not facts)."""
        d = self.delta
        d.added = {r: rows for r, rows in d.added.items() if rows}
        d.removed = {r: rows for r, rows in d.removed.items() if rows}
        for name, v in self.stats.items():
            setattr(d.stats, name, v)
        d.stats.added = sum(len(v) for r, v in d.added.items() if r != announced)
        d.stats.removed = sum(len(v) for r, v in d.removed.items() if r != announced)
        d.stats.strategy = f"reactive/{self.strategy}" if self.strategy else "reactive"
        return d


class ClockedEngine:
    """``EngineLike`` over ``Reactive``: one batch of stamped updates -> its net Delta."""

    def __init__(self, plan: Plan, strategy: str = "auto", *, link_relation: str = "link",
                 beacon: float = 5.0) -> None:
        self.plan = plan
        self.accepts = plan.external  # events fed from outside the processor must not drop
        self.discovery = (Discovery(link_relation, beacon) if link_relation in self.accepts
                          else None)
        self.reactive = Reactive(plan, strategy, neighbours=(
            self.discovery.neighbours if self.discovery is not None else None))
        self.reactive.on_delta = self._fold
        self._net: _NetDelta | None = None
        self.counts: Counter[str] = Counter()  # late and retracted updates, this batch

    # -- EngineLike ------------------------------------------------------------------------
    @property
    def ledger(self) -> BaseLedger:
        return self.reactive.engine.state.ledger

    @property
    def now(self) -> float:
        return self.reactive.now

    def apply(self, batch: Iterable[tuple]) -> Delta:
        """Apply stamped updates at their event times, in time order; the net change."""
        self._begin()
        start = self.now

        def when(u: tuple) -> float:
            return float(u[2]) if len(u) > 2 and u[2] is not None else start

        for t, group in groupby(sorted(batch, key=when), key=when):
            ups = list(group)
            if t < self.now:
                self.counts["late"] += len(ups)
            self._instant(max(t, self.now), ups)
        return self._end()

    def advance(self, until: float) -> Delta:
        """Run the clock to ``until`` (timers, expiries, beacons); the net change."""
        self._begin()
        self._beacons_before(until, inclusive=True)
        self.reactive.advance(until)
        return self._end()

    def load(self, facts: Iterable[Fact]) -> Delta:
        """The stored tables on restart: straight into the views, firing nothing."""
        return self.reactive.engine.load(facts)

    def explain(self, fact: Fact) -> Derivation | None:
        return self.reactive.engine.explain(fact)

    def query(self, atom: ast.Atom) -> list[Fact]:
        return self.reactive.engine.query(atom)

    def pending_deletions(self) -> dict[Fact, int]:
        return self.reactive.engine.pending_deletions()

    # -- restart ---------------------------------------------------------------------------
    def checkpoint(self) -> dict[str, Any]:
        """What a restart needs besides the tables and their ledger (JSON-ready)."""
        return {"reactive": self.reactive.snapshot(),
                "discovery": None if self.discovery is None else self.discovery.snapshot(),
                **{k: v for k, v in sorted(self.counts.items()) if v}}

    def resume(self, snap: dict[str, Any]) -> None:
        self.reactive.restore(snap["reactive"])
        if self.discovery is not None and snap.get("discovery"):
            self.discovery.restore(snap["discovery"])

    def links(self) -> set[tuple]:
        """The live links ``(src, dst)`` discovery announces (empty without discovery)."""
        live = self.discovery.live() if self.discovery is not None else []
        return {(f.args[0], f.args[1]) for f in live if len(f.args) > 1}

    def settle(self, nodes: int) -> float:
        """Seconds after the last event by which the program's state has settled on
        ``nodes`` nodes: its longest table lifetime plus one more round of its slowest timer
        (delay, period, and spacing over the nodes)."""
        rounds = [t.delay + t.period + t.spacing * nodes for t in self.reactive.timers]
        return max(self.reactive.lifetimes.values(), default=0.0) + max(rounds, default=0.0)

    # -- one instant -----------------------------------------------------------------------
    def _instant(self, t: float, updates: list[tuple]) -> None:
        self._beacons_before(t, inclusive=False)
        occurred: dict[Fact, None] = {}
        base, links = [], []
        d = self.discovery
        for u in updates:
            rel = u[1].relation
            if d is not None and rel == d.relation:
                links.append(u)
            elif rel in self.accepts:
                if u[0] == "+":
                    occurred[u[1]] = None
                else:
                    self.counts["retracted"] += 1
            else:
                base.append(u)
        if d is not None:
            if links:
                self._link_changes(*d.update(links))
                occurred.update((u[1], None) for u in links
                                if u[0] == "+" and d.ledger.holds(u[1]))
            if d.is_beacon(t):
                occurred.update((f, None) for f in d.beacon(t))
        # occurrences of one instant in fact order: delivery order within it changes nothing
        self.reactive.apply([*base, *(("+", f) for f in sorted(occurred, key=Fact.key))], t)

    def _beacons_before(self, t: float, *, inclusive: bool) -> None:
        d = self.discovery
        if d is None or not d.live():  # nothing to announce: do not walk the instants
            return
        for b in d.beacons(self.now, t):
            if b < t or inclusive:
                self.reactive.apply([("+", f) for f in d.beacon(b)], b)

    def _link_changes(self, came: set[Fact], went: set[Fact]) -> None:
        """The source's link states, as the pipeline records them (not stored as facts)."""
        if self._net is not None:
            rel = self.discovery.relation  # type: ignore[union-attr]
            self._net.fold(Delta({rel: {f.args for f in came}} if came else {},
                                 {rel: {f.args for f in went}} if went else {}))

    # -- the batch's net change -------------------------------------------------------------
    def _begin(self) -> None:
        self._net = _NetDelta()
        self.counts = Counter()

    def _fold(self, d: Delta) -> None:
        if self._net is not None:
            self._net.fold(d)

    def _end(self) -> Delta:
        assert self._net is not None
        announced = self.discovery.relation if self.discovery is not None else None
        out, self._net = self._net.finish(announced), None
        return out


def eval_batches(plan: Plan, facts: list[Fact], batches: list[list[tuple]] | None, *,
                 strategy: str = "auto", until: float | None = None, beacon: float = 5.0
                 ) -> list[dict[str, list[Fact]]]:
    """``netrules eval`` for a program with event rules: ``facts`` at time 0, each update at
    its place in the updates file (``runner.stamped``); the tables after the facts and after
    each batch, the last of them after running the clock on to ``until``."""
    from netrules.engine.runner import stamped

    engine = ClockedEngine(plan, strategy, beacon=beacon)
    steps = [[("+", f, 0.0, i) for i, f in enumerate(facts)], *stamped(batches or [])]
    out = []
    for i, step in enumerate(steps):
        engine.apply(step)
        if until is not None and i == len(steps) - 1:
            engine.advance(until)
        out.append(engine.reactive.views())
    return out
