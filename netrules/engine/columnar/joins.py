"""Rule bodies evaluated a whole table of bindings at a time.

A binding table holds one id column per bound variable and, per positive body atom already
matched, the row it matched (supports are made of those rows). A join step probes the atom's
relation with the bound columns (``Relation.probe``), gathers, filters by the view the step
reads, and adds the new variables' columns: a bounded number of NumPy calls per step whatever
the number of bindings. Arithmetic on small non-negative integers runs on the columns; every
other expression (``f_concat``, ``f_member``, user builtins, lists, strings) runs per row, on
the rows that reach it only, through the language's own ``builtins.evaluate``.

The body order starts from the atom (or head) the caller names and then takes, greedily,
conditions as soon as their variables are bound and atoms with the most bound arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from netrules.engine.columnar.relation import Relation
from netrules.engine.columnar.values import SMALL, Values
from netrules.errors import EvalError
from netrules.lang import ast
from netrules.lang.builtins import BuiltinError, compare, evaluate

__all__ = ["Table", "Join", "Reader", "bind_head", "compile_join", "head_columns"]

#: Builtins with a vectorised path over cons cells (``values.py``).
_LIST_OPS = ("f_concat", "f_member")

#: A reader says, for a relation and candidate rows, which rows the step may see.
Reader = Callable[[Relation, np.ndarray], np.ndarray]


@dataclass
class Table:
    """Bindings: ``n`` rows, a column per variable, the matched row per positive atom."""

    n: int
    vars: dict[str, np.ndarray] = field(default_factory=dict)
    atoms: dict[int, np.ndarray] = field(default_factory=dict)

    def take(self, idx: np.ndarray) -> Table:
        return Table(len(idx), {k: v[idx] for k, v in self.vars.items()},
                     {k: v[idx] for k, v in self.atoms.items()})


def bind_head(rule: ast.Rule, rel: Relation, rows: np.ndarray) -> Table:
    """A table binding the head's variables from the given rows of the head relation
    (repeated variables filtered), with ``#k``: each binding's index into ``rows``. Solving
    the body from it asks whether, and how, those facts are derived."""
    tab = Table(len(rows))
    keep = np.ones(len(rows), dtype=bool)
    for p, t in enumerate(rule.head.args):
        if isinstance(t, ast.Var) and t.name != "_":
            col = rel.column(rows, p)
            if t.name in tab.vars:
                keep &= tab.vars[t.name] == col
            else:
                tab.vars[t.name] = col
    tab.vars["#k"] = np.arange(len(rows), dtype=np.int64)
    return tab if keep.all() else tab.take(np.flatnonzero(keep))


def _where(rule: ast.Rule) -> str:
    return f"{rule.loc}: " if rule.loc else ""


def _vars(term: object) -> set[str]:
    return {v for v in ast.variables_of(term) if v != "_"}


class _Eval:
    """Expressions over a table, vectorised where the values allow it."""

    def __init__(self, values: Values, rule: ast.Rule) -> None:
        self.values, self.rule = values, rule

    def fail(self, err: BuiltinError, lit: object) -> EvalError:
        return EvalError(f"{_where(self.rule)}{err} (in `{lit}` of `{self.rule}`)")

    def term(self, t: object, tab: Table, lit: object) -> np.ndarray:
        if isinstance(t, ast.Var):
            return tab.vars[t.name]
        if isinstance(t, ast.Const):
            return np.full(tab.n, self.values.encode(t.value), dtype=np.int64)
        if isinstance(t, ast.BinOp) and t.op in ("+", "-", "*"):
            a, b = self.term(t.left, tab, lit), self.term(t.right, tab, lit)
            small = (a < SMALL) & (b < SMALL)
            with np.errstate(over="ignore"):
                r = a + b if t.op == "+" else a - b if t.op == "-" else a * b
            fast = small & (r >= 0) & (r < SMALL)
            if fast.all():
                return r
            out = r.copy()
            slow = np.flatnonzero(~fast)
            out[slow] = self.per_row(t, tab, slow, lit)
            return out
        if isinstance(t, ast.Call) and t.name in _LIST_OPS and len(t.args) == 2:
            return self._list_op(t, tab, lit)
        return self.per_row(t, tab, np.arange(tab.n), lit)

    def _list_op(self, t: ast.Call, tab: Table, lit: object, intern: bool = True
                 ) -> np.ndarray:
        """``f_concat(X, L)`` (prepend) and ``f_member(L, X)`` on cons cells, vectorised for
        the rows whose arguments have the usual shapes; the others run per row. With
        ``intern`` false a list never stored comes out as -1 (``Values.cons_found``)."""
        a, b = self.term(t.args[0], tab, lit), self.term(t.args[1], tab, lit)
        vals = self.values
        out = np.zeros(tab.n, dtype=np.int64)
        if t.name == "f_member":
            fast = vals.is_list(a)
            out[fast] = vals.member(a[fast], b[fast])
        else:
            cons = vals.cons if intern else vals.cons_found
            la, lb = vals.is_list(a), vals.is_list(b)
            fast = ~la
            both = fast & ~lb
            tails = b.copy()
            if both.any():
                tails[both] = cons(b[both], np.full(int(both.sum()), vals.nil))
            out[fast] = cons(a[fast], tails[fast])
        slow = np.flatnonzero(~fast)
        if len(slow):
            out[slow] = self.per_row(t, tab, slow, lit)
        return out

    def check(self, t: object, tab: Table, lit: object) -> np.ndarray:
        """``term`` for comparing with a bound variable: a prepend is looked up, not
        interned, so checking a fact's derivations makes no cells (a route checked against
        each neighbour's best path made one per neighbour)."""
        if isinstance(t, ast.Call) and t.name == "f_concat" and len(t.args) == 2:
            return self._list_op(t, tab, lit, intern=False)
        return self.term(t, tab, lit)

    def per_row(self, t: object, tab: Table, idx: np.ndarray, lit: object) -> np.ndarray:
        names = sorted(_vars(t))
        cols = [self.values.decode_column(tab.vars[v][idx]) for v in names]
        enc = self.values.encode
        out = np.empty(len(idx), dtype=np.int64)
        try:
            for i, vals in enumerate(zip(*cols, strict=True) if names else
                                     ((),) * len(idx)):
                out[i] = enc(evaluate(t, dict(zip(names, vals, strict=True))))
        except BuiltinError as err:
            raise self.fail(err, lit) from None
        return out

    def compare(self, op: str, a: np.ndarray, b: np.ndarray, lit: object) -> np.ndarray:
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        small = (a < SMALL) & (b < SMALL)
        out = np.zeros(len(a), dtype=bool)
        if op == "<":
            out[small] = a[small] < b[small]
        elif op == ">":
            out[small] = a[small] > b[small]
        elif op == "<=":
            out[small] = a[small] <= b[small]
        else:
            out[small] = a[small] >= b[small]
        slow = np.flatnonzero(~small)
        if len(slow):
            da = self.values.decode_column(a[slow])
            db = self.values.decode_column(b[slow])
            try:
                out[slow] = [compare(op, x, y) for x, y in zip(da, db, strict=True)]
            except BuiltinError as err:
                raise self.fail(err, lit) from None
        return out


@dataclass
class _Step:
    kind: str  # atom, neg, assign, cmp
    lit: object
    atom_index: int = -1


@dataclass
class Join:
    """One rule body in one evaluation order; ``run`` takes the starting table."""

    rule: ast.Rule
    steps: list[_Step]
    start_vars: frozenset[str]

    def run(self, rels: Mapping[str, Relation], values: Values, tab: Table,
            read: Callable[[int], Reader], read_neg: Reader) -> Table:
        """Extend ``tab`` through every step; ``read(i)`` is the view body atom i reads,
        ``read_neg`` the view negated atoms read."""
        ev = _Eval(values, self.rule)
        for st in self.steps:
            if tab.n == 0:
                return tab
            if st.kind == "atom":
                tab = _join_atom(st.lit, st.atom_index, rels[st.lit.relation], values, tab,
                                 read(st.atom_index), ev)
            elif st.kind == "neg":
                atom = st.lit.atom
                hit = _exists(atom, rels.get(atom.relation), values, tab, read_neg, ev, st.lit)
                tab = tab.take(np.flatnonzero(~hit))
            elif st.kind == "assign":
                name = st.lit.var.name
                if name in tab.vars:
                    col = ev.check(st.lit.expr, tab, st.lit)
                    tab = tab.take(np.flatnonzero(tab.vars[name] == col))
                else:
                    tab.vars[name] = ev.term(st.lit.expr, tab, st.lit)
            else:
                a = ev.term(st.lit.left, tab, st.lit)
                b = ev.term(st.lit.right, tab, st.lit)
                tab = tab.take(np.flatnonzero(ev.compare(st.lit.op, a, b, st.lit)))
        return tab


def _arg_column(t: object, tab: Table, values: Values, ev: _Eval, lit: object
                ) -> np.ndarray | None:
    """The ids an atom argument must equal, if it is bound; None if it binds or is free."""
    if isinstance(t, ast.Var):
        return tab.vars.get(t.name) if t.name != "_" else None
    if isinstance(t, ast.Const):
        i = values.lookup(t.value)
        return np.full(tab.n, -1 if i is None else i, dtype=np.int64)
    if _vars(t) <= tab.vars.keys():
        return ev.term(t, tab, lit)
    return None


def _join_atom(atom: ast.Atom, ai: int, rel: Relation, values: Values, tab: Table,
               read: Reader, ev: _Eval) -> Table:
    bound: list[int] = []
    qcols: list[np.ndarray] = []
    later: list[tuple[int, object]] = []
    for p, t in enumerate(atom.args):
        col = _arg_column(t, tab, values, ev, atom)
        if col is not None:
            bound.append(p)
            qcols.append(col)
        elif not isinstance(t, ast.Var):
            later.append((p, t))
    if bound:
        if len(bound) == rel.arity or not (qcols[0] < 0).any():
            qi, rows = rel.probe(tuple(bound), qcols)
        else:  # a constant never interned matches nothing
            ok = np.flatnonzero(np.all(np.stack(qcols) >= 0, axis=0))
            qi, rows = rel.probe(tuple(bound), [c[ok] for c in qcols])
            qi = ok[qi]
    else:
        rows_all = np.flatnonzero(read(rel, np.arange(rel.n, dtype=np.int64)))
        qi = np.repeat(np.arange(tab.n, dtype=np.int64), len(rows_all))
        rows = np.tile(rows_all, tab.n)
    keep = read(rel, rows)
    qi, rows = qi[keep], rows[keep]
    out = tab.take(qi)
    out.atoms[ai] = rows
    seen: dict[str, int] = {}
    mask: np.ndarray | None = None
    for p, t in enumerate(atom.args):
        if isinstance(t, ast.Var) and t.name != "_" and t.name not in tab.vars:
            col = rel.column(rows, p)
            if t.name in seen:
                eq = out.vars[t.name] == col
                mask = eq if mask is None else mask & eq
            else:
                seen[t.name] = p
                out.vars[t.name] = col
    if mask is not None:
        out = out.take(np.flatnonzero(mask))
    for p, t in later:
        want = ev.term(t, out, atom)
        out = out.take(np.flatnonzero(rel.cols[out.atoms[ai], p] == want))
    return out


def _exists(atom: ast.Atom, rel: Relation | None, values: Values, tab: Table, read: Reader,
            ev: _Eval, lit: object) -> np.ndarray:
    """Per binding: does some visible row match ``atom`` (``_`` matches anything)?"""
    hit = np.zeros(tab.n, dtype=bool)
    if rel is None or rel.n == 0:
        return hit
    bound, qcols = [], []
    for p, t in enumerate(atom.args):
        if isinstance(t, ast.Var) and t.name == "_":
            continue
        bound.append(p)
        qcols.append(_arg_column(t, tab, values, ev, lit))
    if not bound:
        hit[:] = bool(read(rel, np.arange(rel.n, dtype=np.int64)).any())
        return hit
    ok = np.flatnonzero(np.all(np.stack(qcols) >= 0, axis=0))
    qi, rows = rel.probe(tuple(bound), [c[ok] for c in qcols])
    vis = read(rel, rows)
    hit[ok[qi[vis]]] = True
    return hit


def head_columns(rule: ast.Rule, values: Values, tab: Table,
                 skip: int | None = None) -> np.ndarray:
    """The head rows (ids) of a table's bindings; ``skip`` leaves an aggregate position 0."""
    ev = _Eval(values, rule)
    cols = []
    for i, t in enumerate(rule.head.args):
        if i == skip:
            cols.append(np.zeros(tab.n, dtype=np.int64))
            continue
        try:
            cols.append(ev.term(t, tab, rule.head))
        except EvalError as err:
            raise EvalError(str(err).replace(f"(in `{rule.head}` of", "(in the head of")
                            ) from None
    if not cols:
        return np.zeros((tab.n, 0), dtype=np.int64)
    return np.stack(cols, axis=1)


def _ready(lit: object, bound: set[str]) -> bool:
    if isinstance(lit, ast.Comparison):
        return (_vars(lit.left) | _vars(lit.right)) <= bound
    if isinstance(lit, ast.Assignment):
        return _vars(lit.expr) <= bound
    if isinstance(lit, ast.Negation):
        return _vars(lit.atom) <= bound
    return False


def _atom_score(atom: ast.Atom, bound: set[str]) -> int:
    return sum(1 for t in atom.args
               if isinstance(t, ast.Const)
               or (isinstance(t, ast.Var) and t.name in bound)
               or (not isinstance(t, ast.Var) and _vars(t) <= bound))


def _calls(term: object) -> bool:
    if isinstance(term, ast.Call):
        return True
    if isinstance(term, ast.BinOp):
        return _calls(term.left) or _calls(term.right)
    return False


def _check_cost(lit: object, bound: set[str]) -> int:
    """How dear a ready condition is to run on a binding: arithmetic and comparisons of
    plain values first, then a lookup of a bound variable's list (``_Eval.check``), then
    any other call (``f_member`` walks a whole path)."""
    if isinstance(lit, ast.Comparison):
        return 2 if _calls(lit.left) or _calls(lit.right) else 0
    if isinstance(lit, ast.Assignment):
        if not _calls(lit.expr):
            return 0
        e = lit.expr
        if (lit.var.name in bound and isinstance(e, ast.Call) and e.name == "f_concat"
                and not any(_calls(a) for a in e.args)):
            return 1
        return 2
    return 1


def compile_join(rule: ast.Rule, start: int | None, start_vars: frozenset[str] = frozenset(),
                 *, check: bool = False) -> Join:
    """The steps of ``rule``'s body after atom ``start`` (None: nothing matched yet), with
    ``start_vars`` bound on entry (a head's variables when rederiving given facts).

    ``check``: the join asks whether given facts are still derived. Its bindings are
    bindings the forward joins already ran every condition on (an error would have been
    raised there), so ready conditions go cheapest first rather than in body order: a
    cost that filters out all but one neighbour before a path is walked."""
    atoms = rule.atoms()
    pending: list[tuple[object, int]] = []
    ai = 0
    for lit in rule.body:
        if isinstance(lit, ast.Atom):
            pending.append((lit, ai))
            ai += 1
        else:
            pending.append((lit, -1))
    bound = set(start_vars)
    steps: list[_Step] = []
    if start is not None:
        lead = atoms[start]
        pending = [(lit, i) for lit, i in pending if i != start]
        bound |= _vars(lead)
    while pending:
        ready = [k for k, (lit, _) in enumerate(pending) if _ready(lit, bound)]
        pick = (min(ready, key=lambda k: (_check_cost(pending[k][0], bound), k)) if check
                else ready[0]) if ready else None
        if pick is None:
            cands = [(k, lit) for k, (lit, i) in enumerate(pending) if i >= 0]
            if not cands:
                raise EvalError(f"{_where(rule)}cannot order the body of `{rule}`: a "
                                "condition uses a variable no atom binds")
            pick = max(cands, key=lambda c: (_atom_score(c[1], bound), -c[0]))[0]
        lit, i = pending.pop(pick)
        if isinstance(lit, ast.Atom):
            steps.append(_Step("atom", lit, i))
            bound |= _vars(lit)
        elif isinstance(lit, ast.Negation):
            steps.append(_Step("neg", lit))
        elif isinstance(lit, ast.Assignment):
            steps.append(_Step("assign", lit))
            bound.add(lit.var.name)
        else:
            steps.append(_Step("cmp", lit))
    return Join(rule, steps, frozenset(start_vars))
