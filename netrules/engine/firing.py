"""Firing rules against chosen versions of the database: the operations every strategy shares.

Paper 000 and paper 003 both phrase maintenance as "evaluate the rule with body position i
reading the delta and the other positions reading some version of the view". ``fire`` does
exactly that; ``negation_variants`` turns ``not n(...)`` into a positive atom so that a change
of n can be fed in as a delta; ``instances_for`` solves a rule for a given head (one-step
rederivation, backward chaining).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from netrules.engine.joins import bindings_of, fire_rows, rows_for
from netrules.engine.reference import Binding, Database, body_order, head_fact, solve_body
from netrules.facts import Value
from netrules.lang import ast

__all__ = ["fire", "fire_from_delta", "negation_variants", "instances_for", "body_facts",
           "order_of", "changed_bindings", "distinct_bindings", "changed_heads", "derivable",
           "body_keys", "FactKey"]

FactKey = tuple[str, tuple[Value, ...]]


def fire(rule: ast.Rule, reads: Mapping[int, Any] | Any, neg: Any, first: int | None = None
         ) -> Iterator[tuple[tuple, Binding]]:
    """(head row, binding) for every body solution, positive atom j reading ``reads[j]``;
    ``first``: the atom to start the join from (the delta's)."""
    for b in solve_body(rule, reads, neg=neg, order=body_order(rule, first)):
        yield head_fact(rule, b), b


order_of = body_order


def fire_from_delta(rules: list[ast.Rule], delta: Any, other: Any, neg: Any) -> set[FactKey]:
    """Heads of every instance with one positive atom in ``delta`` and the others in
    ``other``: one firing per body position whose relation has delta rows (paper 003's
    ``Π[other : delta]``; an instance with two delta atoms may be found twice, harmless for
    sets)."""
    out: set[FactKey] = set()
    for rule in rules:
        atoms = rule.atoms()
        for i, a in enumerate(atoms):
            if not delta.has(a.relation):
                continue
            reads = {j: (delta if j == i else other) for j in range(len(atoms))}
            for row, _ in fire_rows(rule, reads, neg, first=i):
                out.add((rule.head.relation, row))
    return out


def _may_hold(db: Any, relation: str) -> bool:
    """Whether ``db`` has rows of ``relation`` (a view is asked by a lookup: ``Minus.has``
    only says whether its left side may)."""
    if isinstance(db, Database):
        return db.has(relation)
    return any(True for _ in db.lookup(relation, {}))


def changed_bindings(rule: ast.Rule, pos_delta: Any, neg_delta: Any, other: Any, neg: Any
                     ) -> Iterator[Binding]:
    """Bindings of instances with a positive atom in ``pos_delta`` or a negated atom whose fact
    is in ``neg_delta`` (fed in positively through ``negation_variants``); every other atom
    reads ``other``, remaining negations ``neg``. Each join starts from the changed atom. An
    instance with two changed atoms is found twice (callers dedupe where counts matter)."""
    atoms = rule.atoms()
    for i, a in enumerate(atoms):
        if _may_hold(pos_delta, a.relation):
            reads = {j: (pos_delta if j == i else other) for j in range(len(atoms))}
            yield from bindings_of(rule, reads, neg, first=i)
    for variant, pos in negation_variants(rule):
        if _may_hold(neg_delta, variant.atoms()[pos].relation):
            n = len(variant.atoms())
            reads = {j: (neg_delta if j == pos else other) for j in range(n)}
            yield from bindings_of(variant, reads, neg, first=pos)


def distinct_bindings(bindings: Iterable[Binding]) -> list[Binding]:
    """One binding per variable assignment: an instance with two changed atoms is found
    twice, and an aggregate or a derivation count must take it once."""
    seen: dict[frozenset, Binding] = {}
    for b in bindings:
        seen.setdefault(frozenset(kv for kv in b.items() if isinstance(kv[0], str)), b)
    return list(seen.values())


def changed_heads(rule: ast.Rule, pos_delta: Any, neg_delta: Any, other: Any, neg: Any
                  ) -> Iterator[tuple]:
    """The head rows of ``changed_bindings``' instances, through compiled joins."""
    atoms = rule.atoms()
    for i, a in enumerate(atoms):
        if _may_hold(pos_delta, a.relation):
            reads = {j: (pos_delta if j == i else other) for j in range(len(atoms))}
            for row, _ in fire_rows(rule, reads, neg, first=i):
                yield row
    for variant, pos in negation_variants(rule):
        if _may_hold(neg_delta, variant.atoms()[pos].relation):
            n = len(variant.atoms())
            reads = {j: (neg_delta if j == pos else other) for j in range(n)}
            for row, _ in fire_rows(variant, reads, neg, first=pos):
                yield row


def derivable(rule: ast.Rule, row: tuple, read: Any, neg: Any) -> bool:
    """Whether some instance of ``rule`` over ``read`` derives head ``row``."""
    return bool(rows_for(rule, row, read, neg))


def body_keys(rule: ast.Rule, rows: tuple) -> tuple[FactKey, ...]:
    """Body rows (as ``joins`` returns them) as fact keys, in body order."""
    return tuple(zip(_atom_relations(rule), rows, strict=True))


def _atom_relations(rule: ast.Rule) -> tuple[str, ...]:
    cached = rule.__dict__.get("_nr_atom_rels")
    if cached is None:
        cached = tuple(a.relation for a in rule.atoms())
        object.__setattr__(rule, "_nr_atom_rels", cached)
    return cached


@functools.cache
def negation_variants(rule: ast.Rule) -> tuple[tuple[ast.Rule, int], ...]:
    """For each negated literal, the rule with it made positive and its positive-atom index."""
    out = []
    for k, lit in enumerate(rule.body):
        if isinstance(lit, ast.Negation):
            body = list(rule.body)
            body[k] = lit.atom
            variant = replace(rule, body=tuple(body))
            pos = sum(1 for x in body[:k] if isinstance(x, ast.Atom))
            out.append((variant, pos))
    return tuple(out)


def instances_for(rule: ast.Rule, row: tuple, read: Any, neg: Any) -> Iterator[Binding]:
    """Bindings of ``rule``'s body (positives in ``read``) that derive exactly head ``row``."""
    start: Binding = {}
    for term, value in zip(rule.head.args, row, strict=True):
        if isinstance(term, ast.Var):
            if term.name in start and start[term.name] != value:
                return
            start[term.name] = value
        elif isinstance(term, ast.Const) and term.value != value:
            return
    for b in solve_body(rule, read, neg=neg, order=order_of(rule), binding=start):
        if head_fact(rule, b) == row:
            yield b


def body_facts(rule: ast.Rule, b: Binding) -> tuple[FactKey, ...]:
    """The positive body facts an instance used, in body order (``solve_body`` records them)."""
    return tuple((atom.relation, b[("#row", k)])  # type: ignore[index]
                 for k, atom in enumerate(rule.atoms()))
