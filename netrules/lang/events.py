"""Which relations of a P2/RapidNet program are events, and which rules react to them.

A relation never ``materialize``d, in a program that declares some, is an *event*: it exists
for one step. ``periodic`` is the built-in one. A rule that reads ``periodic``, or an event
that such rules fire, and every ``delete`` rule is an event-condition-action rule (P2): when
the event occurs its body is joined with the tables as they are and its head is written (or,
for ``delete``, removed), where it stays; it is not maintained by support, so it cannot be a
view and ``netrules.engine.reactive`` runs it. An event that only rules over tables derive is
kept as a view, as netrules always did (so programs that declare only their base tables keep
their meaning); each fact newly derived into it is an occurrence for the event rules.
"""

from __future__ import annotations

from netrules.lang import ast

__all__ = ["PERIODIC", "PERIODIC_ARITIES", "event_relations", "fired_events", "is_reactive",
           "periodic_atoms"]

PERIODIC = "periodic"
PERIODIC_ARITIES = (3, 4, 5, 6)  # @N, E, Period[, Repeats[, Delay[, Spacing]]]


def event_relations(program: ast.Program) -> frozenset[str]:
    """``periodic`` and, where the program declares tables, every relation it does not."""
    mats = {m.name for m in program.materialized}
    if not mats:
        return frozenset({PERIODIC})
    rels = {a.relation for r in program.rules for a in (r.head, *r.atoms())}
    return frozenset(rel for rel in rels if rel not in mats) | {PERIODIC}


def fired_events(rules: tuple[ast.Rule, ...], events: frozenset[str]) -> frozenset[str]:
    """``periodic`` and the events event rules derive, transitively."""
    fired = {PERIODIC}
    grew = True
    while grew:
        grew = False
        for r in rules:
            if r.head.relation in events and r.head.relation not in fired and is_reactive(
                    r, frozenset(fired)):
                fired.add(r.head.relation)
                grew = True
    return frozenset(fired)


def is_reactive(rule: ast.Rule, fired: frozenset[str]) -> bool:
    """Whether ``rule`` fires on an event rather than holding as a view."""
    return rule.delete or any(a.relation in fired for a in rule.atoms())


def periodic_atoms(rule: ast.Rule) -> list[ast.Atom]:
    return [a for a in rule.atoms() if a.relation == PERIODIC]
