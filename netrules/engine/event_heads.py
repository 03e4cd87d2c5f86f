"""The heads one event rule writes when one occurrence fires it.

Kept apart from the clock (``netrules.engine.reactive``) because the two P2 forms it adds
change what a firing produces, not when it happens:

- ``a_COUNT<*>`` counts the body's matches for this one occurrence, and reports 0 when none
  match (RapidNet's ``AggWrapCount``): "is this link new?" is ``Count == 0``. The occurrence
  fixes every other head argument (``netrules check`` insists), so there is one group.
- ``@Broadcast`` sends the head to every node the sending node reaches (the caller's
  neighbourhood: the simulator's radio range, or every other node on a shared LAN).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from netrules.engine.reference import Binding, Database, head_fact, solve_body
from netrules.errors import EvalError
from netrules.facts import Fact, Value, sort_key
from netrules.lang import ast
from netrules.lang.builtins import BuiltinError, evaluate

__all__ = ["BROADCAST", "event_heads"]

BROADCAST = "Broadcast"
Neighbours = Callable[[Value], Iterable[Value]]


def event_heads(rule: ast.Rule, i: int, occurrence: Fact, db: Any,
                neighbours: Neighbours) -> list[Fact]:
    """The heads ``rule`` writes when ``occurrence`` fires its ``i``-th body atom, the other
    atoms reading ``db`` as it is."""
    if rule.atoms()[i].arity != len(occurrence.args):
        return []  # another periodic form
    read: dict[int, Any] = {j: db for j in range(len(rule.atoms()))}
    read[i] = Database([occurrence])
    bindings = list(solve_body(rule, read, neg=db, first=i))
    agg = rule.head.aggregate()
    if agg is not None:
        rows = _counted(rule, i, occurrence, agg[0], bindings)
    else:
        sender = occurrence.args[occurrence.loc or 0]
        bindings = _broadcast(rule, bindings, neighbours(sender))
        rows = {head_fact(rule, b) for b in bindings}
    loc = rule.head.locspec or 0
    return [Fact(rule.head.relation, h, loc) for h in sorted(rows, key=sort_key)]


def _counted(rule: ast.Rule, i: int, occurrence: Fact, pos: int,
             bindings: list[Binding]) -> set[tuple]:
    """One row: the occurrence's group and the number of distinct matches (0 included)."""
    alone = replace(rule, body=(rule.atoms()[i],))
    base = next(iter(solve_body(alone, Database([occurrence]))), {})
    distinct = {frozenset(kv for kv in b.items() if isinstance(kv[0], str)) for b in bindings}
    try:
        row = [evaluate(t, base) if k != pos else len(distinct)
               for k, t in enumerate(rule.head.args)]
    except BuiltinError as err:
        raise EvalError(f"{err} (in the head of `{rule}`)") from None
    return {tuple(row)}


def _broadcast(rule: ast.Rule, bindings: list[Binding], reached: Iterable[Value]
               ) -> list[Binding]:
    """Each binding once per node the sender reaches, ``Broadcast`` bound to it (a body
    that binds ``Broadcast`` itself means an ordinary variable)."""
    at = rule.head.location_term
    if not isinstance(at, ast.Var) or at.name != BROADCAST or any(BROADCAST in b
                                                                  for b in bindings):
        return bindings
    nodes = sorted(set(reached), key=sort_key)
    return [{**b, BROADCAST: n} for b in bindings for n in nodes]
