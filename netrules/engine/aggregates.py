"""Aggregates maintained by deltas, not by rescans (paper 004 §4.2).

Each aggregate rule keeps, per group, the multiset of values its distinct body bindings give:
``a_COUNT`` and ``a_SUM`` are running totals moved by +1/-1 per binding, ``a_MIN``/``a_MAX``
keep the extreme and rescan only *that group's* distinct values when the extreme itself goes.
Groups are the plan's (``Rule.grouping``); with a payload (an arg-min) a group's values are
(value, payload) pairs and the extreme is ``reference.best_pair`` of them.
A batch feeds in the bindings that stopped holding and the ones that started; the groups they
touch are the only ones whose head row can change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from netrules.engine.reference import Binding, assemble_row, best_pair
from netrules.facts import Value, sort_key
from netrules.lang import ast
from netrules.lang.builtins import evaluate

__all__ = ["AggIndex"]


class _Group:
    __slots__ = ("values", "count", "total", "extreme", "stale")

    def __init__(self) -> None:
        self.values: Counter[Value] = Counter()
        self.count = 0
        self.total: Value = 0
        self.extreme: Value | None = None
        self.stale = False  # the extreme left; recompute from this group's values


class AggIndex:
    """Per-group aggregate state of one rule ``h(..., a_F<V>, ...) :- body``."""

    def __init__(self, rule: ast.Rule) -> None:
        g = rule.grouping
        assert g is not None
        self.rule = rule
        self.grouping = g
        self.pos = g.pos
        self.agg: ast.Aggregate = rule.head.args[g.pos]  # type: ignore[assignment]
        self.groups: dict[tuple, _Group] = {}
        head = rule.head.args
        # with a payload (arg-min), a group's values are (value, payload) pairs
        self._payload = tuple(head[i] for i in g.payload)
        group = [head[i] for i in g.group]
        self._key_names = ([t.name for t in group]  # type: ignore[union-attr]
                           if all(isinstance(t, ast.Var) and t.name != "_" for t in group)
                           else None)

    def _key_value(self, b: Binding) -> tuple[tuple, Value]:
        names = self._key_names
        if names is not None:  # the usual head: plain variables around the aggregate
            key = tuple([b[n] for n in names])
        else:
            key = tuple(evaluate(self.rule.head.args[i], b) for i in self.grouping.group)
        value = b[self.agg.var.name] if self.agg.var else 1
        if self._payload:
            return key, (value, tuple(evaluate(t, b) for t in self._payload))
        return key, value

    def result(self, key: tuple) -> Value | None:
        g = self.groups.get(key)
        if g is None or g.count == 0:
            return None
        func = self.agg.func
        if func == "COUNT":
            return g.count
        if func == "SUM":
            return g.total
        return g.extreme

    def row(self, key: tuple) -> tuple | None:
        v = self.result(key)
        if v is None:
            return None
        if self._payload:
            return assemble_row(self.grouping, key, v[0], v[1])  # type: ignore[index]
        return assemble_row(self.grouping, key, v)

    def key_of_row(self, row: tuple) -> tuple:
        return tuple(row[i] for i in self.grouping.group)

    def update(self, removed: Iterable[Binding], added: Iterable[Binding]) -> set[tuple]:
        """Move the groups by the bindings that stopped and started holding; the touched keys."""
        return self.update_pairs([self._key_value(b) for b in removed],
                                 [self._key_value(b) for b in added])

    def update_pairs(self, removed: Iterable[tuple[tuple, Value]],
                     added: Iterable[tuple[tuple, Value]]) -> set[tuple]:
        """``update`` by (group, value) pairs: what a binding contributes, which is all a
        group held in another place needs (``regional/counting.py``)."""
        touched: set[tuple] = set()
        smaller = self.agg.func == "MIN"
        for sign, pairs in ((-1, removed), (1, added)):
            for key, value in pairs:
                touched.add(key)
                g = self.groups.get(key)
                if g is None:
                    g = self.groups[key] = _Group()
                g.count += sign
                if self.agg.func == "SUM":
                    g.total += sign * value  # type: ignore[operator]
                g.values[value] += sign
                if g.values[value] <= 0:
                    del g.values[value]
                    if g.extreme == value:
                        g.stale = True
                elif sign > 0 and not g.stale and self.agg.func in ("MIN", "MAX") and (
                        g.extreme is None or self._beats(value, g.extreme, smaller)):
                    g.extreme = value
        for key in touched:
            g = self.groups[key]
            if g.count <= 0:
                del self.groups[key]
            elif g.stale and self.agg.func in ("MIN", "MAX"):
                if self._payload:  # this group's values only
                    g.extreme = best_pair(self.agg.func, g.values)
                else:
                    g.extreme = (min if smaller else max)(g.values, key=sort_key)
                g.stale = False
        return touched

    def _beats(self, value: Value, extreme: Value, smaller: bool) -> bool:
        if not self._payload:
            return value != extreme and (sort_key(value) < sort_key(extreme)) == smaller
        return value != extreme and best_pair(self.agg.func, (extreme, value)) == value

    def leans_on(self, key: tuple, value: Value) -> bool:
        """Whether the group's row may change when a binding giving ``value`` goes: always
        for a count or a sum; for a minimum or maximum only when ``value`` is the extreme
        (the others can go without moving it). Overdeletion asks this, so a lost route
        that was not a group's best does not take the best route down with it."""
        g = self.groups.get(key)
        if g is None:
            return False
        if self.agg.func in ("MIN", "MAX"):
            return g.extreme == value
        return True

    def key_of(self, b: Binding) -> tuple:
        """The group a body binding belongs to."""
        return self._key_value(b)[0]

    def pair_of(self, b: Binding) -> tuple[tuple, Value]:
        """(group, value) a body binding contributes."""
        return self._key_value(b)

    def move(self, removed: Iterable[Binding], added: Iterable[Binding]
             ) -> tuple[set[tuple], set[tuple]]:
        """``update``, returning the head rows that went and the ones that came (a group
        whose extreme, count or sum did not change gives neither)."""
        return self.move_pairs([self._key_value(b) for b in removed],
                               [self._key_value(b) for b in added])

    def move_pairs(self, removed: list[tuple[tuple, Value]], added: list[tuple[tuple, Value]]
                   ) -> tuple[set[tuple], set[tuple]]:
        """``move`` by (group, value) pairs."""
        keys = {k for k, _v in (*removed, *added)}
        before = {k: self.row(k) for k in keys}
        self.update_pairs(removed, added)
        gone, came = set(), set()
        for k in keys:
            old, now = before[k], self.row(k)
            if old != now:
                if old is not None:
                    gone.add(old)
                if now is not None:
                    came.add(now)
        return gone, came
