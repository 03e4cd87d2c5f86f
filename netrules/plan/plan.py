"""A checked program -> an executable plan: localized rules, strata and delta rules.

The plan is what every engine runs. Relations are located by the ``@`` of their atoms; the
relations the localization introduces are marked as auxiliary so that output hides them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from netrules.errors import Diagnostic, PlanError
from netrules.lang import ast
from netrules.lang.events import PERIODIC, reading
from netrules.plan.delta import DeltaRule, delta_rules
from netrules.plan.localize import localize
from netrules.plan.stratify import Stratum, stratify

__all__ = ["Plan", "plan_program", "group_aggregates"]


def group_aggregates(rules: tuple[ast.Rule, ...], keys: dict[str, tuple[int, ...]],
                     source: str = "") -> tuple[ast.Rule, ...]:
    """Decide, once for every evaluator, how each aggregate head groups (``Rule.grouping``).

    With a declared key on the head relation the group is the key's positions (1-based in
    ``keys(...)``; the location argument is always part of it, since every node holds its own
    table), and the other non-aggregate arguments are an arg-min/arg-max *payload*; without
    one, every non-aggregate argument groups, as before. A payload has no meaning for
    ``a_COUNT``/``a_SUM``, which is refused.
    """
    out = []
    diags: list[Diagnostic] = []
    for r in rules:
        agg = r.head.aggregate()
        if agg is None or r.head.relation not in keys:
            out.append(r)
            continue
        pos, fn = agg
        declared = {k - 1 for k in keys[r.head.relation]}
        if r.head.locspec is not None:
            declared.add(r.head.locspec)
        group = tuple(i for i in range(r.head.arity) if i in declared and i != pos)
        payload = tuple(i for i in range(r.head.arity) if i not in declared and i != pos)
        if payload and fn.func not in ("MIN", "MAX"):
            diags.append(Diagnostic(
                "AGGREGATE", f"{r.head.relation}'s key leaves out argument "
                f"{payload[0] + 1}, which a_{fn.func} cannot choose (only a_MIN/a_MAX carry a "
                "payload from the row achieving them)", r.head.loc, source=source))
        out.append(replace(r, group=ast.AggGroup(pos, group, payload)))
    if diags:
        raise PlanError(f"{len(diags)} error(s)", diagnostics=diags, code=diags[0].code)
    return tuple(out)


@dataclass(frozen=True)
class Plan:
    program: ast.Program
    rules: tuple[ast.Rule, ...]
    strata: tuple[Stratum, ...]
    aux: frozenset[str]
    locspec: dict[str, int | None] = field(hash=False)
    arity: dict[str, int] = field(hash=False)
    keys: dict[str, tuple[int, ...]] = field(hash=False)
    # event rules (``netrules.lang.events``): run by ``netrules.engine.reactive``, never as views
    reactive: tuple[ast.Rule, ...] = ()
    events: frozenset[str] = frozenset()
    # event rules that a table's insertion fires (P2's reading, ``Reading.is_trigger_rule``)
    triggered: tuple[ast.Rule, ...] = ()

    @property
    def base(self) -> frozenset[str]:
        """Relations no rule derives: the ones collectors and facts files feed."""
        derived = {r.head.relation for r in self.rules}
        return frozenset(set(self.arity) - derived)

    @property
    def derived(self) -> frozenset[str]:
        return frozenset(r.head.relation for r in self.rules)

    @property
    def visible(self) -> frozenset[str]:
        """Derived relations a user wrote (auxiliary relations excluded)."""
        return self.derived - self.aux

    @property
    def external(self) -> dict[str, int]:
        """Events fed from outside (P2's reading: no event rule raises them), by arity."""
        heads = {r.head.relation for r in self.reactive} | {PERIODIC}
        return {a.relation: a.arity for r in self.reactive for a in r.atoms()
                if a.relation in self.events and a.relation not in heads}

    def delta_rules(self) -> list[DeltaRule]:
        return [d for r in self.rules for d in delta_rules(r)]

    def describe(self) -> str:
        """Human-readable strata and localized rules (``netrules check``)."""
        out = [f"base relations: {', '.join(sorted(self.base)) or '(none)'}"]
        for s in self.strata:
            kind = ["recursive" if s.recursive else "non-recursive"]
            if s.aggregates:
                kind.append("aggregates")
            if s.negation:
                kind.append("negation")
            if s.iterated:
                kind.append("iterated: recursion through an aggregate")
            out.append(f"stratum {s.index}: {', '.join(sorted(s.relations))} "
                       f"({', '.join(kind)})")
            for r in s.rules:
                aux = "  [shipped]" if r.head.relation in self.aux else ""
                out.append(f"  {r}{aux}")
        out.append(f"delta rules: {len(self.delta_rules())}")
        if self.reactive:
            out.append("event rules (fire on an event; their heads persist):")
            out.extend(f"  {r}" for r in self.reactive)
            heads = {r.head.relation for r in self.reactive} | {PERIODIC}
            outside = {a.relation for r in self.reactive for a in r.atoms()} & self.events
            if outside - heads:
                out.append(f"events fed from outside: {', '.join(sorted(outside - heads))}")
        return "\n".join(out)


def plan_program(program: ast.Program, *, localized: bool = True) -> Plan:
    """Localize (unless told not to) and stratify a checked program."""
    rd = reading(program)
    fired = rd.fired
    reactive = tuple(r for r in program.rules if rd.is_event_rule(r))
    views = tuple(r for r in program.rules if not rd.is_event_rule(r))
    derived = {r.head.relation for r in views}
    rules, aux = (localize(views, derived, program.source) if localized else (views, {}))
    keys = {m.name: m.keys for m in program.materialized}
    rules = group_aggregates(rules, keys, program.source)
    strata = stratify(rules, program.source)
    locspec: dict[str, int | None] = {}
    arity: dict[str, int] = {}
    for r in (*rules, *reactive):
        for a in [r.head, *r.atoms(), *(b.atom for b in r.body if isinstance(b, ast.Negation))]:
            if a.relation in fired:
                continue  # one-step events are no table
            locspec.setdefault(a.relation, a.locspec)
            arity.setdefault(a.relation, a.arity)
    for f in program.facts:
        locspec.setdefault(f.relation, f.loc)
        arity.setdefault(f.relation, len(f.args))
    triggered = tuple(r for r in reactive if rd.is_trigger_rule(r))
    return Plan(program, rules, tuple(strata), frozenset(aux), locspec, arity, keys,
                reactive, rd.events, triggered)
