"""Neighbour discovery for programs read as P2 reads them: link *state* in, link *events* out.

Collectors and the simulator report links as state (``+link`` when a link comes up, ``-link``
when it goes down; last writer wins by event time, as for any base fact). A P2 program such
as RapidNet's link-state ones instead takes ``link`` as an event that its neighbour discovery
raises again on every beacon while the neighbour answers (``discovery.olg``: every 5 s), and
keeps the tables it derives as soft state. So a link that is up raises ``link`` when it comes
up and at every beacon instant ``k * period`` after; a link that goes down simply stops being
announced, and what its announcements refreshed expires after its lifetime. The live links
also give ``@Broadcast`` its reach (the radio range): the nodes a node has a live link to.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from netrules.engine.ledger import BaseLedger
from netrules.facts import Fact, Value, sort_key

__all__ = ["Discovery"]


class Discovery:
    """The source's live links, and the ``link`` occurrences they raise on the beacon clock."""

    def __init__(self, relation: str, period: float) -> None:
        """``relation``: the links, ``link(@Src, Dst, ...)``; ``period``: seconds between
        beacons (0: none, a link is announced only when it comes up)."""
        self.relation, self.period = relation, period
        # one register per directed link (source, destination): a link has one cost at a time
        self.ledger = BaseLedger(keys={relation: (0, 1)})
        self.last_beacon = -math.inf  # the latest beacon instant raised

    def update(self, updates: Iterable[tuple]) -> tuple[set[Fact], set[Fact]]:
        """Apply the source's stamped ``link`` updates; the links that came up, went down."""
        return self.ledger.apply(updates)

    def live(self) -> list[Fact]:
        return sorted(self.ledger.present(), key=Fact.key)

    def beacons(self, after: float, until: float) -> list[float]:
        """Beacon instants in ``(after, until]`` not raised yet, in time order."""
        if self.period <= 0:
            return []
        start = max(after, self.last_beacon)
        k = math.floor(start / self.period) + 1
        out = []
        while k * self.period <= until:
            out.append(k * self.period)
            k += 1
        return out

    def is_beacon(self, t: float) -> bool:
        """Whether ``t`` is a beacon instant not raised yet."""
        return (self.period > 0 and t > self.last_beacon
                and round(t / self.period) * self.period == t)

    def beacon(self, t: float) -> list[Fact]:
        """The occurrences a beacon at ``t`` raises: one per live link."""
        self.last_beacon = max(self.last_beacon, t)
        return self.live()

    def neighbours(self, node: Value) -> tuple[Value, ...]:
        """Where a ``@Broadcast`` from ``node`` arrives: the ends of its live links."""
        ends = {f.args[1] for f in self.ledger.present()
                if len(f.args) > 1 and f.args[0] == node}
        return tuple(sorted(ends, key=sort_key))

    def snapshot(self) -> dict[str, Any]:
        return {"ledger": self.ledger.snapshot(),
                "last_beacon": None if self.last_beacon == -math.inf else self.last_beacon}

    def restore(self, snap: dict[str, Any]) -> None:
        self.ledger.restore(snap.get("ledger", {}))
        last = snap.get("last_beacon")
        self.last_beacon = -math.inf if last is None else float(last)
