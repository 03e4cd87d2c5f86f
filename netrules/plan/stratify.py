"""Predicate dependency graph and stratification; unstratifiable programs are rejected.

A rule ``h :- ..., b, ..., not n`` gives edges b -> h and n -> h; the edge is *strict* when it
goes through negation or when h's rule aggregates (its result must see all of b first). A cycle
through negation has no meaning here, and the error points at every negated literal on it, as
Soufflé's ErrorReport does. A cycle through an aggregate (recursion through ``a_MIN``, the
path-vector program Soufflé and DDlog refuse) is accepted as an *iterated* stratum.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from netrules.errors import Diagnostic, PlanError, SourceLoc
from netrules.lang import ast

__all__ = ["Stratum", "dependency_graph", "stratify"]


@dataclass(frozen=True)
class Stratum:
    """Relations evaluated together to a fixpoint, and the rules deriving them."""

    index: int
    relations: frozenset[str]
    rules: tuple[ast.Rule, ...]
    recursive: bool
    iterated: bool = False
    """Recursion runs through an aggregate (path vector over neighbours' best routes): the
    stratum means the fixpoint of applying all its rules at once, from empty, over and over
    (see ``engine.reference.iterate_stratum``)."""

    @property
    def aggregates(self) -> bool:
        return any(r.head.aggregate() for r in self.rules)

    @property
    def negation(self) -> bool:
        return any(isinstance(b, ast.Negation) for r in self.rules for b in r.body)


def dependency_graph(rules: tuple[ast.Rule, ...]) -> nx.DiGraph:
    """Edges body relation -> head relation with ``strict`` and the literal locations."""
    g = nx.DiGraph()
    for r in rules:
        g.add_node(r.head.relation)
        agg = r.head.aggregate() is not None
        for b in r.body:
            if isinstance(b, ast.Atom | ast.Negation):
                a = b if isinstance(b, ast.Atom) else b.atom
                strict = isinstance(b, ast.Negation) or agg
                why = "negated" if isinstance(b, ast.Negation) else "aggregated"
                if g.has_edge(a.relation, r.head.relation):
                    data = g.edges[a.relation, r.head.relation]
                    data["strict"] = data["strict"] or strict
                    if strict:
                        data["sites"].append((b.loc, why, r.head.relation))
                else:
                    g.add_edge(a.relation, r.head.relation, strict=strict,
                               sites=[(b.loc, why, r.head.relation)] if strict else [])
    return g


def stratify(rules: tuple[ast.Rule, ...], source: str = "") -> list[Stratum]:
    """Strata in evaluation order (one per strongly connected component of derived relations)."""
    g = dependency_graph(rules)
    cond = nx.condensation(g)
    diags: list[Diagnostic] = []
    for comp in cond.nodes:
        members = cond.nodes[comp]["members"]
        sub = g.subgraph(members)
        bad = [(u, v, d) for u, v, d in sub.edges(data=True)
               if any(why == "negated" for _, why, _ in d["sites"])]
        if bad:
            names = ", ".join(sorted(members))
            notes: list[tuple[SourceLoc | None, str]] = []
            for u, _v, d in bad:
                for loc, why, head in (x for x in d["sites"] if x[1] == "negated"):
                    notes.append((loc, f"{u} is {why} in a rule for {head}, which depends on {u}"))
            notes.sort(key=lambda n: (n[0].line, n[0].column) if n[0] else (0, 0))
            first = notes[0][0] if notes else None
            diags.append(Diagnostic(
                "UNSTRATIFIABLE",
                f"unable to stratify relation(s) {{{names}}}: recursion through negation",
                first, tuple(notes), source=source))
    if diags:
        raise PlanError(diags[0].message, diagnostics=diags, code="UNSTRATIFIABLE")
    derived = {r.head.relation for r in rules}
    strata: list[Stratum] = []
    for comp in nx.topological_sort(cond):
        members = frozenset(cond.nodes[comp]["members"]) & derived
        if not members:
            continue
        comp_rules = tuple(r for r in rules if r.head.relation in members)
        recursive = len(members) > 1 or any(
            a.relation in members for r in comp_rules for a in r.atoms())
        iterated = any(r.head.aggregate() and any(a.relation in members for a in r.atoms())
                       for r in comp_rules)
        strata.append(Stratum(len(strata), members, comp_rules, recursive, iterated))
    return strata
