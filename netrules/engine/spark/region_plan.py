"""The program a region runs in one round of a stratum: the stratum's rules over its lower
facts, with the stratum's own facts coming in as base facts of an *input* relation.

A region holds facts of a stratum's relations that it cannot derive: those other regions
derived and sent. The columnar engine keeps a relation either derived or base, never both, so
each relation ``R`` the stratum derives takes them through ``#in:R`` and one copy rule
``R(X...) :- #in:R(X...)``; everything below the stratum is base. After the first round an
aggregate is complete (its body is lower and local), so later rounds drop aggregate rules and
read the aggregate relation as base. A stratum the columnar engine cannot run (``unsupported``,
recursion through an aggregate, path atoms) gets no region plan, and the caller falls back to
the per-fact evaluator for it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from netrules.engine.columnar.psn import ColumnarProgram, unsupported
from netrules.engine.spark.fixpoint import read_relations
from netrules.errors import EngineError
from netrules.lang import ast
from netrules.plan import Plan, Stratum
from netrules.plan.stratify import stratify

__all__ = ["IN", "HERE", "OUT", "RegionPlan", "region_plan", "IteratedPlan", "iterated_plan"]

IN = "#in:"


@dataclass(frozen=True)
class RegionPlan:
    plan: Plan
    inputs: dict[str, str]
    """stratum relation -> the input relation its facts held here are loaded into"""
    aggregated: frozenset[str]
    """relations an aggregate rule of this round derives"""
    reads: frozenset[str]
    """relations the stratum reads or derives: the only ones a region decodes"""


def _copy_rule(name: str, arity: int, locspec: int | None) -> ast.Rule:
    args = tuple(ast.Var(f"X{i}") for i in range(arity))
    return ast.Rule(ast.Atom(name, args, locspec), (ast.Atom(IN + name, args, locspec),),
                    label=f"in:{name}")


def region_plan(plan: Plan, stratum: Stratum, first: bool) -> RegionPlan | str:
    """The round's plan, or why the columnar engine cannot run this stratum."""
    if stratum.iterated:
        return "recursion through an aggregate runs per fact on Spark (spark/iterated.py)"
    reads = read_relations(stratum.rules)
    if reads is None:
        return "a path atom is left in the stratum"
    rules = [r for r in stratum.rules if first or not r.head.aggregate()]
    plain = sorted({r.head.relation for r in rules if not r.head.aggregate()})
    aggregated = frozenset(r.head.relation for r in rules if r.head.aggregate())
    rules += [_copy_rule(n, plan.arity[n], plan.locspec.get(n, 0)) for n in plain]
    arity = {**plan.arity, **{IN + n: plan.arity[n] for n in plain}}
    sub = _runnable(plan, rules, arity)
    if isinstance(sub, str):
        return sub
    return RegionPlan(sub, {n: IN + n for n in plain}, aggregated, reads | stratum.relations)


def _runnable(plan: Plan, rules: list[ast.Rule], arity: dict[str, int]) -> Plan | str:
    """``plan`` with only ``rules``, or why the columnar engine cannot run them."""
    sub = replace(plan, rules=tuple(rules), strata=tuple(stratify(tuple(rules))), aux=frozenset(),
                  arity=arity, reactive=(), triggered=())
    why = unsupported(sub)
    if why:
        return why
    try:
        ColumnarProgram(sub)
    except EngineError as err:
        return str(err)
    return sub


HERE, OUT = "#here", "#out:"


@dataclass(frozen=True)
class IteratedPlan:
    """A region's plan for recursion through an aggregate (``spark/columnar_iterated.py``):
    each plain rule derives only heads located here (a ``#here`` atom on the head's location,
    filled with the region's nodes), other regions' facts come in through ``#in:R``, and
    ``#out:R`` is one more application of each plain rule over the fixpoint, unfiltered: the
    heads it locates elsewhere are this region's contributions to theirs."""

    plan: Plan
    inputs: dict[str, str]
    outs: dict[str, str]
    """``#out:R`` -> R"""


def _bound_below(rule: ast.Rule, stratum: Stratum) -> bool:
    """Is the head's location a variable some positive atom below the stratum binds? Then
    its values are among the region's lower facts, which is where ``#here`` comes from."""
    loc = rule.head.location_term
    return isinstance(loc, ast.Var) and any(
        a.relation not in stratum.relations and loc in a.args for a in rule.atoms())


def iterated_plan(plan: Plan, stratum: Stratum) -> IteratedPlan | str:
    """The plan, or why this iterated stratum runs per fact."""
    plain = [r for r in stratum.rules if not r.head.aggregate()]
    if read_relations(stratum.rules) is None:
        return "a path atom is left in the stratum"
    bad = [r for r in plain if not _bound_below(r, stratum)]
    if bad:
        return f"`{bad[0]}`: its head's location is not bound by a relation below the stratum"
    heads = sorted({r.head.relation for r in plain})
    rules = [r for r in stratum.rules if r.head.aggregate()]
    for r in plain:
        loc = r.head.location_term
        here = ast.Atom(HERE, (loc,), 0)
        at = next(i for i, b in enumerate(r.body) if isinstance(b, ast.Atom)
                  and b.relation not in stratum.relations and loc in b.args)
        rules.append(replace(r, body=(*r.body[:at + 1], here, *r.body[at + 1:])))
        rules.append(replace(r, head=replace(r.head, relation=OUT + r.head.relation),
                             label=f"out:{r.label or r.head.relation}"))
    rules += [_copy_rule(n, plan.arity[n], plan.locspec.get(n, 0)) for n in heads]
    arity = {**plan.arity, HERE: 1, **{IN + n: plan.arity[n] for n in heads},
             **{OUT + n: plan.arity[n] for n in heads}}
    sub = _runnable(plan, rules, arity)
    if isinstance(sub, str):
        return sub
    return IteratedPlan(sub, {n: IN + n for n in heads}, {OUT + n: n for n in heads})
