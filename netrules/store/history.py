"""The network over time, and each node's state now, read back from the store.

The store keeps every batch's net changes, so the state after any batch can be replayed from
the change log: how many links were down, how many incidents were active, how many facts
changed. Readers never need a second, time-series table the engine would have to keep in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from netrules.store.base import Store, TopoLink
from netrules.store.incidents import Incident
from netrules.store.queries import LINK

__all__ = ["Point", "series", "node_status", "pair_key"]


def pair_key(a: str, b: str) -> tuple[str, str]:
    """One undirected link: links are stored per direction, an operator counts cables."""
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class Point:
    """The network after one batch: event time, links down, incidents active, facts changed."""

    batch_id: int
    time: float
    links_down: int
    incidents: int
    changed: int


def series(store: Store, incidents: Sequence[Incident], link_relation: str = LINK,
           limit: int = 2_000) -> list[Point]:
    """One :class:`Point` per batch (the last ``limit``), replaying the link change log.

    A link (an undirected pair) is down after a batch when some direction of it that was ever
    up is absent: exactly what the topology's link states say for the last batch.
    """
    batches = store.batches(limit=limit)
    if not batches:
        return []
    present: set[tuple[str, str]] = set()
    seen: set[tuple[str, str]] = set()
    by_batch: dict[int, list[tuple[str, tuple[str, str]]]] = {}
    for c in store.changes(relation=link_relation):
        if len(c.fact.args) >= 2:
            by_batch.setdefault(c.batch_id, []).append(
                (c.op, (str(c.fact.args[0]), str(c.fact.args[1]))))
    first = batches[0].batch_id
    out = []
    for b in sorted(set(by_batch) | {x.batch_id for x in batches}):
        for op, d in by_batch.get(b, ()):
            seen.add(d)
            (present.add if op == "+" else present.discard)(d)
        if b < first:
            continue
        summary = next((x for x in batches if x.batch_id == b), None)
        if summary is None:
            continue
        down = {pair_key(*d) for d in seen - present}
        active = sum(1 for i in incidents if i.start_batch <= b
                     and (i.end_batch is None or i.end_batch > b))
        out.append(Point(b, summary.time, len(down), active, summary.added + summary.removed))
    return out


def node_status(links: Sequence[TopoLink]) -> dict[str, str]:
    """Each node's state from its links: 'isolated' when every link is down, 'degraded' when
    some are, 'up' otherwise (a node with no link at all is 'isolated')."""
    states: dict[str, set[str]] = {}
    for ln in links:
        for n in (ln.src, ln.dst):
            states.setdefault(n, set()).add(ln.state)
    return {n: ("isolated" if s == {"down"} else "degraded" if "down" in s else "up")
            for n, s in sorted(states.items())}
