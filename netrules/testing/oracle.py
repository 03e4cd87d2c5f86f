"""A second, deliberately naive meaning of NDlog programs, to judge the engine by.

The reference evaluator (``engine/reference.py``) shares its matching, heads, negation,
aggregation and built-ins with every strategy, so a bug there is on both sides of a
differential test. This module is written apart: it imports nothing from ``netrules.engine``
nor ``netrules.lang.builtins``, computes its own strata, and does everything the slow,
obvious way: sets of tuples, every rule fired whole over the current facts, repeated until
nothing changes, stratum by stratum.

Meaning, as the reference defines it today (``engine/reference.py``, docs/engine.md):

* set semantics; a program's own facts are added to the given ones;
* negation reads completed lower strata; variables seen only in a negated atom (and ``_``)
  are existential inside it;
* an aggregate head groups the *distinct* satisfying bindings of the body's named variables
  by its other arguments: ``a_COUNT<*>`` counts them, ``a_SUM<C>`` adds C once per binding,
  ``a_MIN``/``a_MAX`` take the extreme in ``facts.sort_key`` order;
* a head relation declared with ``materialize(..., keys(...))`` groups an aggregate by the
  key's positions (and the location) only; the other non-aggregate arguments are a payload,
  taken from the distinct binding that reaches the extreme, the smallest payload tuple in
  ``sort_key`` order among those that tie (an arg-min, as P2 and RapidNet write it);
* a stratum whose recursion runs through an aggregate (best routes) means the fixpoint of
  applying all its rules at once to the previous result, from nothing, until it repeats;
* path patterns are rules by then (the parser compiles them), so they need nothing here.

API (stable; the columnar engine's tests use it too):

``evaluate(program_or_plan, facts) -> dict[relation, set[tuple]]``
    the least model over ``facts`` (``Fact`` objects), non-empty relations only. A ``Plan``
    is judged by the program it was planned from, so localization is under test as well.
``assert_agrees(views, program_or_plan, facts, who=..., context=...) -> dict``
    raise ``AssertionError`` naming ``who`` and the relation when ``views`` (relation ->
    ``Fact``s or tuples) differ from ``evaluate`` on the program's relations; relations the
    program does not name (localization's auxiliaries) are not compared.
``fire(rule, read, keys=None) -> set[tuple]``
    one application of one rule (aggregates included) over ``read(relation) -> set of
    tuples``: for tests of rule-level code such as compiled joins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from netrules.facts import Fact, Value, sort_key
from netrules.lang import ast

__all__ = ["OracleError", "evaluate", "assert_agrees", "fire", "bindings", "strata"]

Rows = dict[str, set[tuple]]
Binding = dict[str, Value]


class OracleError(Exception):
    """The oracle cannot give the program a meaning (unsafe, unstratifiable, diverging)."""


# Values -----------------------------------------------------------------------------------


def _list(v: Value) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _number(v: Value) -> int | float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise OracleError(f"not a number: {v!r}")
    return v


def _a_list(v: Value) -> tuple:
    if not isinstance(v, tuple):
        raise OracleError(f"not a list: {v!r}")
    return v


def _nonempty(v: Value) -> tuple:
    if not _a_list(v):
        raise OracleError("empty list")
    return v  # type: ignore[return-value]


_FUNCTIONS: dict[str, Callable[..., Value]] = {
    "f_append": lambda *a: (a[0],) if len(a) == 1 else _list(a[0]) + (a[1],),
    "f_concat": lambda a, b: _list(a) + _list(b),
    "f_member": lambda lst, x: 1 if x in _a_list(lst) else 0,
    "f_size": lambda lst: len(_a_list(lst)),
    "f_first": lambda lst: _nonempty(lst)[0],
    "f_last": lambda lst: _nonempty(lst)[-1],
    "f_removeLast": lambda lst: _a_list(lst)[:-1],
    "f_removeFirst": lambda lst: _a_list(lst)[1:],
    "f_reverse": lambda lst: _a_list(lst)[::-1],
    "f_min": lambda a, b: min(_number(a), _number(b)),
    "f_max": lambda a, b: max(_number(a), _number(b)),
}


def _value(t: Any, b: Binding) -> Value:
    if isinstance(t, ast.Const):
        return t.value
    if isinstance(t, ast.Var):
        if t.name not in b:
            raise OracleError(f"{t.name} is unbound")
        return b[t.name]
    if isinstance(t, ast.ListExpr):
        return tuple(_value(x, b) for x in t.items)
    if isinstance(t, ast.Neg):
        return -_number(_value(t.operand, b))
    if isinstance(t, ast.Call):
        if t.name not in _FUNCTIONS:
            raise OracleError(f"unknown function {t.name}")
        return _FUNCTIONS[t.name](*(_value(x, b) for x in t.args))
    if isinstance(t, ast.BinOp):
        x, y = _value(t.left, b), _value(t.right, b)
        if t.op == "+" and type(x) is type(y) and isinstance(x, str | tuple):
            return x + y  # type: ignore[operator]
        x, y = _number(x), _number(y)
        if t.op in "/%" and y == 0:
            raise OracleError("division by zero")
        if t.op == "/" and isinstance(x, int) and isinstance(y, int):
            return x // y
        ops = {"+": x + y, "-": x - y, "*": x * y}
        if t.op in ops:
            return ops[t.op]
        return x / y if t.op == "/" else x % y
    raise OracleError(f"cannot evaluate {t!r}")


def _holds(op: str, x: Value, y: Value) -> bool:
    if op in ("==", "!="):
        return (x == y) == (op == "==")
    if not (isinstance(x, int | float) and isinstance(y, int | float)) and type(x) is not type(y):
        raise OracleError(f"cannot order {x!r} and {y!r}")
    return {"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y}[op]  # type: ignore[operator]


# Rules ------------------------------------------------------------------------------------


def _unify(args: tuple, row: tuple, b: Binding) -> Binding | None:
    """``b`` extended so that ``args`` equals ``row``; expressions must be computable."""
    if len(args) != len(row):
        return None
    out = dict(b)
    for t, v in zip(args, row, strict=True):
        if isinstance(t, ast.Var) and t.name == "_":
            continue
        if isinstance(t, ast.Var) and t.name not in out:
            out[t.name] = v
        elif _value(t, out) != v:  # a constant, a bound variable or an expression
            return None
    return out


def _atoms(rule: ast.Rule) -> list[ast.Atom]:
    return [x for x in rule.body if isinstance(x, ast.Atom)]


def _deferred(t: Any) -> bool:
    return not isinstance(t, ast.Var | ast.Const)


def bindings(rule: ast.Rule, read: Callable[[str], set[tuple]]) -> Iterator[Binding]:
    """Every binding satisfying ``rule``'s body: a nested loop over the positive atoms as
    written, then the other literals, each once the variables it needs are bound."""
    atoms = _atoms(rule)
    bound_somewhere = set().union(*(ast.variables_of(a) for a in atoms), *(
        {x.var.name} for x in rule.body if isinstance(x, ast.Assignment)))

    def loop(i: int, b: Binding, rows: tuple) -> Iterator[tuple[Binding, tuple]]:
        if i == len(atoms):
            yield b, rows
            return
        plain = tuple(ast.Var("_") if _deferred(t) else t for t in atoms[i].args)
        for row in read(atoms[i].relation):
            nb = _unify(plain, row, b)  # expressions in atoms are checked once all is bound
            if nb is not None:
                yield from loop(i + 1, nb, (*rows, (atoms[i], row)))

    for b, rows in loop(0, {}, ()):
        todo: list[Any] = [m for m in rows if any(map(_deferred, m[0].args))]
        todo += [x for x in rule.body if not isinstance(x, ast.Atom)]
        if _conditions(todo, b, read, bound_somewhere):
            yield b


def _conditions(todo: list[Any], b: Binding, read: Callable[[str], set[tuple]],
                bound_somewhere: set[str]) -> bool:
    """Check (and for assignments, extend ``b`` by) the non-atom literals; False if one fails."""
    def needs(lit: Any) -> set[str]:
        if isinstance(lit, ast.Assignment):
            return ast.variables_of(lit.expr)
        if isinstance(lit, ast.Negation):
            return ast.variables_of(lit.atom) & bound_somewhere
        return ast.variables_of(lit[0] if isinstance(lit, tuple) else lit)

    while todo:
        lit = next((x for x in todo if needs(x) <= b.keys()), None)
        if lit is None:
            raise OracleError(f"unsafe body: cannot bind {todo}")
        todo.remove(lit)
        if isinstance(lit, tuple):  # a body atom with expression arguments, and its row
            if _unify(lit[0].args, lit[1], b) is None:
                return False
        elif isinstance(lit, ast.Assignment):
            v = _value(lit.expr, b)
            if lit.var.name in b and b[lit.var.name] != v:
                return False
            b[lit.var.name] = v
        elif isinstance(lit, ast.Comparison):
            if not _holds(lit.op, _value(lit.left, b), _value(lit.right, b)):
                return False
        elif isinstance(lit, ast.Negation):
            if any(_unify(lit.atom.args, row, b) is not None for row in read(lit.atom.relation)):
                return False
        else:
            raise OracleError(f"cannot evaluate {lit}")
    return True


def fire(rule: ast.Rule, read: Callable[[str], set[tuple]],
         keys: Mapping[str, tuple[int, ...]] | None = None) -> set[tuple]:
    """The head tuples one application of ``rule`` derives from the facts ``read`` gives;
    ``keys``: the program's declared keys by relation (1-based), for arg-min heads."""
    head = rule.head
    found = head.aggregate()
    if found is None:
        return {tuple(_value(t, b) for t in head.args) for b in bindings(rule, read)}
    pos, agg = found
    distinct = {frozenset(b.items()) for b in bindings(rule, read)}
    declared = (keys or {}).get(head.relation)
    if declared is not None:
        key_at = {k - 1 for k in declared}
        if head.locspec is not None:
            key_at.add(head.locspec)
        payload = [i for i in range(len(head.args)) if i != pos and i not in key_at]
        if payload:
            return _arg_extreme(head.args, pos, agg, payload, distinct)
    groups: dict[tuple, list[Value]] = {}
    for items in distinct:
        b = dict(items)
        key = tuple(_value(t, b) for i, t in enumerate(head.args) if i != pos)
        groups.setdefault(key, []).append(b[agg.var.name] if agg.var else 1)
    out = set()
    for key, vals in groups.items():
        if agg.func == "COUNT":
            v: Value = len(vals)
        elif agg.func == "SUM":
            v = sum(vals)  # type: ignore[arg-type]
        elif agg.func == "MIN":
            v = min(vals, key=sort_key)
        elif agg.func == "MAX":
            v = max(vals, key=sort_key)
        else:
            raise OracleError(f"unknown aggregate a_{agg.func}")
        out.add(key[:pos] + (v,) + key[pos:])
    return out


# Strata and programs ----------------------------------------------------------------------


def strata(rules: Iterable[ast.Rule]) -> list[tuple[frozenset[str], list[ast.Rule]]]:
    """Derived relations grouped by mutual recursion, each group after every group it reads."""
    rules = list(rules)
    heads = {r.head.relation for r in rules}
    reads: dict[str, set[str]] = {h: set() for h in heads}
    for r in rules:
        for x in r.body:
            if isinstance(x, ast.Atom | ast.Negation):
                a = x if isinstance(x, ast.Atom) else x.atom
                if a.relation in heads:
                    reads[r.head.relation].add(a.relation)
    below = {h: set(reads[h]) for h in heads}  # transitively
    while True:
        grown = {h: s.union(*(below[g] for g in s)) for h, s in below.items()}
        if grown == below:
            break
        below = grown
    groups = {h: frozenset({h} | {g for g in below[h] if h in below[g]}) for h in heads}
    out: list[tuple[frozenset[str], list[ast.Rule]]] = []
    done: set[str] = set()
    pending = sorted(set(groups.values()), key=sorted)
    while pending:
        group = next(g for g in pending if all(below[h] - g <= done for h in g))
        pending.remove(group)
        done |= group
        group_rules = [r for r in rules if r.head.relation in group]
        for r in group_rules:
            for x in r.body:
                if isinstance(x, ast.Negation) and x.atom.relation in group:
                    raise OracleError(f"recursion through negation in {r}")
        out.append((group, group_rules))
    return out


def _arg_extreme(args: tuple, pos: int, agg: Any, payload: list[int],
                 distinct: set[frozenset]) -> set[tuple]:
    """Per group (the arguments neither aggregated nor payload), the binding with the least
    (a_MIN) or greatest (a_MAX) value, then the smallest payload; the head is built from it."""
    if agg.func not in ("MIN", "MAX"):
        raise OracleError(f"a_{agg.func} cannot carry a payload")
    best: dict[tuple, tuple[Value, tuple]] = {}
    for items in distinct:
        b = dict(items)
        group = tuple(_value(t, b) for i, t in enumerate(args) if i != pos and i not in payload)
        val = b[agg.var.name]
        pay = tuple(_value(args[i], b) for i in payload)
        have = best.get(group)
        if have is None:
            best[group] = (val, pay)
            continue
        v0, p0 = have
        better = sort_key(val) < sort_key(v0) if agg.func == "MIN" else sort_key(val) > sort_key(v0)
        if better or (sort_key(val) == sort_key(v0) and sort_key(pay) < sort_key(p0)):
            best[group] = (val, pay)
    out = set()
    for group, (val, pay) in best.items():
        g, p = iter(group), iter(pay)
        out.add(tuple(val if i == pos else next(p) if i in payload else next(g)
                      for i in range(len(args))))
    return out


def _program(program_or_plan: Any) -> ast.Program:
    return getattr(program_or_plan, "program", program_or_plan)


def evaluate(program_or_plan: Any, facts: Iterable[Fact] = (), *,
             max_facts: int = 2_000_000, max_iterations: int = 10_000) -> Rows:
    """The program's least model over ``facts``: relation -> set of argument tuples."""
    program = _program(program_or_plan)
    db: Rows = {}
    for f in (*program.facts, *facts):
        db.setdefault(f.relation, set()).add(tuple(f.args))

    def read(rel: str) -> set[tuple]:
        return db.get(rel, set())

    keys = {m.name: m.keys for m in program.materialized}
    for group, rules in strata(program.rules):
        iterated = any(r.head.aggregate() and any(a.relation in group for a in _atoms(r))
                       for r in rules)
        if iterated:
            cur: Rows = {rel: set() for rel in group}

            def view(rel: str, cur: Rows = cur) -> set[tuple]:
                return cur[rel] if rel in cur else read(rel)

            for _ in range(max_iterations):
                new: Rows = {rel: set() for rel in group}
                for r in rules:
                    new[r.head.relation] |= fire(r, view, keys)
                if new == cur:
                    break
                cur.clear()
                cur.update(new)
            else:
                raise OracleError(f"{sorted(group)} did not settle")
            for rel in group:
                db.setdefault(rel, set()).update(cur[rel])
            continue
        for r in rules:  # an aggregate here reads lower strata only
            if r.head.aggregate():
                db.setdefault(r.head.relation, set()).update(fire(r, read, keys))
        changed = True
        while changed:
            changed = False
            for r in rules:
                if not r.head.aggregate():
                    new_rows = fire(r, read) - read(r.head.relation)
                    if new_rows:
                        db.setdefault(r.head.relation, set()).update(new_rows)
                        changed = True
            if sum(map(len, db.values())) > max_facts:
                raise OracleError(f"more than {max_facts} facts: does a rule never stop?")
    return {rel: rows for rel, rows in db.items() if rows}


def _as_tuples(rows: Iterable[Any]) -> set[tuple]:
    return {tuple(x.args) if isinstance(x, Fact) else tuple(x) for x in rows}


def assert_agrees(views: Mapping[str, Iterable[Any]], program_or_plan: Any,
                  facts: Iterable[Fact] = (), *, who: str = "engine", context: str = "",
                  expected: Rows | None = None) -> Rows:
    """Fail, naming ``who`` and the relation, where ``views`` differ from the oracle on the
    program's relations. Returns the oracle's answer (pass it back as ``expected`` to check
    several views of one state without re-evaluating)."""
    program = _program(program_or_plan)
    want = evaluate(program, facts) if expected is None else expected
    names = program.relations() | {f.relation for f in program.facts} | set(want)
    for rel in sorted(names):
        have, should = _as_tuples(views.get(rel, ())), want.get(rel, set())
        if have != should:
            where = f"{context}: " if context else ""
            raise AssertionError(
                f"{where}{who} disagrees with the oracle (netrules.testing.oracle) on {rel}\n"
                f"  - missing: {sorted(should - have, key=sort_key)}\n"
                f"  + extra:   {sorted(have - should, key=sort_key)}")
    return want
