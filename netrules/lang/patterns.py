"""Path patterns (Regular Datalog, paper 002) -> plain NDlog rules over auxiliary relations.

A body literal ``<pattern>(X, Y)`` is rewritten into an atom over a relation holding exactly the
pairs the pattern relates, defined by ordinary rules (linear recursion for closure). Every
engine and strategy then maintains patterns, insertions and deletions alike, with no change:
the planner, stratifier and localizer only ever see plain rules.

Compilation, in order:

1. Inverses are pushed down to relation names (``(r . s)-`` = ``s- . r-``), so that only
   ``r-`` remains.
2. The pattern is split into "matches the empty path?" and an epsilon-free remainder
   (``r* . s`` = ``s | r+ . s``): the empty path only matters at the top of a literal, where
   it contributes ``X = Y`` over the *domain* -- every node at either end of a tuple of any
   relation named in the literal. Inside a concatenation it never needs a domain.
3. Each distinct compound sub-pattern becomes one auxiliary relation, shared by every rule
   and literal that needs it, with a readable name (``pstransfer_plus``).

Located patterns (relations carrying ``@`` on their first argument) compile to rules located
at their first endpoint; concatenations are nested to the right and inverses get their own
relation, so that every generated body is link-restricted and localizable.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from netrules.errors import Diagnostic, ProgramError, SourceLoc
from netrules.lang import ast

__all__ = ["compile_patterns", "push_inverse", "split_empty", "pattern_relations",
           "check_regular"]

_MAX_NAME = 48


def pattern_relations(e: ast.PathExpr) -> list[ast.PathRel]:
    """Every relation occurrence in a pattern, left to right."""
    if isinstance(e, ast.PathRel):
        return [e]
    if isinstance(e, ast.PathConcat | ast.PathUnion):
        return [r for p in e.parts for r in pattern_relations(p)]
    return pattern_relations(e.inner)


def push_inverse(e: ast.PathExpr, inv: bool = False) -> ast.PathExpr:
    """An equivalent pattern in which ``-`` applies to relation names only."""
    if isinstance(e, ast.PathRel):
        return ast.PathInverse(e) if inv else e
    if isinstance(e, ast.PathInverse):
        return push_inverse(e.inner, not inv)
    if isinstance(e, ast.PathPlus):
        return ast.PathPlus(push_inverse(e.inner, inv))
    if isinstance(e, ast.PathStar):
        return ast.PathStar(push_inverse(e.inner, inv))
    parts = [push_inverse(p, inv) for p in e.parts]
    if isinstance(e, ast.PathConcat):
        return _concat(list(reversed(parts)) if inv else parts)
    return _union(parts)


def _concat(parts: list[ast.PathExpr]) -> ast.PathExpr:
    flat: list[ast.PathExpr] = []
    for p in parts:
        flat.extend(p.parts if isinstance(p, ast.PathConcat) else (p,))
    return flat[0] if len(flat) == 1 else ast.PathConcat(tuple(flat))


def _union(parts: list[ast.PathExpr]) -> ast.PathExpr:
    flat: list[ast.PathExpr] = []
    for p in parts:
        for q in p.parts if isinstance(p, ast.PathUnion) else (p,):
            if q not in flat:
                flat.append(q)
    return flat[0] if len(flat) == 1 else ast.PathUnion(tuple(flat))


def split_empty(e: ast.PathExpr) -> tuple[bool, ast.PathExpr]:
    """(does ``e`` match the empty path, an epsilon-free pattern for its non-empty paths).

    Expects inverses pushed down. Every relation is a set of edges, so the epsilon-free part
    is never empty.
    """
    if isinstance(e, ast.PathRel | ast.PathInverse):
        return False, e
    if isinstance(e, ast.PathPlus):
        empty, f = split_empty(e.inner)
        return empty, (f if isinstance(f, ast.PathPlus) else ast.PathPlus(f))
    if isinstance(e, ast.PathStar):
        _, f = split_empty(e.inner)
        return True, (f if isinstance(f, ast.PathPlus) else ast.PathPlus(f))
    if isinstance(e, ast.PathUnion):
        splits = [split_empty(p) for p in e.parts]
        return any(n for n, _ in splits), _union([f for _, f in splits])
    empty, acc = split_empty(e.parts[0])
    for p in e.parts[1:]:
        n, f = split_empty(p)
        alts = [_concat([acc, f])] + ([f] if empty else []) + ([acc] if n else [])
        empty, acc = empty and n, _union(alts)
    return empty, acc


def _readable(e: ast.PathExpr) -> str:
    if isinstance(e, ast.PathRel):
        return e.relation
    if isinstance(e, ast.PathInverse):
        return _readable(e.inner) + "_inv"
    if isinstance(e, ast.PathPlus):
        return _readable(e.inner) + "_plus"
    if isinstance(e, ast.PathStar):
        return _readable(e.inner) + "_star"
    sep = "_then_" if isinstance(e, ast.PathConcat) else "_or_"
    return sep.join(_readable(p) for p in e.parts)


@dataclass
class _RelInfo:
    arity: int
    locspec: int | None
    loc: SourceLoc | None
    declared_only: bool = False  # only materialize names it: the first pattern sets locspec


@dataclass
class _Compiler:
    """Holds the auxiliary relations made so far, so identical sub-patterns are shared."""

    info: dict[str, _RelInfo]
    taken: set[str]
    derived: set[str]
    names: dict[tuple, str] = field(default_factory=dict)
    rules: list[ast.Rule] = field(default_factory=list)
    patterns: list[tuple[str, str]] = field(default_factory=list)

    def _name(self, key: tuple, wanted: str) -> tuple[str, bool]:
        """The relation for ``key`` and whether it is new."""
        if key in self.names:
            return self.names[key], False
        base = wanted if len(wanted) <= _MAX_NAME else f"path{len(self.names) + 1}"
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        self.names[key] = name
        return name, True

    def _derived(self, e: ast.PathExpr) -> bool:
        """Whether the atom for ``e`` (located mode) reads a derived relation."""
        return not isinstance(e, ast.PathRel) or e.relation in self.derived

    def _located(self, e: ast.PathExpr) -> bool:
        return any(self.info[r.relation].locspec == 0 for r in pattern_relations(e))

    def _base_atom(self, rel: str, s: ast.Term, t: ast.Term, loc: SourceLoc | None) -> ast.Atom:
        info = self.info[rel]
        pad = tuple(ast.Var("_") for _ in range(info.arity - 2))
        return ast.Atom(rel, (s, t, *pad), info.locspec, loc)

    def atom(self, e: ast.PathExpr, s: ast.Term, t: ast.Term, loc: SourceLoc | None,
             located: bool) -> ast.Atom:
        """An atom holding when the epsilon-free pattern ``e`` relates ``s`` to ``t``."""
        if isinstance(e, ast.PathRel):
            return self._base_atom(e.relation, s, t, loc)
        if isinstance(e, ast.PathInverse) and not located:
            return self._base_atom(e.inner.relation, t, s, loc)  # type: ignore[union-attr]
        name = self.aux(e, loc, located)
        return ast.Atom(name, (s, t), 0 if located else None, loc)

    def _add(self, name: str, head: tuple[ast.Term, ast.Term], body: list[ast.Literal],
             located: bool, loc: SourceLoc | None) -> None:
        self.rules.append(ast.Rule(ast.Atom(name, head, 0 if located else None, loc),
                                   tuple(body), None, loc))

    def aux(self, e: ast.PathExpr, loc: SourceLoc | None, located: bool,
            wanted: str | None = None) -> str:
        """The auxiliary relation for epsilon-free compound ``e``, defined on first use."""
        name, new = self._name(("pattern", str(e)), wanted or _readable(e))
        if not new:
            return name
        x, y, z = ast.Var("X"), ast.Var("Y"), ast.Var("Z")
        if isinstance(e, ast.PathInverse):  # located: stored at the other end, so a copy
            self._add(name, (x, y), [self.atom(e.inner, y, x, loc, located)], located, loc)
        elif isinstance(e, ast.PathPlus):
            self._add(name, (x, y), [self.atom(e.inner, x, y, loc, located)], located, loc)
            self._add(name, (x, y), [self.atom(e.inner, x, z, loc, located),
                                     ast.Atom(name, (z, y), 0 if located else None, loc)],
                      located, loc)
        elif isinstance(e, ast.PathUnion):
            for p in e.parts:
                self._add(name, (x, y), [self.atom(p, x, y, loc, located)], located, loc)
        elif isinstance(e, ast.PathConcat):
            if located:  # right-nested, so each body spans two locations sharing a variable
                first, rest = e.parts[0], _concat(list(e.parts[1:]))
                if self._derived(first) and not self._derived(rest):
                    # the localizer would evaluate at the derived atom's node X, where the
                    # base edge at Z cannot be shipped; join at Z through first's inverse
                    head = self.atom(ast.PathInverse(first), z, x, loc, located)
                else:
                    head = self.atom(first, x, z, loc, located)
                self._add(name, (x, y), [head, self.atom(rest, z, y, loc, located)], located,
                          loc)
            else:
                ends = [x, *(ast.Var(f"Z{i}") for i in range(1, len(e.parts))), y]
                body = [self.atom(p, ends[i], ends[i + 1], loc, located)
                        for i, p in enumerate(e.parts)]
                self._add(name, (x, y), body, located, loc)
        else:  # pragma: no cover - split_empty removes stars
            raise AssertionError(f"not epsilon-free: {e}")
        self.patterns.append((name, str(e)))
        return name

    def literal(self, lit: ast.PathAtom) -> ast.Atom:
        """The plain atom replacing a path literal."""
        pattern = push_inverse(lit.pattern)
        located = self._located(pattern)
        empty, f = split_empty(pattern)
        s, t = lit.args
        if not empty:
            if isinstance(f, ast.PathRel) or (isinstance(f, ast.PathInverse) and not located):
                return self.atom(f, s, t, lit.loc, located)
            return ast.Atom(self.aux(f, lit.loc, located, _readable(pattern)), (s, t),
                            0 if located else None, lit.loc)
        domain = sorted({r.relation for r in pattern_relations(pattern)})
        name, new = self._name(("empty", str(f), tuple(domain)), _readable(pattern))
        if new:
            x, y, w = ast.Var("X"), ast.Var("Y"), ast.Var("W")
            self._add(name, (x, y), [self.atom(f, x, y, lit.loc, located)], located, lit.loc)
            for rel in domain:  # X = Y over the nodes of the literal's relations
                self._add(name, (x, x), [self._base_atom(rel, x, w, lit.loc)], located,
                          lit.loc)
                self._add(name, (y, y), [self._base_atom(rel, w, y, lit.loc)], located,
                          lit.loc)
            self.patterns.append((name, f"{pattern} (empty path over {', '.join(domain)})"))
        return ast.Atom(name, (s, t), 0 if located else None, lit.loc)


def _path_literals(rule: ast.Rule) -> Iterator[ast.PathAtom]:
    for b in rule.body:
        if isinstance(b, ast.PathAtom):
            yield b
        elif isinstance(b, ast.Negation) and isinstance(b.atom, ast.PathAtom):
            yield b.atom


def _relation_info(program: ast.Program) -> dict[str, _RelInfo]:
    """Arity and location of every relation the program mentions outside patterns."""
    info: dict[str, _RelInfo] = {}
    for r in program.rules:
        atoms = [r.head, *(b for b in r.body if isinstance(b, ast.Atom)),
                 *(b.atom for b in r.body
                   if isinstance(b, ast.Negation) and isinstance(b.atom, ast.Atom))]
        for a in atoms:
            info.setdefault(a.relation, _RelInfo(a.arity, a.locspec, a.loc))
    for f in program.facts:
        info.setdefault(f.relation, _RelInfo(len(f.args), f.loc, None))
    for m in program.materialized:  # declared only: binary, located as patterns use it
        info.setdefault(m.name, _RelInfo(2, None, m.loc, declared_only=True))
    return info


def _validate(program: ast.Program, info: dict[str, _RelInfo]) -> list[Diagnostic]:
    src = program.source
    diags: list[Diagnostic] = []

    def err(code: str, msg: str, loc: SourceLoc | None,
            notes: tuple[tuple[SourceLoc | None, str], ...] = ()) -> None:
        diags.append(Diagnostic(code, msg, loc, notes, source=src))

    for rule in program.rules:
        for lit in _path_literals(rule):
            if len(lit.args) != 2:
                err("NOT_BINARY", f"a path pattern relates two nodes: write <{lit.pattern}>(X, Y)"
                    f", not {len(lit.args)} argument(s)", lit.loc)
            located: list[ast.PathRel] = []
            unlocated: list[ast.PathRel] = []
            ok = True
            for r in pattern_relations(lit.pattern):
                i = info.get(r.relation)
                if i is not None and i.declared_only:  # located as this literal says
                    i.locspec, i.loc, i.declared_only = lit.locspec, lit.loc, False
                if i is None:
                    err("UNKNOWN_RELATION", f"unknown relation {r.relation} in a path pattern: "
                        "no rule, fact or declaration mentions it. Hint: declare a base "
                        f"relation with materialize({r.relation}, infinity, infinity, "
                        "keys(1,2)).", r.loc)
                    ok = False
                elif i.arity < 2:
                    err("NOT_BINARY", f"{r.relation} has {i.arity} argument(s); a path pattern "
                        "needs relations whose first two arguments are the endpoints", r.loc,
                        ((i.loc, f"{r.relation} used with {i.arity} argument(s)"),))
                    ok = False
                elif i.locspec not in (None, 0):
                    err("LOCSPEC", f"{r.relation} is located by its argument {i.locspec + 1}; "
                        "in a path pattern a located relation must carry '@' on its first "
                        "endpoint", r.loc, ((i.loc, f"{r.relation} located here"),))
                    ok = False
                else:
                    (located if i.locspec == 0 else unlocated).append(r)
            if ok and located and unlocated:
                a, b = located[0], unlocated[0]
                err("LOCSPEC", f"a path pattern cannot mix located and unlocated relations: "
                    f"{a.relation} is located, {b.relation} is not", b.loc,
                    ((info[a.relation].loc, f"{a.relation} located here"),))
            elif ok and lit.locspec == 0 and not located:
                err("LOCSPEC", "'@' on a path pattern over unlocated relations", lit.loc)
    return diags


def compile_patterns(program: ast.Program) -> ast.Program:
    """The program with every path literal compiled into plain rules (unchanged if none).

    Raises ProgramError, every problem located, for unknown or non-binary relations and for
    location clashes. Auxiliary rules are placed just before the first rule that uses them.
    """
    if not any(True for r in program.rules for _ in _path_literals(r)):
        return program
    info = _relation_info(program)
    diags = _validate(program, info)
    if diags:
        diags.sort(key=Diagnostic.sort_key)
        raise ProgramError(f"{len(diags)} error(s) in {program.file}", diagnostics=diags,
                           code=diags[0].code)
    taken = set(info) | {r.head.relation for r in program.rules}
    comp = _Compiler(info, taken, {r.head.relation for r in program.rules})
    out: list[ast.Rule] = []
    for rule in program.rules:
        body: list[ast.Literal] = []
        for b in rule.body:
            if isinstance(b, ast.PathAtom):
                body.append(comp.literal(b))
            elif isinstance(b, ast.Negation) and isinstance(b.atom, ast.PathAtom):
                body.append(ast.Negation(comp.literal(b.atom), b.loc))
            else:
                body.append(b)
        out.extend(comp.rules)
        comp.rules.clear()
        out.append(replace(rule, body=tuple(body)))
    return replace(program, rules=tuple(out), written=program.rules,
                   patterns=tuple(comp.patterns))


def check_regular(program: ast.Program) -> None:
    """Reject recursion other than closure, as Regular Datalog does (paper 002, test 16).

    NDlog itself allows any stratified recursion; this is the opt-in check for programs meant
    to stay in the RD fragment (NLOGSPACE evaluation, decidable containment). The dependency
    graph is built from the rules as written, a pattern depending on its relations.
    """
    import networkx as nx

    rules = program.written or program.rules
    g = nx.DiGraph()
    sites: dict[tuple[str, str], ast.Rule] = {}
    for r in rules:
        g.add_node(r.head.relation)
        for b in r.body:
            a = b.atom if isinstance(b, ast.Negation) else b
            rels = ([a.relation] if isinstance(a, ast.Atom) else
                    [p.relation for p in pattern_relations(a.pattern)]
                    if isinstance(a, ast.PathAtom) else [])
            for rel in rels:
                g.add_edge(rel, r.head.relation)
                sites.setdefault((rel, r.head.relation), r)
    diags = []
    for comp in nx.strongly_connected_components(g):
        cyc = [(u, v) for u, v in g.subgraph(comp).edges]
        if cyc:
            u, v = min(cyc)
            rule = sites[(u, v)]
            diags.append(Diagnostic(
                "NOT_REGULAR", f"{v} depends on itself through {', '.join(sorted(comp))}: "
                "Regular Datalog allows recursion only as closure; write it with a path "
                "pattern such as <r+>(X, Y)", rule.loc, source=program.source))
    if diags:
        diags.sort(key=Diagnostic.sort_key)
        raise ProgramError(f"{len(diags)} error(s) in {program.file}", diagnostics=diags,
                           code="NOT_REGULAR")
