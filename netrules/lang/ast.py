"""The NDlog abstract syntax: frozen dataclasses, every node with the source location it came from.

Locations take no part in equality, so two rules that say the same thing compare equal wherever
they were written (the planner relies on this to deduplicate generated rules).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netrules.errors import SourceLoc
from netrules.facts import Fact, Value, format_value

__all__ = [
    "Var", "Const", "ListExpr", "Call", "BinOp", "Neg", "Aggregate", "Term",
    "Atom", "Negation", "Assignment", "Comparison", "Literal",
    "PathRel", "PathPlus", "PathStar", "PathInverse", "PathConcat", "PathUnion", "PathExpr",
    "PathAtom", "AggGroup", "Rule", "Materialize", "Query", "Program", "variables_of",
]

_NOLOC = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Var:
    name: str
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    value: Value
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return format_value(self.value)


@dataclass(frozen=True)
class ListExpr:
    items: tuple[Term, ...]
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return "[" + ",".join(map(str, self.items)) + "]"


@dataclass(frozen=True)
class Call:
    """A builtin function application such as ``f_concat(S, P)``."""

    name: str
    args: tuple[Term, ...]
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"{self.name}({','.join(map(str, self.args))})"


@dataclass(frozen=True)
class BinOp:
    op: str
    left: Term
    right: Term
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"({self.left}{self.op}{self.right})"


@dataclass(frozen=True)
class Neg:
    operand: Term
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"-{self.operand}"


@dataclass(frozen=True)
class Aggregate:
    """``a_MIN<C>`` in a head; ``var`` is None for ``a_COUNT<*>``."""

    func: str  # MIN, MAX, COUNT, SUM
    var: Var | None
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"a_{self.func}<{self.var if self.var else '*'}>"


Term = Var | Const | ListExpr | Call | BinOp | Neg | Aggregate


@dataclass(frozen=True)
class Atom:
    """``relation(args)``; ``locspec`` is the index of the argument marked ``@`` (or None)."""

    relation: str
    args: tuple[Term, ...]
    locspec: int | None = 0
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        parts = [("@" if i == self.locspec else "") + str(a) for i, a in enumerate(self.args)]
        return f"{self.relation}({','.join(parts)})"

    @property
    def arity(self) -> int:
        return len(self.args)

    @property
    def location_term(self) -> Term | None:
        return None if self.locspec is None else self.args[self.locspec]

    def aggregate(self) -> tuple[int, Aggregate] | None:
        for i, a in enumerate(self.args):
            if isinstance(a, Aggregate):
                return i, a
        return None

    def ground(self) -> Fact:
        """The fact this atom denotes when every argument is a constant expression."""
        from netrules.lang.builtins import evaluate

        return Fact(self.relation, tuple(evaluate(a, {}) for a in self.args), self.locspec)


# Path patterns (Regular Datalog) -------------------------------------------------------------
# Printed in the surface syntax of ndlog.lark with the fewest parentheses that re-parse to the
# same tree: union binds loosest, then concatenation, then the postfix operators.


@dataclass(frozen=True)
class PathRel:
    """A relation name in a pattern: its first two arguments are the edge's endpoints."""

    relation: str
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return self.relation


@dataclass(frozen=True)
class PathPlus:
    """``e+``: one or more steps of ``e`` (transitive closure)."""

    inner: PathExpr
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"{_path_operand(self.inner)}+"


@dataclass(frozen=True)
class PathStar:
    """``e*``: zero or more steps of ``e``; zero steps relate a domain node to itself."""

    inner: PathExpr
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"{_path_operand(self.inner)}*"


@dataclass(frozen=True)
class PathInverse:
    """``e-``: ``e`` walked backwards (the paper's e⁻)."""

    inner: PathExpr
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"{_path_operand(self.inner)}-"


@dataclass(frozen=True)
class PathConcat:
    """``e1 . e2 . ...``: a path of ``e1`` followed by one of ``e2`` ..."""

    parts: tuple[PathExpr, ...]
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return " . ".join(f"({p})" if isinstance(p, PathUnion) else str(p) for p in self.parts)


@dataclass(frozen=True)
class PathUnion:
    """``e1 | e2 | ...``: a path of any alternative."""

    parts: tuple[PathExpr, ...]
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return " | ".join(map(str, self.parts))


PathExpr = PathRel | PathPlus | PathStar | PathInverse | PathConcat | PathUnion


def _path_operand(e: PathExpr) -> str:
    return f"({e})" if isinstance(e, PathConcat | PathUnion) else str(e)


@dataclass(frozen=True)
class PathAtom:
    """``<pattern>(X, Y)`` in a rule body; compiled away by ``patterns.compile_patterns``.

    ``locspec`` is 0 when the user wrote ``@`` on the first endpoint (allowed, never needed).
    """

    pattern: PathExpr
    args: tuple[Term, ...]
    locspec: int | None = None
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        parts = [("@" if i == self.locspec else "") + str(a) for i, a in enumerate(self.args)]
        return f"<{self.pattern}>({','.join(parts)})"


@dataclass(frozen=True)
class Negation:
    atom: Atom | PathAtom
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"not {self.atom}"


@dataclass(frozen=True)
class Assignment:
    """``X := expr``; written ``X = expr`` it is an assignment when X is still unbound."""

    var: Var
    expr: Term
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"{self.var}:={self.expr}"


@dataclass(frozen=True)
class Comparison:
    op: str  # == != < > <= >=  ("=" is normalised to "==" or an Assignment by the checker)
    left: Term
    right: Term
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"{self.left}{self.op}{self.right}"


Literal = Atom | PathAtom | Negation | Assignment | Comparison


@dataclass(frozen=True)
class AggGroup:
    """How an aggregate head's rows are formed, decided once by the planner
    (``plan.group_aggregates``) so that every evaluator groups alike.

    Positions are 0-based head positions. ``group`` are the arguments a row is unique on;
    ``payload`` the other non-aggregate arguments, taken from a body binding that achieves
    the minimum (maximum): an arg-min. Among bindings achieving it, the smallest payload by
    ``netrules.facts.sort_key`` wins, so the row does not depend on evaluation order.
    """

    pos: int
    group: tuple[int, ...]
    payload: tuple[int, ...] = ()


@dataclass(frozen=True)
class Rule:
    head: Atom
    body: tuple[Literal, ...]
    label: str | None = None
    loc: SourceLoc | None = _NOLOC
    delete: bool = False  # ``delete head :- body.``: removes stored tuples (P2/RapidNet)
    group: AggGroup | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        lab = f"{self.label} " if self.label else ""
        lab += "delete " if self.delete else ""
        if not self.body:
            return f"{lab}{self.head}."
        return f"{lab}{self.head} :- {', '.join(map(str, self.body))}."

    @property
    def grouping(self) -> AggGroup | None:
        """The aggregate's grouping (None for a plain rule): the planner's decision when it
        made one, else every non-aggregate head argument (no payload)."""
        if self.group is not None:
            return self.group
        agg = self.head.aggregate()
        if agg is None:
            return None
        return AggGroup(agg[0], tuple(i for i in range(self.head.arity) if i != agg[0]))

    def atoms(self) -> list[Atom]:
        """Positive body atoms, in order."""
        return [b for b in self.body if isinstance(b, Atom)]

    def __getstate__(self) -> dict[str, object]:
        """The rule, without what the engine cached on it (compiled joins hold closures):
        a rule travels to executors and into region snapshots."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_nr_")}


@dataclass(frozen=True)
class Materialize:
    name: str
    lifetime: float
    size: float
    keys: tuple[int, ...]
    loc: SourceLoc | None = _NOLOC
    types: tuple[str | None, ...] = ()  # declared key types (``keys(4:list)``), by key

    def __str__(self) -> str:
        def f(x: float) -> str:
            return "infinity" if x == float("inf") else str(int(x))

        types = self.types or (None,) * len(self.keys)
        keys = ",".join(f"{k}:{t}" if t else str(k) for k, t in zip(self.keys, types, strict=True))
        return f"materialize({self.name},{f(self.lifetime)},{f(self.size)},keys({keys}))."


@dataclass(frozen=True)
class Query:
    atom: Atom
    loc: SourceLoc | None = _NOLOC

    def __str__(self) -> str:
        return f"?- {self.atom}."


@dataclass(frozen=True)
class Program:
    """A parsed program: rules (bodied), ground facts, table declarations and queries.

    ``rules`` never hold path patterns: the front end compiles them into plain rules over
    auxiliary relations (``patterns``: name -> the pattern it holds). ``written`` keeps the rules
    as the user wrote them, so printing a program shows its patterns and re-parses to an equal
    program.
    """

    rules: tuple[Rule, ...]
    facts: tuple[Fact, ...] = ()
    materialized: tuple[Materialize, ...] = ()
    queries: tuple[Query, ...] = ()
    file: str = field(default="<program>", compare=False)
    source: str = field(default="", compare=False, repr=False)
    written: tuple[Rule, ...] = field(default=(), compare=False, repr=False)
    patterns: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    fact_locs: tuple[SourceLoc | None, ...] = field(default=(), compare=False, repr=False)

    def __str__(self) -> str:
        out = [str(m) for m in self.materialized]
        out += [str(r) for r in (self.written or self.rules)]
        out += [f"{f}." for f in self.facts]
        out += [str(q) for q in self.queries]
        return "\n".join(out) + "\n"

    def relations(self) -> set[str]:
        names = {r.head.relation for r in self.rules}
        for r in self.rules:
            names |= {a.relation for a in r.atoms()}
            names |= {b.atom.relation for b in r.body if isinstance(b, Negation)}
        return names | {f.relation for f in self.facts}

    def derived(self) -> set[str]:
        """Relations that some rule derives (IDB)."""
        return {r.head.relation for r in self.rules}


def variables_of(term: object) -> set[str]:
    """Names of the variables occurring in a term, atom or literal (not counting ``_``)."""
    if isinstance(term, Var):
        return set() if term.name == "_" else {term.name}
    if isinstance(term, Const):
        return set()
    if isinstance(term, ListExpr | Call):
        out: set[str] = set()
        for t in term.items if isinstance(term, ListExpr) else term.args:
            out |= variables_of(t)
        return out
    if isinstance(term, BinOp):
        return variables_of(term.left) | variables_of(term.right)
    if isinstance(term, Neg):
        return variables_of(term.operand)
    if isinstance(term, Aggregate):
        return variables_of(term.var) if term.var else set()
    if isinstance(term, Atom | PathAtom):
        out = set()
        for t in term.args:
            out |= variables_of(t)
        return out
    if isinstance(term, Negation):
        return variables_of(term.atom)
    if isinstance(term, Assignment):
        return variables_of(term.var) | variables_of(term.expr)
    if isinstance(term, Comparison):
        return variables_of(term.left) | variables_of(term.right)
    raise TypeError(f"not an NDlog term: {term!r}")
