"""Event rules on an event-time clock, writing into the incrementally maintained views.

P2 and RapidNet run a rule with an event in its body (``netrules.lang.events``) as
event-condition-action: when the event occurs, its body is joined with the tables as they are
and the head is written, or removed for ``delete``, where it stays (subject to key replacement
and lifetime) without being maintained by support. Here such heads become stamped base-fact
updates of the ``Engine`` (last-writer-wins registers, ``engine.ledger``), so the views built
on them stay exact and every strategy maintains them as usual.

The clock is the caller's: the simulator's in simulation, the event log's event time in a
replay, so the same inputs give the same firings. ``advance(t)`` runs every instant up to
``t`` in time order; at each, soft state whose lifetime ran out expires first, then the due
``periodic`` timers fire, then events cascade first-in first-out: an event's rules all read the
tables as they were when it occurred, and their writes are applied together. A write that
inserts a tuple into a table, or rewrites one unchanged (a refresh, as RapidNet's generated
``...Ref`` handlers see it), is itself an occurrence for the rules a table delta fires
(``Plan.triggered``), queued after the events already waiting. Events fed from outside (P2's
reading: RapidNet's ``link``, raised by its neighbour discovery) arrive through ``apply``.
Ties in time go to the smaller fact. ``snapshot``/``restore`` round-trip the clock's own state
(the tables are the engine's, restored from the store), so a restarted pipeline fires the same
events at the same times as an uninterrupted one.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from netrules.engine.engine import Engine
from netrules.engine.event_heads import Neighbours, event_heads
from netrules.engine.strategies.base import Delta
from netrules.engine.timers import Timer, timers_of
from netrules.errors import EngineError
from netrules.facts import Fact, Value, sort_key, value_from_json, value_to_json
from netrules.lang import ast
from netrules.lang.builtins import set_time
from netrules.lang.events import PERIODIC
from netrules.plan import Plan

__all__ = ["Reactive"]

MAX_EVENTS_PER_INSTANT = 100_000  # a cascade that does not settle is an error, not a hang


class Reactive:
    """A program with event rules: views kept by ``Engine``, event rules fired on the clock."""

    def __init__(self, plan: Plan, strategy: str = "auto", *,
                 nodes: Sequence[object] | None = None,
                 neighbours: Neighbours | None = None) -> None:
        """``nodes``: where ``periodic`` fires, in spacing order (the simulator's nodes);
        default: every location of a present fact or an event that occurred, by
        ``sort_key``, at each firing. ``neighbours(n)``: the nodes a ``@Broadcast`` from
        ``n`` reaches (the radio range); default: every other node (a shared LAN)."""
        self.plan = plan
        self.neighbours: Neighbours = neighbours or self._others
        self._seen: set[Value] = set()
        self.engine = Engine(replace(plan, reactive=()), strategy)
        self.nodes = tuple(nodes) if nodes is not None else None
        self.now = 0.0
        self.timers: list[Timer] = timers_of(plan.reactive)
        self.tables = {r.head.relation for r in plan.reactive} - plan.events
        self.lifetimes = {m.name: m.lifetime for m in plan.program.materialized
                          if m.name in self.tables and m.lifetime != float("inf")}
        self._expiry: dict[tuple, tuple[float, Fact]] = {}
        # what each occurrence fires: an event's rules, and a table's for its deltas
        self._by_event: dict[str, list[tuple[ast.Rule, int]]] = {}
        for r in plan.reactive:
            for i, a in enumerate(r.atoms()):
                if a.relation in plan.events or r in plan.triggered:
                    self._by_event.setdefault(a.relation, []).append((r, i))
        self._triggers = {a.relation for r in plan.triggered for a in r.atoms()}
        self._seq = 0
        self._eid = 0
        self._timers_done = float("-inf")  # the last instant whose timers fired
        self.fired: Counter[str] = Counter()  # occurrences by relation (tables: their deltas)
        self.on_delta: Callable[[Delta], Any] | None = None  # each write's net change

    # -- the clock ------------------------------------------------------------------------
    def apply(self, batch: Iterable[tuple], time: float) -> None:
        """Run every instant before ``time``, then apply ``batch`` (signed base facts, and
        ``+`` occurrences of events fed from outside) at ``time`` and let the events it
        causes cascade."""
        if time < self.now:
            raise EngineError(f"updates at time {time} arrive after time {self.now} ran; "
                              "the event-time clock does not go back")
        self.advance(time, inclusive=False)
        items, occurred = [], []
        for u in batch:
            if u[1].relation not in self.plan.events:
                items.append((*u[:2], time, self._next_seq()) if len(u) < 3 else u)
            elif u[0] == "+":
                occurred.append(u[1])
                self._seen.add(u[1].args[u[1].loc or 0])
            else:
                raise EngineError(f"{u[1]} is an event: it occurs ('+') and cannot be "
                                  "retracted ('-'); a link that goes down stops being "
                                  "announced")
        self._instant(time, items, occurred)

    def advance(self, until: float, *, inclusive: bool = True) -> None:
        """Run, in time order, every expiry and timer firing up to ``until``."""
        while (t := self._next_due()) is not None and (t < until or inclusive and t == until):
            self._instant(t, [])
        self.now = max(self.now, until)

    def views(self) -> dict[str, list[Fact]]:
        return self.engine.views()

    # -- one instant ----------------------------------------------------------------------
    def _instant(self, t: float, updates: list[tuple], occurred: Sequence[Fact] = ()
                 ) -> None:
        self.now = t
        set_time(t)
        gone = sorted((k for k, (when, _) in self._expiry.items() if when <= t), key=sort_key)
        for k in gone:
            _, f = self._expiry.pop(k)
            updates.append(("-", f, t, self._next_seq()))
        queue: deque[Fact] = deque(self._write(updates))
        queue.extend(occurred)
        if t <= self._timers_done:
            self._cascade(t, queue)
            return
        self._timers_done = t
        for timer in self.timers:
            for i, node in enumerate(self._nodes()):
                due = timer.next_after(i, t, inclusive=True)
                if due is not None and due[0] == t:
                    self._eid += 1
                    queue.append(Fact(PERIODIC, (node, self._eid, *timer.spec), 0))
        self._cascade(t, queue)

    def _cascade(self, t: float, queue: deque[Fact]) -> None:
        n = 0
        while queue:
            ev = queue.popleft()
            n += 1
            if n > MAX_EVENTS_PER_INSTANT:
                raise EngineError(f"events at time {t} do not settle after {n - 1} "
                                  f"occurrences (last: {ev})")
            self.fired[ev.relation] += 1
            writes: list[tuple] = []
            for rule, i in self._by_event.get(ev.relation, ()):
                heads = event_heads(rule, i, ev, self.engine.state.db, self.neighbours)
                for head in heads:
                    if head.relation in self.plan.events:
                        queue.append(head)
                    elif rule.delete:
                        writes += [("-", f, t, self._next_seq()) for f in self._stored(head)]
                    else:
                        writes.append(("+", head, t, self._next_seq()))
            queue.extend(self._write(writes))

    def _stored(self, head: Fact) -> list[Fact]:
        """What ``delete head`` removes: the stored fact with the head's key (all arguments
        when the table declares none)."""
        pos = self.engine.state.ledger.keys.get(head.relation, tuple(range(len(head.args))))
        rows = self.engine.state.db.lookup(head.relation, {p: head.args[p] for p in pos})
        return [Fact(head.relation, r, head.loc) for r in rows]

    def _write(self, updates: list[tuple]) -> list[Fact]:
        """Apply ``updates``; return the table occurrences they cause: each tuple inserted
        into, or written unchanged into, a table a rule is triggered by, in table order."""
        if not updates:
            return []
        db = self.engine.state.db
        refreshed = {(f.relation, f.args): f for sign, f, *_ in updates
                     if sign == "+" and f.relation in self._triggers
                     and (f.relation, f.args) in db}
        for sign, f, t, _ in updates:
            reg = self._reg(f)
            if sign == "+" and f.relation in self.lifetimes:
                self._expiry[reg] = (t + self.lifetimes[f.relation], f)
            elif sign == "-" and reg in self._expiry and self._expiry[reg][1] == f:
                del self._expiry[reg]
        delta = self.engine.apply(updates)
        if self.on_delta is not None:
            self.on_delta(delta)
        out = {k: f for k, f in refreshed.items() if k in db}
        for rel in self._triggers & delta.added.keys():
            loc = self.plan.locspec.get(rel, 0)
            out.update({(rel, row): Fact(rel, row, loc) for row in delta.added[rel]})
        return sorted(out.values(), key=Fact.key)

    # -- restart --------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The clock's state as JSON-ready data (the tables are the engine's to restore)."""
        expiry = sorted(self._expiry.values(), key=lambda x: (x[0], x[1].key()))
        return {"now": self.now, "seq": self._seq, "eid": self._eid,
                "timers_done": None if self._timers_done == float("-inf") else
                self._timers_done,
                "expiry": [[when, f.to_json()] for when, f in expiry],
                "seen": [value_to_json(v) for v in sorted(self._seen, key=sort_key)],
                "fired": dict(sorted(self.fired.items()))}

    def restore(self, snap: dict[str, Any]) -> None:
        """Replace the clock's state by a ``snapshot``'s."""
        self.now = float(snap["now"])
        self._seq, self._eid = int(snap["seq"]), int(snap["eid"])
        done = snap.get("timers_done")
        self._timers_done = float("-inf") if done is None else float(done)
        self._expiry = {}
        for when, fj in snap.get("expiry", []):
            f = Fact.from_json(fj)
            self._expiry[self._reg(f)] = (float(when), f)
        self._seen = {value_from_json(v) for v in snap.get("seen", [])}
        self.fired = Counter(snap.get("fired", {}))

    # -- helpers --------------------------------------------------------------------------
    def _reg(self, f: Fact) -> tuple:
        pos = self.engine.state.ledger.keys.get(f.relation)
        return (f.relation, f.args if pos is None else tuple(f.args[p] for p in pos))

    def _nodes(self) -> tuple[object, ...]:
        if self.nodes is not None:
            return self.nodes
        locs = {f.args[f.loc] for fs in self.engine.views().values() for f in fs
                if f.loc is not None and f.loc < len(f.args)} | self._seen
        return tuple(sorted(locs, key=sort_key))

    def _others(self, node: Value) -> tuple[object, ...]:
        return tuple(n for n in self._nodes() if n != node)

    def _next_due(self) -> float | None:
        times = [when for when, _ in self._expiry.values() if when > self.now]
        nodes = self._nodes()
        for timer in self.timers:
            for i in range(len(nodes)):
                due = timer.next_after(i, self.now)
                if due is not None:
                    times.append(due[0])
        return min(times, default=None)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq
