"""Read-only set algebra over fact databases, so maintenance can read ``I \\ (D \\ A)`` or
``(I \\ D) ∪ A`` without copying the materialisation (the paper 003 notation, §4.2).

Each view answers ``lookup(relation, bound)`` and ``in``, the two calls ``solve_body`` makes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from netrules.engine.reference import Database
from netrules.facts import Value

__all__ = ["Minus", "Union", "Readable"]


class Readable:
    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterable[tuple]:
        raise NotImplementedError

    def has(self, relation: str) -> bool:
        """Whether the view may hold rows of ``relation`` (False means certainly none)."""
        raise NotImplementedError

    def __contains__(self, item: tuple[str, tuple]) -> bool:
        raise NotImplementedError


class Minus(Readable):
    """``left \\ right``."""

    def __init__(self, left: Database | Readable, right: Database | Readable) -> None:
        self.left, self.right = left, right

    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterable[tuple]:
        right = self.right
        if not right.has(relation):  # the common case: nothing of this relation removed
            return self.left.lookup(relation, bound)
        return [row for row in self.left.lookup(relation, bound) if (relation, row) not in right]

    def has(self, relation: str) -> bool:
        return self.left.has(relation)

    def __contains__(self, item: tuple[str, tuple]) -> bool:
        return item in self.left and item not in self.right


class Union(Readable):
    """``a ∪ b`` (rows present in both are returned once)."""

    def __init__(self, a: Database | Readable, b: Database | Readable) -> None:
        self.a, self.b = a, b

    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterable[tuple]:
        if not self.b.has(relation):
            return self.a.lookup(relation, bound)
        if not self.a.has(relation):
            return self.b.lookup(relation, bound)
        first = list(self.a.lookup(relation, bound))
        a = self.a
        return first + [row for row in self.b.lookup(relation, bound) if (relation, row) not in a]

    def __contains__(self, item: tuple[str, tuple]) -> bool:
        return item in self.a or item in self.b

    def has(self, relation: str) -> bool:
        return self.a.has(relation) or self.b.has(relation)
