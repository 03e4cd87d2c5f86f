"""Which relations of a P2/RapidNet program are events, and which rules react to them.

A relation never ``materialize``d, in a program that declares some, is an *event*: it exists
for one step. ``periodic`` is the built-in one. An event rule is event-condition-action (P2):
when the event occurs its body is joined with the tables as they are and its head is written
(or, for ``delete``, removed), where it stays; it is not maintained by support, so it cannot
be a view and ``netrules.engine.reactive`` runs it.

Which reading a program gets is decided per program (``reading``), because programs that
declare only their base tables (netrules' shipped ones) would otherwise turn every view into an
event. A program that uses ``periodic`` or a ``delete`` rule is written for P2's reading:
every undeclared relation is an event (one fed from outside, such as RapidNet's ``link``,
included); a rule that reads an event, or writes one, or deletes, is an event rule; a rule
that writes an event from tables alone fires when a tuple is inserted into (or refreshed in)
one of those tables, as P2 turns a table's delta into an event. Any other program keeps the
view reading: only ``periodic`` and what rules reading it fire are events, and an event that
only rules over tables derive is a view.
"""

from __future__ import annotations

from dataclasses import dataclass

from netrules.lang import ast

__all__ = ["PERIODIC", "PERIODIC_ARITIES", "Reading", "event_relations", "fired_events",
           "is_p2_style", "is_reactive", "periodic_atoms", "reading"]

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


def is_p2_style(rules: tuple[ast.Rule, ...]) -> bool:
    """Whether a program is written for P2's reading: it uses ``periodic`` or ``delete``."""
    return any(r.delete or periodic_atoms(r) for r in rules)


@dataclass(frozen=True)
class Reading:
    """How one program's rules divide into views and event rules."""

    p2: bool  # P2's reading (``is_p2_style``) or the view reading
    events: frozenset[str]  # relations never materialized (and periodic)
    fired: frozenset[str]  # the events that occur: all of them in P2's reading

    def is_event_rule(self, rule: ast.Rule) -> bool:
        return is_reactive(rule, self.fired) or (self.p2 and rule.head.relation in self.events)

    def is_trigger_rule(self, rule: ast.Rule) -> bool:
        """An event rule that no event occurrence fires: a table's insertion fires it."""
        return self.is_event_rule(rule) and not any(a.relation in self.fired
                                                    for a in rule.atoms())

    def external(self, rules: tuple[ast.Rule, ...]) -> frozenset[str]:
        """Events no rule raises: fed from outside (P2's reading only)."""
        if not self.p2:
            return frozenset()
        heads = {r.head.relation for r in rules}
        used = {a.relation for r in rules for a in r.atoms()}
        return frozenset(used & self.events - heads - {PERIODIC})


def reading(program: ast.Program, rules: tuple[ast.Rule, ...] | None = None) -> Reading:
    """The reading of ``program`` (its ``rules`` as checked, by default as parsed)."""
    rules = program.rules if rules is None else rules
    events = event_relations(program)
    if is_p2_style(rules) and len(events) > 1:
        return Reading(True, events, events)
    return Reading(False, events, fired_events(rules, events))
