"""Why-not: why a pair has no route (or no reachability), from the store alone.

``why`` explains a fact that holds; an operator staring at "No route" needs the opposite, in
the style of negative provenance (Y!, Wu et al., SIGCOMM 2014): the route the pair last had and
the batch and base facts whose deletion took it, then, for every neighbour of the source, why
that neighbour's own route cannot be used (its link is down, it has no route either, or its
route runs back through the source). Everything comes from the views, the change log and the
link states, so it works for any program whose relation is keyed by (source, destination):
``bestPath`` of path_vector and best_routes, ``reachable`` of reachability.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from netrules.facts import Fact, Value, value_to_json
from netrules.lang import ast
from netrules.store.base import Change, Store
from netrules.store.history import pair_key
from netrules.store.incidents import Incident, read_incidents
from netrules.store.queries import (
    LINK,
    QueryError,
    check_node,
    check_relation_known,
    stored_plan,
)

__all__ = ["Neighbour", "WhyNot", "why_not", "pair_of"]


@dataclass(frozen=True)
class Neighbour:
    """One neighbour of the source and why its route to the destination cannot be used."""

    node: str
    link: str          # 'up' or 'down'
    reason: str
    since_batch: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "link": self.link, "reason": self.reason,
                "since_batch": self.since_batch}


@dataclass
class WhyNot:
    """The answer for ``relation(src, dst, ...)``; ``holds`` means there is nothing to explain."""

    relation: str
    src: str
    dst: str
    holds: bool
    last: Fact | None = None
    lost_batch: int | None = None
    lost_time: float | None = None
    taken_by: list[Fact] = field(default_factory=list)
    cut_off: dict[str, list[tuple[str, int | None]]] = field(default_factory=dict)
    neighbours: list[Neighbour] = field(default_factory=list)
    incident: Incident | None = None

    @property
    def links(self) -> list[str]:
        """Every link the answer names as down (for tests and the dashboard's summary)."""
        out = {n for links in self.cut_off.values() for n, _ in links}
        out |= {"–".join(pair_key(str(f.args[0]), str(f.args[1]))) for f in self.taken_by
                if len(f.args) >= 2}
        return sorted(out)

    def lines(self) -> list[str]:
        """The answer as text, one finding per line."""
        head = f"{self.relation}({self.src}, {self.dst}, …)"
        if self.holds:
            return [f"{head} holds; ask `netrules why` how it is derived."]
        out = [f"{head} does not hold."]
        if self.last is not None:
            out.append(f"Last held: {self.last}")
            out.append(f"  removed by batch {self.lost_batch} ({_when(self.lost_time)})")
            if self.taken_by:
                out.append("  taken by the deletion of: "
                           + ", ".join(f"-{f}" for f in self.taken_by))
        else:
            out.append("It never held in the change log the store keeps.")
        for node, links in self.cut_off.items():
            out.append(f"{node} is cut off: every link of it is down: " + ", ".join(
                f"{name} (down since batch {b})" if b is not None else f"{name} (down)"
                for name, b in links))
        if self.neighbours:
            out.append(f"Why no neighbour of {self.src} offers a route:")
            out += [f"  {n.node}: {n.reason}" for n in self.neighbours]
        if self.incident is not None:
            out.append(f"Incident: {self.incident.title()}")
        return out

    def render(self) -> str:
        return "\n".join(self.lines())

    def to_json(self) -> dict[str, Any]:
        return {
            "relation": self.relation, "src": self.src, "dst": self.dst, "holds": self.holds,
            "last": None if self.last is None else {
                "fact": str(self.last), "args": [value_to_json(a) for a in self.last.args]},
            "lost_batch": self.lost_batch, "lost_time": self.lost_time,
            "taken_by": [str(f) for f in self.taken_by],
            "cut_off": {n: [{"link": name, "down_since_batch": b} for name, b in links]
                        for n, links in self.cut_off.items()},
            "links": self.links,
            "neighbours": [n.to_json() for n in self.neighbours],
            "incident": None if self.incident is None else self.incident.to_json(False),
        }


def _when(t: float | None) -> str:
    """Event time as UTC when it is a wall-clock time, else as simulated seconds."""
    if t is None:
        return "?"
    if t > 1e9:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"t={t:g}s"


def pair_of(atom: ast.Atom) -> tuple[str, str]:
    """The (source, destination) constants of a why-not question such as
    ``bestPath("New York","Seattle",P,C)``; the other arguments are ignored."""
    if len(atom.args) < 2 or not all(isinstance(t, ast.Const) and isinstance(t.value, str)
                                     for t in atom.args[:2]):
        raise QueryError(f"{atom}: why-not asks about one pair: give the source and destination "
                         f"as constants (quote capitalised names: \"Seattle\")",
                         code="QUERY_ARGUMENT")
    return str(atom.args[0].value), str(atom.args[1].value)  # type: ignore[union-attr]


def _path(f: Fact) -> tuple[Value, ...] | None:
    return next((a for a in f.args[2:] if isinstance(a, tuple)), None)


def _down_since(store: Store, link_relation: str, a: str, b: str) -> int | None:
    """The batch that last removed a direction of link a-b (None: never seen in the log)."""
    batches = [c.batch_id for s, d in ((a, b), (b, a))
               for c in store.changes_matching(link_relation, {0: s, 1: d}, limit=1)
               if c.op == "-"]
    return max(batches, default=None)


def _lost(history: list[Change]) -> tuple[Fact | None, Change | None]:
    """The last fact of the pair that was removed, and its removal."""
    for c in history:  # newest first
        if c.op == "-":
            return c.fact, c
    return None, None


def why_not(store: Store, atom: ast.Atom, link_relation: str = LINK) -> WhyNot:
    """Why ``atom``'s pair has no fact in its relation; see the module docstring."""
    relation = atom.relation
    plan = stored_plan(store)
    check_relation_known(store, relation, plan)
    src, dst = pair_of(atom)
    for n in (src, dst):
        check_node(store, n, link_relation)
    if store.read_view(relation, where={0: src, 1: dst}, limit=1):
        return WhyNot(relation, src, dst, holds=True)
    answer = WhyNot(relation, src, dst, holds=False)

    last, change = _lost(store.changes_matching(relation, {0: src, 1: dst}, limit=50))
    if last is not None and change is not None:
        answer.last, answer.lost_batch, answer.lost_time = last, change.batch_id, change.time
        base = sorted((set(plan.base) if plan is not None else set()) | {link_relation})
        gone = [c.fact for rel in base
                for c in store.changes(since_batch=change.batch_id - 1, relation=rel)
                if c.batch_id == change.batch_id and c.op == "-"]
        path = _path(last)
        if path is not None:
            edges = {pair_key(str(x), str(y)) for x, y in zip(path, path[1:], strict=False)}
            on_path = [f for f in gone if len(f.args) >= 2
                       and pair_key(str(f.args[0]), str(f.args[1])) in edges]
            gone = on_path or gone
        answer.taken_by = gone

    _, links = store.topology()
    adjacent: dict[str, dict[str, str]] = {}
    for ln in links:
        adjacent.setdefault(ln.src, {})
        adjacent.setdefault(ln.dst, {})
        for x, y in ((ln.src, ln.dst), (ln.dst, ln.src)):
            old = adjacent[x].get(y)
            adjacent[x][y] = "down" if "down" in (old, ln.state) else ln.state
    for node in (dst, src):
        mine = adjacent.get(node, {})
        if mine and all(s == "down" for s in mine.values()):
            answer.cut_off[node] = [
                ("–".join(pair_key(node, nb)), _down_since(store, link_relation, node, nb))
                for nb in sorted(mine)]

    for nb, state in sorted(adjacent.get(src, {}).items()):
        if state == "down":
            since = _down_since(store, link_relation, src, nb)
            when = f" (since batch {since})" if since is not None else ""
            answer.neighbours.append(Neighbour(nb, "down", f"the link {src}–{nb} is down{when}",
                                               since))
            continue
        if nb == dst:
            answer.neighbours.append(Neighbour(nb, "up", f"the link is up, yet no {relation} "
                                               f"fact uses it (see `netrules why`)"))
            continue
        theirs = store.read_view(relation, where={0: nb, 1: dst}, limit=20)
        if not theirs:
            _, lost = _lost(store.changes_matching(relation, {0: nb, 1: dst}, limit=50))
            when = f" (lost in batch {lost.batch_id})" if lost is not None else ""
            answer.neighbours.append(Neighbour(
                nb, "up", f"{nb} has no {relation} to {dst} either{when}",
                None if lost is None else lost.batch_id))
            continue
        looped = [f for f in theirs if (p := _path(f)) is not None and src in p]
        if looped and len(looped) == len(theirs):
            shown = " → ".join(map(str, _path(looped[0]) or ()))
            answer.neighbours.append(Neighbour(
                nb, "up", f"its route runs back through {src} ({shown}): a path may not "
                          f"contain its own source (f_member)"))
        else:
            answer.neighbours.append(Neighbour(
                nb, "up", f"{nb} has {theirs[0]}, usable; the store may be between batches"))

    pair = f"{src} → {dst}"
    answer.incident = next((i for i in read_incidents(store, active_only=True)
                            if pair in i.affected), None)
    return answer

