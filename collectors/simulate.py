"""Run a failure scenario on a topology and emit the link events a real collector would.

Why a simulator: the engine's incremental maintenance must be tested and benchmarked on
failures we can replay exactly (same seed -> same event list), on topologies far bigger than a
lab. The output is ordinary :class:`Event`s, so the engine cannot tell it from a capture.

State model: a directed link ``link(@S,D,C)`` is up iff neither endpoint is down and nothing
holds the link itself down. Scripted steps and random failures are separate *causes*, so a
random repair does not undo an operator's scripted failure (and vice versa); a node repair
brings back only links that nothing else holds down. Every raw observation goes through one
:class:`TransitionFilter`: the initial topology is every link ``+`` at time 0, a failure
observes ``-`` on each affected direction (failing a link that is already down is dropped and
counted there), a repair observes ``+`` on each direction that is now really up. Repairs
masked by another cause are counted as ``still_down``.
"""

from __future__ import annotations

import difflib
import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from collectors.scenario import RandomFailures, Scenario, Step, scenario_error
from netrules.eventlog.schema import Event, EventKind, TransitionFilter
from netrules.facts import Fact
from topologies.load import link_facts

__all__ = ["Simulation", "run", "simulate"]

_SCRIPT, _RANDOM = "script", "random"
_Pair = tuple[str, str]


@dataclass
class Simulation:
    """Result of a run: the events, what the transition filter dropped (plus ``still_down``
    for repairs masked by another failure) and the links up at the end."""

    events: list[Event]
    dropped: Counter[str]
    present: set[Fact] = field(default_factory=set)


@dataclass
class _Action:
    """One instant change; run ordered by time, then scripted before random (``prio``), then
    input order (``seq``); the sort is stable, so a flap's own down/up order is kept."""

    time: float
    prio: int
    seq: int
    op: str  # "-" fail or "+" recover
    target: str  # "link" | "node"
    items: tuple[Any, ...]  # directed pairs, or one node name
    cause: str
    kind: EventKind
    detail: dict[str, Any]


class _Net:
    """Topology lookups shared by validation and the run."""

    def __init__(self, g: nx.Graph) -> None:
        self.g = g
        self.cost = {(u, v): int(d.get("cost", 1)) for u, v, d in g.edges(data=True)}
        if not g.is_directed():
            self.cost.update({(v, u): c for (u, v), c in list(self.cost.items())})
        self.incident: dict[str, list[_Pair]] = {n: [] for n in g.nodes}
        for u, v in sorted(self.cost):
            self.incident[u].append((u, v))
            self.incident[v].append((u, v))

    def fact(self, pair: _Pair) -> Fact:
        return Fact("link", (pair[0], pair[1], self.cost[pair]))

    def node(self, name: str, step: Step | RandomFailures, source: str | None) -> str:
        if name not in self.incident:
            close = difflib.get_close_matches(name, [str(n) for n in self.incident], n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise scenario_error(step.where, f"unknown node {name!r}{hint}", source)
        return name

    def link(self, a: str, b: str, step: Step, source: str | None) -> tuple[_Pair, ...]:
        """Both directions of the link a-b that exist (one for a one-way DiGraph edge)."""
        self.node(a, step, source)
        self.node(b, step, source)
        pairs = tuple(p for p in ((a, b), (b, a)) if p in self.cost)
        if not pairs:
            raise scenario_error(step.where, f"no link {a} {b} in the topology", source)
        return pairs

    def cut(self, step: Step, source: str | None) -> tuple[_Pair, ...]:
        left = {self.node(n, step, source) for n in step.groups[0]}
        right = {self.node(n, step, source) for n in step.groups[1]}
        return tuple(p for p in sorted(self.cost)
                     if (p[0] in left and p[1] in right) or (p[0] in right and p[1] in left))

    def links(self) -> list[tuple[_Pair, ...]]:
        """Each physical link once, as the directed pairs it carries, in a stable order."""
        if self.g.is_directed():
            return [(p,) for p in sorted(self.cost)]
        seen = sorted({tuple(sorted(p)) for p in self.cost})
        return [((u, v), (v, u)) for u, v in seen]


def _step_actions(net: _Net, step: Step, index: int, source: str | None) -> list[_Action]:
    detail: dict[str, Any] = {"step": step.text}
    if step.where is not None:
        detail["where"] = f"{step.where.file}:{step.where.line}"

    def act(t: float, op: str, target: str, items: tuple[Any, ...], kind: EventKind,
            extra: dict[str, Any] | None = None) -> _Action:
        return _Action(t, 0, index, op, target, items, _SCRIPT, kind, {**detail, **(extra or {})})

    a = step.action
    if a in ("fail_link", "recover_link"):
        pairs = net.link(step.nodes[0], step.nodes[1], step, source)
        down = a == "fail_link"
        return [act(step.time, "-" if down else "+", "link", pairs,
                    EventKind.LINK_DOWN if down else EventKind.LINK_UP)]
    if a in ("fail_node", "recover_node"):
        node = net.node(step.nodes[0], step, source)
        down = a == "fail_node"
        return [act(step.time, "-" if down else "+", "node", (node,),
                    EventKind.NODE_DOWN if down else EventKind.NODE_UP)]
    if a == "flap":
        pairs = net.link(step.nodes[0], step.nodes[1], step, source)
        out = []
        for i in range(step.times):
            t = step.time + i * step.every
            out.append(act(t, "-", "link", pairs, EventKind.LINK_DOWN, {"flap": i + 1}))
            out.append(act(t + step.every / 2, "+", "link", pairs, EventKind.LINK_UP,
                           {"flap": i + 1}))
        return out
    if a in ("partition", "heal"):
        pairs = net.cut(step, source)
        down = a == "partition"
        return [act(step.time, "-" if down else "+", "link", pairs,
                    EventKind.LINK_DOWN if down else EventKind.LINK_UP)]
    raise scenario_error(step.where, f"unknown action {a!r}", source)


def _random_actions(net: _Net, spec: RandomFailures, index: int, seed: int) -> list[_Action]:
    """Alternating Exp(mtbf) up-times and Exp(mttr) repairs per link or node. Each element
    gets its own generator seeded from (seed, process, element), so adding a link to the
    topology does not reshuffle the failures of every other link."""
    if spec.on == "nodes":
        elements: list[tuple[str, tuple[Any, ...]]] = [(n, (n,)) for n in sorted(net.incident)]
        target, kinds = "node", (EventKind.NODE_DOWN, EventKind.NODE_UP)
    else:
        elements = [(f"{p[0][0]}|{p[0][1]}", p) for p in net.links()]
        target, kinds = "link", (EventKind.LINK_DOWN, EventKind.LINK_UP)
    out = []
    for key, items in elements:
        rng = random.Random(f"{seed}:{index}:{key}")
        t = spec.start
        while True:
            t += rng.expovariate(1.0 / spec.mtbf)
            if t >= spec.until:
                break
            fail_t = round(t, 6)
            t += rng.expovariate(1.0 / spec.mttr)
            for op, tt, kind in (("-", fail_t, kinds[0]), ("+", round(t, 6), kinds[1])):
                if tt < spec.until:
                    out.append(_Action(tt, 1, index, op, target, items, _RANDOM, kind,
                                       {"step": spec.text,
                                        "random": "fail" if op == "-" else "recover"}))
            if t >= spec.until:
                break
    return out


def run(g: nx.Graph, scenario: Scenario) -> Simulation:
    """Replay ``scenario`` on topology ``g``; identical input and seed give identical events.

    Names are validated first, so a bad step fails the run before any event is produced.
    """
    net = _Net(g)
    actions: list[_Action] = []
    for i, step in enumerate(scenario.steps):
        actions.extend(_step_actions(net, step, i, scenario.source))
    for j, spec in enumerate(scenario.random):
        actions.extend(_random_actions(net, spec, j, scenario.seed))
    ordered = sorted(actions, key=lambda a: (a.time, a.prio, a.seq))

    source = f"sim:{scenario.name}"
    filt = TransitionFilter()
    events: list[Event] = []
    link_causes: dict[_Pair, set[str]] = {p: set() for p in net.cost}
    node_causes: dict[str, set[str]] = {n: set() for n in net.incident}

    def emit(time: float, op: str, pair: _Pair, kind: EventKind, detail: dict[str, Any]) -> None:
        fact = net.fact(pair)
        if filt.accept(op, fact):
            events.append(Event(f"{source}:{len(events)}", time, source, kind, op, fact,
                                dict(detail)))

    def up(pair: _Pair) -> bool:
        return not link_causes[pair] and not node_causes[pair[0]] and not node_causes[pair[1]]

    for fact in link_facts(g):
        emit(0.0, "+", (fact.args[0], fact.args[1]), EventKind.LINK_UP,
             {"step": "initial topology"})

    for act in ordered:
        pairs: Iterable[_Pair]
        if act.target == "node":
            node = act.items[0]
            pairs = net.incident[node]
            (node_causes[node].add if act.op == "-" else node_causes[node].discard)(act.cause)
        else:
            pairs = act.items
            for p in pairs:
                (link_causes[p].add if act.op == "-" else link_causes[p].discard)(act.cause)
        for p in pairs:
            if act.op == "-":
                emit(act.time, "-", p, act.kind, act.detail)
            elif up(p):
                emit(act.time, "+", p, act.kind, act.detail)
            else:
                filt.dropped["still_down"] += 1

    return Simulation(events, Counter(filt.dropped), set(filt.present))


def simulate(g: nx.Graph, scenario: Scenario) -> list[Event]:
    """Just the events of :func:`run`."""
    return run(g, scenario).events
