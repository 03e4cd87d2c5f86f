"""The read side: questions asked of the store in NDlog, answered from the store alone.

The CLI's read commands and the dashboard both ask through this module (one parser, one error
class), so a query means the same thing in a terminal and in a browser.

``query`` matches an atom against a stored view, ``why`` follows stored supports down to base
facts, ``traceroute`` walks each hop's own route, ``reach_diff`` replays the change log
between two batches. Every name a user typed is checked against what the store knows, and an
unknown one is an error that names it and what exists instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from netrules import settings
from netrules.errors import NetrulesError
from netrules.eventlog import EventLog
from netrules.facts import Fact, Value, format_value, value_to_json
from netrules.lang import ast, parse_program
from netrules.plan import Plan, plan_program
from netrules.store.base import Store

__all__ = ["QueryError", "stored_plan", "check_relation_known", "check_node", "known_nodes",
           "query", "WhyNode", "why", "Hop", "Trace", "traceroute", "reach_diff",
           "batch_of_event"]


#: The relations a read names unless told otherwise: the pipeline's, from settings.py.
LINK: str = settings.get("link_relation").default
ROUTE: str = settings.get("route_relation").default
REACH: str = settings.get("reach_relation").default


class QueryError(NetrulesError):
    """A read command named something the store does not have (relation, node, batch)."""

    code = "QUERY"


def stored_plan(store: Store) -> Plan | None:
    """The plan of the program whose views the store holds (None for an empty store)."""
    text = store.meta().get("program_text")
    if not text:
        return None
    return plan_program(parse_program(text, store.meta().get("program_name", "<program>")))


def _hint(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def _relations(store: Store, plan: Plan | None) -> dict[str, int | None]:
    rels: dict[str, int | None] = {r: None for r in store.relations()}
    if plan is not None:
        rels.update({r: n for r, n in plan.arity.items() if r not in plan.aux})
    return rels


def check_relation_known(store: Store, relation: str, plan: Plan | None = None) -> None:
    rels = _relations(store, plan if plan is not None else stored_plan(store))
    if relation not in rels:
        shown = ", ".join(sorted(rels)) or "none: the store is empty"
        raise QueryError(f"unknown relation {relation!r}{_hint(relation, rels)}; the store "
                         f"has {shown}", code="UNKNOWN_RELATION")


def known_nodes(store: Store, link_relation: str = LINK) -> set[str]:
    """Topology nodes, or (no topology stored) every endpoint of a stored link fact."""
    nodes, _ = store.topology()
    if nodes:
        return {n.name for n in nodes}
    out: set[str] = set()
    for f in store.read_view(link_relation) if link_relation in store.relations() else ():
        out.update(str(a) for a in f.args[:2])
    return out


def check_node(store: Store, node: str, link_relation: str = LINK) -> None:
    nodes = known_nodes(store, link_relation)
    if nodes and node not in nodes:
        raise QueryError(f"unknown node {node!r}{_hint(node, nodes)}; the network has "
                         f"{len(nodes)} nodes", code="UNKNOWN_NODE")


def _pattern(atom: ast.Atom) -> list[tuple[str, Any]]:
    from netrules.lang.builtins import evaluate

    out: list[tuple[str, Any]] = []
    for t in atom.args:
        if isinstance(t, ast.Var):
            out.append(("any", None) if t.name == "_" else ("var", t.name))
            continue
        if ast.variables_of(t):
            raise QueryError(f"query argument {t} mixes variables into a value; use a "
                             f"constant or a variable", code="QUERY_ARGUMENT")
        out.append(("const", evaluate(t, {})))
    return out


def query(store: Store, atom: ast.Atom, link_relation: str = LINK) -> list[Fact]:
    """Stored facts matching ``atom`` (constants filter, variables range, a repeated
    variable must take one value). An empty answer that names an unknown node is an error."""
    plan = stored_plan(store)
    check_relation_known(store, atom.relation, plan)
    rels = _relations(store, plan)
    want = rels.get(atom.relation)
    if want is not None and want != len(atom.args):
        raise QueryError(f"{atom.relation} takes {want} arguments, the query gives "
                         f"{len(atom.args)}", code="ARITY")
    pat = _pattern(atom)
    where = {i: v for i, (kind, v) in enumerate(pat)
             if kind == "const" and isinstance(v, str | int) and not isinstance(v, bool)}
    out = []
    for f in store.read_view(atom.relation, where=where or None):
        if len(f.args) != len(pat):
            continue
        env: dict[str, Value] = {}
        ok = True
        for (kind, v), a in zip(pat, f.args, strict=True):
            if (kind == "const" and a != v) or (kind == "var" and env.setdefault(v, a) != a):
                ok = False
                break
        if ok:
            out.append(f)
    if not out:
        nodes = known_nodes(store, link_relation)
        for kind, v in pat:
            if kind == "const" and isinstance(v, str) and nodes and v not in nodes:
                raise QueryError(f"unknown node {v!r}{_hint(v, nodes)} in "
                                 f"{atom}; the network has {len(nodes)} nodes",
                                 code="UNKNOWN_NODE")
    return out


@dataclass
class WhyNode:
    """One fact of a derivation tree read back from the store."""

    fact: Fact
    rule: str | None = None  # None: a base fact
    children: list[WhyNode] = field(default_factory=list)
    note: str | None = None  # "see above", "no stored derivation", "does not hold"

    def render(self, indent: str = "") -> str:
        how = f"[{self.rule}]" if self.rule else ("[base fact]" if self.note is None else "")
        tags = " ".join(x for x in (how, f"({self.note})" if self.note else "") if x)
        lines = [f"{indent}{self.fact}  {tags}"]
        lines += [c.render(indent + "  ") for c in self.children]
        return "\n".join(lines)

    def leaves(self) -> list[Fact]:
        """Facts at the bottom of the expanded tree (references to a fact shown above are
        not leaves: their subtree is printed where they first appear)."""
        if self.note == "see above":
            return []
        if not self.children:
            return [self.fact]
        return [x for c in self.children for x in c.leaves()]

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children), default=0)

    def to_json(self) -> dict[str, Any]:
        return {"fact": str(self.fact), "relation": self.fact.relation,
                "args": [value_to_json(a) for a in self.fact.args], "rule": self.rule,
                "note": self.note, "children": [c.to_json() for c in self.children]}


def why(store: Store, fact: Fact, max_nodes: int = 5_000) -> WhyNode:
    """The stored derivation of ``fact`` down to base facts.

    Each derived fact is expanded once; a later occurrence says "see above". A support whose
    body no longer holds is passed over for another kept one.
    """
    plan = stored_plan(store)
    check_relation_known(store, fact.relation, plan)
    base = plan.base if plan is not None else frozenset()
    if not store.contains(fact):
        raise QueryError(f"{fact} does not hold in the store (query it with a variable to "
                         f"see what does)", code="NOT_A_FACT")
    shown: set[Fact] = set()

    def build(f: Fact, path: frozenset[Fact]) -> WhyNode:
        if f.relation in base:
            return WhyNode(f, None, [], None if store.contains(f) else "does not hold")
        if f in path:
            return WhyNode(f, None, [], "cycle")
        if f in shown or len(shown) >= max_nodes:
            return WhyNode(f, None, [], "see above")
        shown.add(f)
        for rule, body in store.derivations(f):
            if all(store.contains(b) for b in body):
                return WhyNode(f, rule, [build(b, path | {f}) for b in body])
        return WhyNode(f, None, [], "no stored derivation")

    return build(fact, frozenset())


@dataclass
class Hop:
    """One hop of a traceroute: at ``node`` the route to the destination leaves for
    ``next_hop``; ``route`` is the fact that says so and ``rule`` the rule that derived it."""

    index: int
    node: str
    next_hop: str
    link_cost: Value | None
    cost_so_far: Value | None
    route: Fact
    rule: str | None

    def to_json(self) -> dict[str, Any]:
        return {"hop": self.index, "node": self.node, "next_hop": self.next_hop,
                "link_cost": self.link_cost, "cost_so_far": self.cost_so_far,
                "route": str(self.route), "rule": self.rule}


@dataclass
class Trace:
    src: str
    dst: str
    hops: list[Hop]
    complete: bool
    reason: str = ""


def traceroute(store: Store, src: str, dst: str, route_relation: str = ROUTE,
               link_relation: str = LINK) -> Trace:
    """Follow ``dst``'s route hop by hop, each hop by its own table (as packets would)."""
    check_relation_known(store, route_relation)
    for n in (src, dst):
        check_node(store, n, link_relation)
    hops: list[Hop] = []
    cur, total, seen = src, 0, {src}
    while cur != dst:
        routes = store.read_view(route_relation, where={0: cur, 1: dst})
        if not routes:
            return Trace(src, dst, hops, False, f"{cur} has no {route_relation} to {dst}")
        route = routes[0]
        path = next((a for a in route.args[2:] if isinstance(a, tuple)), None)
        if not path or len(path) < 2:
            raise QueryError(f"{route} carries no path to follow; traceroute needs a route "
                             f"relation like bestPath(@S,D,Path,Cost)", code="NOT_A_ROUTE")
        nxt = str(path[1])
        links = store.read_view(link_relation, where={0: cur, 1: nxt}) \
            if link_relation in store.relations() else []
        cost = links[0].args[2] if links and len(links[0].args) > 2 else None
        total = total + cost if isinstance(cost, int | float) and total is not None else None
        ds = store.derivations(route)
        hops.append(Hop(len(hops) + 1, cur, nxt, cost, total, route, ds[0][0] if ds else None))
        if nxt in seen:
            return Trace(src, dst, hops, False, f"forwarding loop: {nxt} was visited before")
        seen.add(nxt)
        cur = nxt
    return Trace(src, dst, hops, True)


def reach_diff(store: Store, before: int, after: int, relation: str,
               key: tuple[int, int] = (0, 1)) -> tuple[list[tuple], list[tuple]]:
    """(src, dst) pairs that had some ``relation`` fact after batch ``before`` but none after
    batch ``after`` (lost), and the other way round (gained): the change log replayed
    backwards from the current views, only for pairs the window touched."""
    check_relation_known(store, relation)
    if after < before:
        raise QueryError(f"--after {after} is before --before {before}", code="BATCH_ORDER")
    changes = store.changes(since_batch=before, relation=relation)
    touched: dict[tuple, list] = {}
    for c in changes:
        touched.setdefault((c.fact.args[key[0]], c.fact.args[key[1]]), []).append(c)
    lost, gained = [], []
    for pair, cs in sorted(touched.items(), key=lambda kv: tuple(map(format_value, kv[0]))):
        if not any(c.batch_id <= after for c in cs):
            continue
        now = set(store.read_view(relation, where={key[0]: pair[0], key[1]: pair[1]}))

        def rollback(facts: set[Fact], since: int, cs: list = cs) -> set[Fact]:
            out = set(facts)
            for c in reversed(cs):
                if c.batch_id > since:
                    (out.discard if c.op == "+" else out.add)(c.fact)
            return out

        had, has = bool(rollback(now, before)), bool(rollback(now, after))
        if had and not has:
            lost.append(pair)
        elif has and not had:
            gained.append(pair)
    return lost, gained


def batch_of_event(store: Store, event_id: str, events_dir: str | None = None) -> int:
    """The batch that applied event ``event_id``."""
    if not store.applied_event_ids([event_id]):
        raise QueryError(f"no batch applied event {event_id!r}", code="UNKNOWN_EVENT")
    summaries = store.batches()
    for b in summaries:
        if event_id in (b.first_event, b.last_event):
            return b.batch_id
    events_dir = events_dir or store.meta().get("events_dir")
    if events_dir:
        order = {e.id: i for i, e in enumerate(EventLog(events_dir).read(strict=False))}
        pos = order.get(event_id)
        if pos is not None:
            for b in summaries:
                lo, hi = order.get(b.first_event or ""), order.get(b.last_event or "")
                if lo is not None and hi is not None and lo <= pos <= hi:
                    return b.batch_id
    raise QueryError(f"event {event_id!r} was applied, but its batch cannot be found without "
                     f"the event log\nHint: pass --events-dir", code="UNKNOWN_EVENT")
