"""Read-only set algebra over fact databases, so maintenance can read ``I \\ (D \\ A)`` or
``(I \\ D) ∪ A`` without copying the materialisation (the paper 003 notation, §4.2).

Each view answers ``lookup(relation, bound)`` and ``in``, the two calls ``solve_body`` makes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from netrules.engine.reference import Database, probe_rows
from netrules.facts import Value

__all__ = ["Minus", "Union", "Patched", "Readable"]


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

    def probe(self, relation: str, pos: tuple[int, ...], key: tuple) -> Iterable[tuple]:
        rows = probe_rows(self.left, relation, pos, key)
        right = self.right
        if not right.has(relation):
            return rows
        return [row for row in rows if (relation, row) not in right]

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

    def probe(self, relation: str, pos: tuple[int, ...], key: tuple) -> Iterable[tuple]:
        if not self.b.has(relation):
            return probe_rows(self.a, relation, pos, key)
        if not self.a.has(relation):
            return probe_rows(self.b, relation, pos, key)
        a = self.a
        return [*probe_rows(a, relation, pos, key),
                *(row for row in probe_rows(self.b, relation, pos, key)
                  if (relation, row) not in a)]

    def __contains__(self, item: tuple[str, tuple]) -> bool:
        return item in self.a or item in self.b

    def has(self, relation: str) -> bool:
        return self.a.has(relation) or self.b.has(relation)


class Patched(Readable):
    """``((base \\ hide₁ \\ hide₂ …) ∪ show₁ ∪ show₂ …) \\ drop₁ …`` in one layer.

    The same set as the nested ``Minus``/``Union`` it replaces, read with one pass over plain
    row sets: a nest five deep turned every probe of PSN's rederivation into ten Python calls
    and a key tuple per layer (94,000 suspects on americas spent half their time there). The
    layers stay live: facts added to or removed from them later are seen.
    """

    def __init__(self, base: Database, hide: Iterable[Database] = (),
                 show: Iterable[Database] = (), drop: Iterable[Database] = ()) -> None:
        self.base, self.hide, self.show, self.drop = base, tuple(hide), tuple(show), tuple(drop)
        self._out = self.hide + self.drop  # layers whose rows the base must not show

    def lookup(self, relation: str, bound: Mapping[int, Value]) -> Iterable[tuple]:
        hides = [s for h in self.hide if (s := h.rel.get(relation))]
        drops = [s for d in self.drop if (s := d.rel.get(relation))]
        rows = self.base.lookup(relation, bound)
        if hides or drops:
            rows = [r for r in rows if not any(r in s for s in hides)
                    and not any(r in s for s in drops)]
        elif not isinstance(rows, list):
            rows = list(rows)
        shows = [d for d in self.show if d.rel.get(relation)]
        if shows:
            seen = set(rows)
            for d in shows:
                for r in d.lookup(relation, bound):
                    if r not in seen and not any(r in s for s in drops):
                        seen.add(r)
                        rows.append(r)
        return rows

    def probe(self, relation: str, pos: tuple[int, ...], key: tuple) -> Iterable[tuple]:
        """``lookup`` on fixed positions (the compiled joins' call): the same rows in the same
        order, the base's bucket itself when no layer holds ``relation``, and plain loops (this
        and ``in`` are most of a rederivation's time on a large deletion)."""
        rows = self.base.probe(relation, pos, key)
        out_sets = [t for layer in self._out if (t := layer.rel.get(relation))]
        shows = [d for d in self.show if d.rel.get(relation)]
        if not out_sets and not shows:
            return rows
        if not out_sets:
            out = list(rows)
        elif len(out_sets) == 1:
            t0 = out_sets[0]
            out = [r for r in rows if r not in t0]
        else:
            out = [r for r in rows if not any(r in t for t in out_sets)]
        if shows:
            drops = [t for d in self.drop if (t := d.rel.get(relation))]
            seen = set(out)
            for d in shows:
                for r in d.probe(relation, pos, key):
                    if r not in seen and not any(r in t for t in drops):
                        seen.add(r)
                        out.append(r)
        return out

    def has(self, relation: str) -> bool:
        return self.base.has(relation) or any(d.has(relation) for d in self.show)

    def __contains__(self, item: tuple[str, tuple]) -> bool:
        relation, row = item
        for d in self.drop:
            t = d.rel.get(relation)
            if t and row in t:
                return False
        t = self.base.rel.get(relation)
        if t and row in t:
            for h in self.hide:
                u = h.rel.get(relation)
                if u and row in u:
                    break
            else:
                return True
        for d in self.show:
            t = d.rel.get(relation)
            if t and row in t:
                return True
        return False
