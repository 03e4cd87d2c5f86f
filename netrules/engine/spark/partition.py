"""Which Spark partition holds which node: contiguous regions of the topology.

Rules are localized, so a partition holding every fact located at its nodes can run them to a
local fixpoint; only facts sent to a node in *another* partition wait for the next round. Cutting
the network into connected regions (breadth-first order, cut into equal runs) makes rounds count
region crossings instead of hops: a 74-hop path through 4 regions needs a handful of rounds.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from netrules.facts import Fact, Value

__all__ = ["PartitionMap"]


class PartitionMap:
    """node -> partition; unknown nodes (and unlocated facts) hash to a stable partition."""

    def __init__(self, assignment: dict[Value, int], parts: int) -> None:
        self.assignment = assignment
        self.parts = parts

    def of(self, node: Value) -> int:
        p = self.assignment.get(node)
        if p is not None:
            return p
        return _stable_hash(node) % self.parts

    @classmethod
    def from_facts(cls, facts: Iterable[Fact], parts: int) -> PartitionMap:
        """Regions from the graph the located base facts draw (location -> other node args)."""
        adj: dict[Value, set[Value]] = {}
        for f in facts:
            if f.loc is None or f.loc >= len(f.args):
                continue
            src = f.args[f.loc]
            adj.setdefault(src, set())
            for i, a in enumerate(f.args):
                if i != f.loc and isinstance(a, str | int) and not isinstance(a, bool):
                    adj[src].add(a)
                    adj.setdefault(a, set()).add(src)
        order: list[Value] = []
        seen: set[Value] = set()
        for start in sorted(adj, key=repr):
            if start in seen:
                continue
            seen.add(start)
            queue = deque([start])
            while queue:
                n = queue.popleft()
                order.append(n)
                for m in sorted(adj[n], key=repr):
                    if m not in seen:
                        seen.add(m)
                        queue.append(m)
        size = max(1, -(-len(order) // parts))
        return cls({n: min(i // size, parts - 1) for i, n in enumerate(order)}, parts)


def _stable_hash(v: Value) -> int:
    import zlib

    return zlib.crc32(repr(v).encode())
