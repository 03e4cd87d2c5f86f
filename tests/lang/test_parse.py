"""The NDlog front end: round trips, the error catalogue, and located errors for bad programs."""

from __future__ import annotations

import pickle

import pytest

from netrules import programs
from netrules.errors import NdlogSyntaxError, NetrulesError, ProgramError, SourceLoc
from netrules.facts import Fact
from netrules.lang import ast, parse_atom, parse_facts, parse_program, parse_updates
from netrules.lang.builtins import BUILTINS, register_builtin
from netrules.lang.parse import _ToAst, grammar_rules
from netrules.lang.syntax_errors import SYNTAX_ERRORS


@pytest.mark.parametrize("name", programs.names())
def test_standard_programs_round_trip(name: str) -> None:
    prog = programs.load(name)
    again = parse_program(str(prog), f"{name}-printed")
    assert again == prog
    assert str(again) == str(prog)
    assert programs.describe(name).startswith(name)


@pytest.mark.parametrize("name", ["best_routes", "reachability"])
def test_programs_and_facts_pickle_whole(name: str) -> None:
    """Plans and facts cross to Spark executors pickled (``SourceLoc`` and ``Fact`` reduce
    themselves): every location and every fact's ``loc`` arrive, though equality ignores
    both."""
    prog = programs.load(name)
    again = pickle.loads(pickle.dumps(prog))
    assert again == prog
    locs = [(r.loc, r.head.loc) for r in prog.rules]
    assert [(r.loc, r.head.loc) for r in again.rules] == locs
    assert all(isinstance(b, SourceLoc) for a, b in locs)
    facts = [Fact("link", ("a", "b", 1), 0), Fact("path", (1, ["a", "b"]), 1),
             Fact("periodic", (), None)]
    back = pickle.loads(pickle.dumps(facts))
    assert back == facts and [f.loc for f in back] == [0, 1, None]
    assert [f.args for f in back] == [f.args for f in facts]


def test_a_remembered_parse_follows_the_registered_builtins() -> None:
    """Parses are remembered (``_parse_plain``), but never past a change of the builtins the
    checks read: a function registered, then taken away."""
    text = "p(@X,Y) :- e(@X,Z), Y := f_twice_for_test(Z).\n"
    with pytest.raises(ProgramError) as err:
        parse_program(text)
    assert "f_twice_for_test" in err.value.diagnostics[0].message
    register_builtin("f_twice_for_test", (1,), "test only")(lambda z: 2 * z)
    try:
        first = parse_program(text)
        assert parse_program(text) is first
    finally:
        del BUILTINS["f_twice_for_test"]
    with pytest.raises(ProgramError) as err:
        parse_program(text)
    assert "f_twice_for_test" in err.value.diagnostics[0].message
    assert parse_program("p(@X) :- e(@X,Y).") is not parse_program("p(@X) :- e(@X,Z).")


def test_every_grammar_rule_has_a_transformer_method() -> None:
    missing = {r for r in grammar_rules() if not hasattr(_ToAst, r)}
    assert not missing, f"grammar rules without a Transformer method: {missing}"


def test_overlog_dialect_features() -> None:
    text = """
    // P2 / RapidNet style
    materialize(link, infinity, infinity, keys(1,2)).
    materialize(path, infinity, infinity, keys(1,2,3)).
    /* multi-line
       comment */
    sp1 path(@S,D,P,C) :- link(@S,D,C), P := f_append(S), Q := f_concat(P, D), f_size(Q) > 0.
    sp2 path(@S,D,P,C) :- link(@S,Z,C1), path(@Z,D,P2,C2), C := C1 + C2 * 2 - (1 % 3) / 1,
        P := f_concat(S, P2), f_member(P2, S) == 0, C != 0, C >= 1, C <= 1000, C < 9999.
    min(@S,D,a_MIN<C>) :- path(@S,D,P,C).
    max(@S,a_MAX<C>) :- path(@S,D,P,C).
    cnt(@S,a_COUNT<*>) :- link(@S,D,C).
    sum(@S,a_SUM<C>) :- link(@S,D,C).
    isolated(@S) :- node(@S), not link(@S,_,_).
    other(@S) :- node(@S), notin link(@S,_,_).
    remote(S, @D) :- link(@S,D,C).
    eq(@S,X) :- link(@S,D,C), X = C + 1, C = 3.
    node(@a). node(@"core router 1"). link(@a, b, -2). weights(@a, 2.5, 1e3, infinity).
    lst(@a, [b, c, [d]], []).
    ?- path(@a, X, P, C).
    """
    p = parse_program(text, "dialect.ndlog")
    assert len(p.materialized) == 2 and p.materialized[0].lifetime == float("inf")
    assert p.materialized[1].keys == (1, 2, 3)
    assert [r.label for r in p.rules][:2] == ["sp1", "sp2"]
    assert Fact("node", ("core router 1",)) in p.facts
    assert Fact("link", ("a", "b", -2)) in p.facts
    assert Fact("weights", ("a", 2.5, 1000.0, float("inf"))) in p.facts
    assert Fact("lst", ("a", ("b", "c", ("d",)), ())) in p.facts
    assert len(p.queries) == 1
    eq_rule = next(r for r in p.rules if r.head.relation == "eq")
    assert isinstance(eq_rule.body[1], ast.Assignment)  # X = C + 1 assigns X
    assert isinstance(eq_rule.body[2], ast.Comparison) and eq_rule.body[2].op == "=="
    remote = next(r for r in p.rules if r.head.relation == "remote")
    assert remote.head.locspec == 1
    assert parse_program(str(p), "again") == p


def test_locations_on_every_node() -> None:
    p = parse_program("a(@X) :-\n  b(@X, Y),\n  Y > 2.", "f.ndlog")
    r = p.rules[0]
    assert (r.loc.line, r.loc.column) == (1, 1)
    assert (r.body[0].loc.line, r.body[0].loc.column) == (2, 3)
    assert (r.body[1].loc.line, r.body[1].loc.column) == (3, 3)
    assert r.body[0].args[1].loc.column == 9


def test_facts_and_updates_files() -> None:
    facts = parse_facts("link(@a,b,1).\nlink(@b,\"x y\",2).\n", "f.facts")
    assert facts == [Fact("link", ("a", "b", 1)), Fact("link", ("b", "x y", 2))]
    batches = parse_updates("+link(@a,b,1).\n-link(@b,c,2).\n---\n// c\n+link(@c,d,3).\n")
    assert batches == [[("+", Fact("link", ("a", "b", 1))), ("-", Fact("link", ("b", "c", 2)))],
                       [("+", Fact("link", ("c", "d", 3)))]]
    assert parse_atom("reachable(@a, X)").relation == "reachable"


@pytest.mark.parametrize("text,line,col", [
    ("link(@a,b,1).\nlink(@a,X,1).\n", 2, 1),
    ("link(@a,b,1).\np(@X) :- q(@X).\n", 2, 1),
    ("link(@a,b,1)\n", 1, 13),
])
def test_facts_file_errors_are_located(text: str, line: int, col: int) -> None:
    with pytest.raises(NetrulesError) as ei:
        parse_facts(text, "f.facts")
    assert f"f.facts:{line}:{col}" in ei.value.render()


@pytest.mark.parametrize("text,msg", [
    ("*link(@a,b).\n", "u.upd:1:1: an update line starts"),
    ("+link(@a,b).\n+link(@a,b\n", "u.upd:2:"),
    ("+link(@a,X).\n", "u.upd:1:"),
])
def test_update_file_errors_are_located(text: str, msg: str) -> None:
    with pytest.raises(NetrulesError) as ei:
        parse_updates(text, "u.upd")
    assert msg in str(ei.value)


@pytest.mark.parametrize("label,examples", SYNTAX_ERRORS)
def test_syntax_error_catalogue(label: str, examples: list[str]) -> None:
    for text in examples:
        with pytest.raises(NdlogSyntaxError) as ei:
            parse_program(text, "bad.ndlog")
        assert ei.value.label == label, (text, ei.value.render())
        assert label in ei.value.render()


# (program, code, line, column): each malformed program's first diagnostic.
MALFORMED = [
    ("p(@X) :- q(@X)\n", "SYNTAX", 1, 15),
    ("p(@X) :- q(@X)", "SYNTAX", 1, 15),
    ("p(@X :- q(@X).", "SYNTAX", 1, 6),
    ("p(@X) q(@X).", "SYNTAX", 1, 7),
    ("P(@X) :- q(@X).", "SYNTAX", 1, 1),
    ("p(@X) :- Q(@X).", "SYNTAX", 1, 11),
    ("p(@X) :- .", "SYNTAX", 1, 10),
    ("p(@X Y) :- q(@X).", "SYNTAX", 1, 6),
    ("p(@X) :- q(X@).", "SYNTAX", 1, 13),
    ("p(@X, a_MIN(C)) :- q(@X, C).", "SYNTAX", 1, 12),
    ("p(@X, a_MIN<C) :- q(@X, C).", "SYNTAX", 1, 14),
    ("p(@X, a_FOO<C>) :- q(@X,C).", "SYNTAX", 1, 7),
    ("p(@X, a_MIN<*>) :- q(@X,C).", "SYNTAX", 1, 7),
    ("materialize(link, infinity, infinity).", "SYNTAX", 1, 37),
    ("materialize(link, forever, infinity, keys(1)).", "SYNTAX", 1, 19),
    ("p(@X,Y) :- q(@X), Y := .", "SYNTAX", 1, 24),
    ("?- reachable(@a,X)", "SYNTAX", 1, 19),
    ("p(@a, [b, c).", "SYNTAX", 1, 12),
    ("/* never closed\np(@X) :- q(@X).", "SYNTAX", 1, 1),
    ("p(@X) :- q(@X), r(@X) $ s(@X).", "SYNTAX", 1, 23),
    ("p(@X,@Y) :- q(@X,Y).", "SYNTAX", 1, 6),
    ("p(@X) :- q(@X), f_size(@X) > 1.", "SYNTAX", 1, 24),
    ("p(@X) :-\n  q(@X),\n  Y > 1.", "UNSAFE", 3, 3),
    ("p(@X,Y) :- q(@X).", "UNSAFE", 1, 1),
    ("p(@X) :- q(@X,Y), not r(@X,Z).", "UNSAFE", 1, 19),
    ("p(@X) :- not q(@X).", "UNSAFE", 1, 1),
    ("p(@X,_) :- q(@X,Y).", "UNSAFE", 1, 6),
    ("p(@X,Y) :- q(@X), Y := Z + 1.", "UNSAFE", 1, 19),
    ("p(@X,Y) :- q(@X,Y), Y := 1.", "REBOUND", 1, 21),
    ("p(@X,a_MIN<C>,a_MAX<C>) :- q(@X,C).", "AGGREGATE", 1, 15),
    ("p(@X) :- q(@X), f_nope(X) == 1.", "UNKNOWN_FUNCTION", 1, 17),
    ("p(@X) :- q(@X), f_size(X, X) == 1.", "FUNCTION_ARITY", 1, 17),
    ("p(@X) :- q(@X, Y).\np(@X) :- q(@X).", "ARITY", 2, 10),
    ("p(@X) :- q(@X, Y).\np(@X) :- q(X, @Y).", "LOCSPEC", 2, 10),
    ("materialize(q, infinity, infinity, keys(3)).\np(@X) :- q(@X,Y).", "KEYS", 1, 1),
    ("p(@a, X).", "UNSAFE", 1, 1),
    ("q(@a) :- r(@a, X), s(@a, a_MIN<X>).", "AGGREGATE", 1, 26),
]


def test_malformed_catalogue_is_large() -> None:
    assert len(MALFORMED) >= 30


@pytest.mark.parametrize("text,code,line,col", MALFORMED)
def test_malformed_programs_are_located(text: str, code: str, line: int, col: int) -> None:
    with pytest.raises((NdlogSyntaxError, ProgramError)) as ei:
        parse_program(text, "bad.ndlog")
    d = ei.value.diagnostics[0]
    assert d.code == code, ei.value.render()
    assert (d.loc.line, d.loc.column) == (line, col), ei.value.render()
    rendered = ei.value.render()
    assert rendered.startswith(f"bad.ndlog:{line}:{col}: error[{code}]")
    assert "^" in rendered  # the caret line under the column


def test_several_errors_are_reported_together_in_order() -> None:
    text = "a(@X,Y) :- b(@X).\nc(@X) :- d(@X), f_zz(X) == 1.\ne(@X) :- f(@X), Z > 1."
    with pytest.raises(ProgramError) as ei:
        parse_program(text, "many.ndlog")
    lines = [d.loc.line for d in ei.value.diagnostics]
    assert lines == sorted(lines) and set(lines) == {1, 2, 3}
    assert ei.value.render().endswith("3 errors")


@pytest.mark.parametrize("typed,column,what", [
    ("reachable(@a,X", 15, "unexpected end of input"),  # the ')' is missing: caret at the end
    ("  reachable(@a,X", 17, "unexpected end of input"),
    ("?- reachable(@a,X", 18, "unexpected end of input"),
    ("reachable(@a,,X)", 14, "unexpected ','"),
    ("reach able(@a)", 7, "unexpected 'able'"),
])
def test_query_errors_point_at_what_was_typed(typed: str, column: int, what: str) -> None:
    with pytest.raises(NetrulesError) as ei:
        parse_atom(typed)
    text = ei.value.render()
    assert f"<query>:1:{column}: error[SYNTAX]: {what}" in text
    src, caret = text.splitlines()[1:3]
    assert src == f"  {typed}"  # the line shown is the one typed, without an added '?-' or '.'
    assert caret == " " * (column + 1) + "^"


def test_a_fact_prints_names_as_written_and_parses_back() -> None:
    """`why`, `query` and alerts print facts in NDlog syntax: a backbone's "Pátra" or
    "Arkhangel’sk" as written, not as JSON escapes, and the text parses back to the fact."""
    f = Fact("bestPath", ("Pátra", 'a"b', ("Pátra", "x\n", "Arkhangel’sk", "e\u2028f"), 3), 0)
    assert str(f) == 'bestPath(@"Pátra","a\\"b",["Pátra","x\\n","Arkhangel’sk","e\u2028f"],3)'
    assert parse_facts(str(f) + ".") == [f]
