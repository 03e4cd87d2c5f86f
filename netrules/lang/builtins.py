"""Builtin functions (``f_*``) and arithmetic: the only code that runs on user values.

Nothing here calls ``eval``; a program can only reach the functions in ``BUILTINS``. Lists are
Python tuples so that facts stay hashable.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from netrules.facts import Value
from netrules.lang import ast

__all__ = ["Builtin", "BUILTINS", "register_builtin", "evaluate", "compile_term", "compare",
           "BuiltinError", "set_time", "seed"]


class BuiltinError(Exception):
    """A builtin or operator got values it cannot work on; the evaluator adds the location."""


@dataclass(frozen=True)
class Builtin:
    name: str
    fn: Callable[..., Value]
    arities: tuple[int, ...]
    doc: str
    volatile: bool = False  # the value depends on when it is called (clock, random numbers)


BUILTINS: dict[str, Builtin] = {}


def register_builtin(name: str, arities: tuple[int, ...], doc: str, *, volatile: bool = False
                     ) -> Callable[[Callable[..., Value]], Callable[..., Value]]:
    """Decorator adding ``fn`` as builtin ``name`` (must start ``f_``) taking ``arities`` args;
    ``volatile`` marks one whose value depends on when it runs (refused in rules for now)."""
    if not name.startswith("f_"):
        raise ValueError(f"builtin names start with 'f_': {name!r}")

    def deco(fn: Callable[..., Value]) -> Callable[..., Value]:
        BUILTINS[name] = Builtin(name, fn, arities, doc, volatile)
        return fn

    return deco


class _Clock:
    """The time ``f_now`` reads and the generator ``f_rand`` draws from: the event-time clock
    of a replay (``set_time``) and a seeded generator (``seed``), so a replay repeats."""

    def __init__(self) -> None:
        self.now = 0.0
        self.rng = random.Random(0)


CLOCK = _Clock()


def set_time(t: float) -> None:
    """Set the time ``f_now()`` returns (the event time of the batch being applied)."""
    CLOCK.now = float(t)


def seed(n: int) -> None:
    """Restart ``f_rand()``'s sequence from seed ``n``."""
    CLOCK.rng = random.Random(n)


@register_builtin("f_now", (0,), "f_now(): the current (event) time, in seconds", volatile=True)
def _f_now() -> Value:
    return CLOCK.now


@register_builtin("f_rand", (0,), "f_rand(): a pseudo-random integer in [0, 2**31), seeded",
                  volatile=True)
def _f_rand() -> Value:
    return CLOCK.rng.randrange(2**31)


def _as_list(v: Value) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _need_list(name: str, v: Value) -> tuple:
    if not isinstance(v, tuple):
        raise BuiltinError(f"{name} expects a list, got {v!r}")
    return v


@register_builtin("f_append", (1, 2), "f_append(X) is [X]; f_append(L, X) is L with X added last")
def _f_append(*args: Value) -> Value:
    if len(args) == 1:
        return (args[0],)
    return _as_list(args[0]) + (args[1],)


@register_builtin("f_concat", (2,), "f_concat(A, B): the list A then B (a non-list is [it])")
def _f_concat(a: Value, b: Value) -> Value:
    return _as_list(a) + _as_list(b)


@register_builtin("f_member", (2,), "f_member(L, X): 1 when X is in list L, else 0")
def _f_member(lst: Value, x: Value) -> Value:
    return int(x in _need_list("f_member", lst))


@register_builtin("f_size", (1,), "f_size(L): the number of elements of L")
def _f_size(lst: Value) -> Value:
    return len(_need_list("f_size", lst))


@register_builtin("f_first", (1,), "f_first(L): the first element of a non-empty list")
def _f_first(lst: Value) -> Value:
    items = _need_list("f_first", lst)
    if not items:
        raise BuiltinError("f_first of an empty list")
    return items[0]


@register_builtin("f_last", (1,), "f_last(L): the last element of a non-empty list")
def _f_last(lst: Value) -> Value:
    items = _need_list("f_last", lst)
    if not items:
        raise BuiltinError("f_last of an empty list")
    return items[-1]


@register_builtin("f_removeLast", (1,), "f_removeLast(L): L without its last element")
def _f_remove_last(lst: Value) -> Value:
    return _need_list("f_removeLast", lst)[:-1]


@register_builtin("f_removeFirst", (1,), "f_removeFirst(L): L without its first element")
def _f_remove_first(lst: Value) -> Value:
    return _need_list("f_removeFirst", lst)[1:]


@register_builtin("f_reverse", (1,), "f_reverse(L): L in reverse order")
def _f_reverse(lst: Value) -> Value:
    return tuple(reversed(_need_list("f_reverse", lst)))


@register_builtin("f_min", (2,), "f_min(A, B): the smaller of two numbers")
def _f_min(a: Value, b: Value) -> Value:
    return min(_num("f_min", a), _num("f_min", b))


@register_builtin("f_max", (2,), "f_max(A, B): the larger of two numbers")
def _f_max(a: Value, b: Value) -> Value:
    return max(_num("f_max", a), _num("f_max", b))


def _num(what: str, v: Value) -> int | float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise BuiltinError(f"{what} expects a number, got {v!r}")
    return v


def _arith(op: str, a: Value, b: Value) -> Value:
    if op == "+" and isinstance(a, str) and isinstance(b, str):
        return a + b
    if op == "+" and isinstance(a, tuple) and isinstance(b, tuple):
        return a + b
    x, y = _num(f"'{op}'", a), _num(f"'{op}'", b)
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    if y == 0 and op in "/%":
        raise BuiltinError(f"division by zero in {a!r} {op} {b!r}")
    if op == "/":
        return x // y if isinstance(x, int) and isinstance(y, int) else x / y
    if op == "%":
        return x % y
    raise BuiltinError(f"unknown operator {op!r}")


def evaluate(term: object, binding: Mapping[str, Value]) -> Value:
    """The value of an expression under a variable binding (all its variables bound)."""
    if isinstance(term, ast.Const):
        return term.value
    if isinstance(term, ast.Var):
        try:
            return binding[term.name]
        except KeyError:
            raise BuiltinError(f"variable {term.name} is not bound here") from None
    if isinstance(term, ast.ListExpr):
        return tuple(evaluate(t, binding) for t in term.items)
    if isinstance(term, ast.BinOp):
        return _arith(term.op, evaluate(term.left, binding), evaluate(term.right, binding))
    if isinstance(term, ast.Neg):
        v = evaluate(term.operand, binding)
        return -_num("unary '-'", v)
    if isinstance(term, ast.Call):
        b = BUILTINS.get(term.name)
        if b is None:
            raise BuiltinError(f"unknown function {term.name}")
        return b.fn(*(evaluate(t, binding) for t in term.args))
    raise BuiltinError(f"cannot evaluate {term!r}")


Slots = Sequence[Value]


def compile_term(term: object, slot: Mapping[str, int]) -> Callable[[Slots], Value]:
    """``evaluate`` specialised to one term whose variables all sit in fixed slots: the tree
    is walked once, here, instead of once per binding (compiled joins, ``engine/joins.py``).
    Same values, same errors, same left-to-right order."""
    if isinstance(term, ast.Const):
        c = term.value
        return lambda v: c
    if isinstance(term, ast.Var):
        s = slot[term.name]
        return lambda v: v[s]
    if isinstance(term, ast.ListExpr):
        items = [compile_term(t, slot) for t in term.items]
        return lambda v: tuple([f(v) for f in items])
    if isinstance(term, ast.BinOp):
        op, left, right = term.op, compile_term(term.left, slot), compile_term(term.right, slot)
        return lambda v: _arith(op, left(v), right(v))
    if isinstance(term, ast.Neg):
        inner = compile_term(term.operand, slot)
        return lambda v: -_num("unary '-'", inner(v))
    if isinstance(term, ast.Call):
        b = BUILTINS.get(term.name)
        name = term.name
        if b is None:
            def unknown(v: Slots) -> Value:
                raise BuiltinError(f"unknown function {name}")
            return unknown
        fn, args = b.fn, [compile_term(t, slot) for t in term.args]
        if len(args) == 1:
            a0 = args[0]
            return lambda v: fn(a0(v))
        if len(args) == 2:
            a0, a1 = args
            return lambda v: fn(a0(v), a1(v))
        return lambda v: fn(*[f(v) for f in args])

    def cannot(v: Slots) -> Value:
        raise BuiltinError(f"cannot evaluate {term!r}")
    return cannot


def compare(op: str, a: Value, b: Value) -> bool:
    """NDlog comparison; ordering only between numbers or between values of one type."""
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    numeric = isinstance(a, int | float) and isinstance(b, int | float)
    if not numeric and type(a) is not type(b):
        raise BuiltinError(f"cannot order {a!r} and {b!r}")
    if op == "<":
        return a < b  # type: ignore[operator]
    if op == ">":
        return a > b  # type: ignore[operator]
    if op == "<=":
        return a <= b  # type: ignore[operator]
    if op == ">=":
        return a >= b  # type: ignore[operator]
    raise BuiltinError(f"unknown comparison {op!r}")
