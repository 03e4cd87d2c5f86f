"""Compiled joins (``joins.Join``) against the interpreter they replace (``solve_body``, the
oracle): on random safe rules (repeated variables, constants, ``_``, expressions in heads and
atoms, assignments, comparisons, negations with and without ``_``) over random databases and
layered views, every start atom gives the very same (head, body rows) list, in the same order;
solving for a given head gives ``instances_for``'s rows."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from netrules.engine.firing import body_facts, instances_for
from netrules.engine.joins import bindings_of, fire_rows, join_for, rows_for
from netrules.engine.reference import Database, head_fact, solve_body
from netrules.engine.views import Patched
from netrules.errors import NetrulesError
from netrules.lang import parse_program

VARS = ["X", "Y", "Z", "W"]
RELS = {"e": 2, "f": 2, "g": 3, "z": 0}


@st.composite
def term(draw: st.DrawFn) -> str:
    return draw(st.sampled_from([*VARS, *VARS, "_", "0", "1", "2"]))


@st.composite
def atom(draw: st.DrawFn) -> str:
    rel = draw(st.sampled_from(sorted(RELS)))
    args = [draw(term()) for _ in range(RELS[rel])]
    if args and draw(st.integers(0, 9)) == 0:  # an expression as an argument
        args[-1] = f"{draw(st.sampled_from(VARS))}+1"
    return f"{rel}({','.join(args)})"


@st.composite
def rule_text(draw: st.DrawFn) -> str:
    body = [draw(atom()) for _ in range(draw(st.integers(1, 3)))]
    extras = draw(st.lists(st.sampled_from(
        ["X != Y", "Z < W", "V := X + 1", "not f(X,_)", "not e(Y,X)", "not g(X,Y,Z)",
         "X == 1"]), max_size=2, unique=True))
    head_args = draw(st.lists(st.sampled_from([*VARS, "V", "1", "X+Y"]), min_size=1,
                              max_size=3))
    return f"h({','.join(head_args)}) :- {', '.join(body + extras)}."


def parse_rule(text: str):
    try:
        program = parse_program(text)
    except NetrulesError:
        return None
    return program.rules[0] if program.rules else None


ROW2 = st.tuples(st.integers(0, 3), st.integers(0, 3))
ROW3 = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3))
FACTS = st.lists(st.one_of(st.tuples(st.sampled_from(["e", "f"]), ROW2),
                           st.tuples(st.just("g"), ROW3), st.just(("z", ()))), max_size=25)


def database(facts) -> Database:
    db = Database()
    for rel, row in facts:
        db.add(rel, row)
    return db


def interpreted(rule, read, neg, first):
    n = len(rule.atoms())
    return [(head_fact(rule, b), tuple(b[("#row", k)] for k in range(n)))
            for b in solve_body(rule, read, neg=neg, first=first)]


def interpreted_bindings(rule, read, neg, first):
    return [{k: v for k, v in b.items() if isinstance(k, str)}
            for b in solve_body(rule, read, neg=neg, first=first)]


def interpreted_for(rule, row, view):
    return [tuple(r for _, r in body_facts(rule, b)) for b in instances_for(rule, row, view, view)]


def outcome(fn, *args):
    try:
        return fn(*args)
    except NetrulesError as err:  # both must fail alike (an unbound or ill-typed expression)
        return ("error", str(err))


@settings(max_examples=400, deadline=None)
@given(text=rule_text(), facts=FACTS, hidden=FACTS, shown=FACTS)
def test_compiled_joins_equal_the_interpreter(text, facts, hidden, shown):
    rule = parse_rule(text)
    assume(rule is not None)
    n = len(rule.atoms())
    base = database(facts)
    view = Patched(base, hide=(database(hidden),), show=(database(shown),))
    for read in (base, view, {i: (view if i % 2 else base) for i in range(n)}):
        for first in (None, *range(n)):
            neg = base if isinstance(read, dict) else None
            want = outcome(interpreted, rule, read, neg, first)
            got = outcome(fire_rows, rule, read, neg, first)
            assert got == want, (text, first)
            want_b = outcome(interpreted_bindings, rule, read, neg, first)
            got_b = outcome(bindings_of, rule, read, neg, first)
            assert got_b == want_b, (text, first)
    # solving for a head: every head the rule derives, and one it does not
    found = outcome(fire_rows, rule, base)
    heads = set() if isinstance(found, tuple) else {h for h, _ in found}
    probe_heads = sorted(heads, key=repr)[:4] + [tuple(9 for _ in rule.head.args)]
    for row in probe_heads:
        want = outcome(interpreted_for, rule, row, view)
        got = outcome(rows_for, rule, row, view, view)
        assert got == want, (text, row)


def test_a_join_is_compiled_once_per_start_and_prebound_set():
    rule = parse_program("h(X,Y) :- e(X,Z), f(Z,Y).").rules[0]
    assert join_for(rule, 0) is join_for(rule, 0)
    assert join_for(rule, 1) is not join_for(rule, 0)
    assert join_for(rule, None, ("X",)) is not join_for(rule, None)


def test_probe_buckets_are_read_not_copied_and_stay_correct_after_changes():
    db = database([("e", (1, 2)), ("e", (1, 3)), ("f", (2, 5))])
    rule = parse_program("h(X,Y) :- e(X,Z), f(Z,Y).").rules[0]
    assert fire_rows(rule, db) == [((1, 5), ((1, 2), (2, 5)))]
    db.add("f", (3, 6))
    db.discard("e", (1, 2))
    assert fire_rows(rule, db) == [((1, 6), ((1, 3), (3, 6)))]
