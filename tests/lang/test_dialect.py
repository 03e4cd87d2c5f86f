"""The P2 / RapidNet dialect (issue 21): programs of our own in it parse and run unmodified,
and every construct the engine cannot run yet is refused by name at its written position."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules.engine.reference import evaluate_program
from netrules.errors import NdlogSyntaxError, ProgramError
from netrules.facts import Fact
from netrules.lang.builtins import BUILTINS, evaluate, seed
from netrules.lang.parse import parse_program
from netrules.lang.preprocess import preprocess
from netrules.plan import plan_program

REACHABILITY = """
/* reachability, RapidNet style: typed keys, labels, a #define'd constant */
#define MAXHOPS 16
materialize(link, infinity, infinity, keys(1,2)).
materialize(reachable, infinity, infinity, keys(1,2:str)).
r1 reachable(@S,D,H) :- link(@S,D), H := 1.
r2 reachable(@S,D,H) :- link(@S,Z), reachable(@Z,D,H1), H := H1 + 1, H < MAXHOPS.
"""

MIN_COST = """
materialize(link, infinity, infinity, keys(1,2:int32)).
materialize(pathCost, infinity, infinity, keys(1,2,3:int32)).
materialize(bestPathCost, infinity, infinity, keys(1,2)).
c1 pathCost(@S,D,C) :- link(@S,D,C).
c2 pathCost(@S,D,C) :- link(@S,Z,C1), bestPathCost(@Z,D,C2), C := C1 + C2, C < 100.
c3 bestPathCost(@S,D,a_MIN<C>) :- pathCost(@S,D,C).
"""

LINK_STATE = """
// link state, flooded: every node learns every link; @Local names the receiving node
materialize(link, infinity, infinity, keys(1,2)).
materialize(lsu, infinity, infinity, keys(1,2,3)).
l1 lsu(@S,S,D,C) :- link(@S,D,C).
l2 lsu(@M,O,D,C) :- link(@N,M,_), lsu(@N,O,D,C).
l3 links(@Local,O,a_COUNT<*>) :- lsu(@S,O,D,C).
"""

LINKS = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]


def test_reachability_runs_with_define_and_typed_keys() -> None:
    p = parse_program(REACHABILITY, "reach.ndlog")
    assert p.materialized[1].types == (None, "str")
    views = evaluate_program(plan_program(p), [Fact("link", e) for e in LINKS])
    reach = {f.args[:2] for f in views["reachable"]}
    assert ("a", "d") in reach and ("d", "a") not in reach
    assert max(f.args[2] for f in views["reachable"]) < 16


def test_min_cost_groups_by_key() -> None:
    plan = plan_program(parse_program(MIN_COST, "min_cost.ndlog"))
    facts = [Fact("link", (*e, 1)) for e in LINKS] + [Fact("link", ("a", "c", 5))]
    views = evaluate_program(plan, facts)
    best = {f.args[:2]: f.args[2] for f in views["bestPathCost"]}
    assert best[("a", "c")] == 2 and best[("a", "d")] == 3


def test_link_state_floods_every_link() -> None:
    plan = plan_program(parse_program(LINK_STATE, "ls.ndlog"))
    both = [Fact("link", (u, v, 1)) for u, v in LINKS] + [Fact("link", (v, u, 1))
                                                         for u, v in LINKS]
    views = evaluate_program(plan, both)
    at_d = {f.args[1:3] for f in views["lsu"] if f.args[0] == "d"}
    assert {(u, v) for u, v in LINKS} <= at_d
    # a's links (to b and c) as d counts them
    assert {f.args for f in views["links"] if f.args[:2] == ("d", "a")} == {("d", "a", 2)}


def test_local_head_binds_the_body_location() -> None:
    p = parse_program("materialize(l, infinity, infinity, keys(1,2)).\n"
                      "r q(@Local, Y) :- l(@X, Y).", "local.ndlog")
    assert str(p.rules[0].head) == "q(@X,Y)"


# refusals: message and written position ------------------------------------------------

REFUSED = [
    ("delete", "materialize(l, infinity, infinity, keys(1)).\n"
     "d1 delete l(@X,Y) :- l(@X,Y), Y > 3.", "delete rules", (2, 1)),
    ("lifetime", "materialize(q, 10, infinity, keys(1)).\nq(@X) :- l(@X,Y).\n"
     "materialize(l, 10, infinity, keys(1)).", "finite lifetime (soft state) on a derived",
     (1, 1)),
    ("size", "materialize(l, infinity, 100, keys(1)).\nq(@X) :- l(@X,Y).",
     "finite table size", (1, 1)),
    ("periodic", "materialize(l, infinity, infinity, keys(1)).\n"
     "p1 ping(@X,E) :- l(@X,Y), periodic(@X,E).", "periodic takes (@N, E, Period", (2, 27)),
    ("periodic_period", "materialize(l, infinity, infinity, keys(1)).\n"
     "p1 ping(@X,E) :- l(@X,Y), periodic(@X,E,P).", "must be numbers >= 0, not P", (2, 41)),
    ("event_spans_nodes", "materialize(l, infinity, infinity, keys(1,2)).\n"
     "p1 ping(@Y,E) :- periodic(@X,E,5), l(@Y,X).", "event rule whose body spans nodes",
     (2, 1)),
    ("event_min", "materialize(l, infinity, infinity, keys(1,2)).\n"
     "materialize(m, infinity, infinity, keys(1)).\n"
     "p1 m(@X,a_MIN<Y>) :- periodic(@X,E,5), l(@X,Y).", "a_MIN in an event rule", (3, 9)),
    ("written_and_derived", "materialize(l, infinity, infinity, keys(1,2)).\n"
     "materialize(m, infinity, infinity, keys(1)).\n"
     "p1 m(@X,Y) :- periodic(@X,E,5), l(@X,Y).\np2 m(@X,Y) :- l(@X,Y).",
     "m is both written by event rules (p1) and derived by view rules (p2", (2, 1)),
    ("f_now", "materialize(l, infinity, infinity, keys(1)).\n"
     "t(@X,T) :- l(@X,Y), T := f_now().", "f_now()", (2, 26)),
    ("f_rand", "materialize(l, infinity, infinity, keys(1)).\n"
     "t(@X,T) :- l(@X,Y), T := f_rand().", "f_rand()", (2, 26)),
    ("count_event", "materialize(l, infinity, infinity, keys(1)).\n"
     "r2 c(@X,Y,a_COUNT<*>) :- eAdd(@X,Y), l(@X,Z).\n"
     "r1 eAdd(@X,Y) :- l(@X,Z), Y := 1.", "a_COUNT over event relation eAdd", (2, 11)),
    ("broadcast", "materialize(l, infinity, infinity, keys(1)).\n"
     "e(@Broadcast,Y) :- l(@Y).", "@Broadcast", (2, 4)),
    ("event", "materialize(q, infinity, infinity, keys(1)).\n"
     "q(@X) :- eTick(@X,Y).", "eTick is an event relation", (2, 10)),
]


@pytest.mark.parametrize(("what", "text", "message", "where"), REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_unsupported_constructs_are_refused_by_name(what, text, message, where) -> None:
    assert_refused(text, f"{what}.ndlog", message, where)


def assert_refused(text: str, file: str, message: str, where: tuple[int, int]) -> None:
    """``text`` is refused as UNSUPPORTED with ``message`` at ``file``:line:column, caret
    drawn."""
    with pytest.raises(ProgramError) as e:
        parse_program(text, file)
    (d,) = e.value.diagnostics
    assert d.code == "UNSUPPORTED" and message in d.message
    assert (d.loc.file, d.loc.line, d.loc.column) == (file, *where)
    assert "^" in d.render()


def test_errors_in_an_included_file_point_into_it(tmp_path) -> None:
    (tmp_path / "decls.ndl").write_text(
        "#define COST 1\nmaterialize(link, infinity, infinity, keys(1,2)).\n"
        "bad(@X) :- link(@X,Y,Z), W > 1.\n")
    main = tmp_path / "main.ndlog"
    text = '// main\n#include "decls.ndl"\nr(@X,Y) :- link(@X,Y,C), C == COST.\n'
    main.write_text(text)
    with pytest.raises(ProgramError) as e:
        parse_program(text, str(main))
    (d,) = e.value.diagnostics
    assert d.loc.file == str(tmp_path / "decls.ndl") and (d.loc.line, d.loc.column) == (3, 26)
    assert "W > 1" in d.render()


def test_syntax_error_after_a_macro_keeps_the_written_column() -> None:
    text = "#define LONGNAME 1234567\nr(@X) :- l(@X,Y), Y == LONGNAME, Q(@X).\n"
    with pytest.raises(NdlogSyntaxError) as e:
        parse_program(text, "m.ndlog")
    assert (e.value.line, e.value.column) == (2, 35)


@pytest.mark.parametrize(("text", "message", "col"), [
    ("#ifdef X\n", "#ifdef is not supported", 1),
    ('#include "nowhere.ndl"\n', "#include cannot read nowhere.ndl", 1),
    ("  #include nowhere\n", "#include needs a quoted file name", 3),
    ("#define\n", "#define needs a name", 1),
])
def test_bad_preprocessor_lines(text, message, col) -> None:
    with pytest.raises(NdlogSyntaxError) as e:
        parse_program(text, "pp.ndlog")
    assert message in str(e.value) and (e.value.line, e.value.column) == (1, col)


def test_recursive_include_is_refused() -> None:
    files = {"a.ndl": '#include "b.ndl"\n', "b.ndl": '\n#include "a.ndl"\n'}
    with pytest.raises(NdlogSyntaxError) as e:
        preprocess(files["a.ndl"], "a.ndl", read=files.__getitem__)
    assert "recursive" in str(e.value) and e.value.loc.file == "b.ndl" and e.value.line == 2


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["K", "LONG_NAME", "x", " ", "(", "Y", "1"]), max_size=12),
       st.text(alphabet="abc123 ", max_size=10))
def test_source_map_points_back_at_written_columns(tokens, body) -> None:
    """Every expanded column that came from written text maps to the same character."""
    line = "".join(tokens)
    exp = preprocess(f"#define K {body}\n#define LONG_NAME 7\n{line}\n", "f")
    out = exp.text.splitlines()[2]
    for col in range(1, len(out) + 1):
        loc = exp.origin(3, col)
        assert loc.line == 3 and 1 <= loc.column <= max(len(line), 1)
        if line[loc.column - 1:loc.column] == out[col - 1] and out[col - 1] not in "K":
            continue
        assert line[loc.column - 1:].startswith(("K", "LONG_NAME"))


def test_list_builtins_and_seeded_rand() -> None:
    for name in ["f_now", "f_rand", "f_size", "f_first", "f_last", "f_removeLast",
                 "f_concat", "f_append", "f_member"]:
        assert name in BUILTINS
    seed(7)
    a = [BUILTINS["f_rand"].fn() for _ in range(3)]
    seed(7)
    assert [BUILTINS["f_rand"].fn() for _ in range(3)] == a
    assert evaluate(_const("f_removeLast([1,2,3])"), {}) == (1, 2)
    assert evaluate(_const("f_member(f_append(f_concat([1], 2), 3), 2)"), {}) == 1


def _const(expr: str):
    return parse_program(f"materialize(l, infinity, infinity, keys(1)).\n"
                         f"q(@X,V) :- l(@X), V := {expr}.").rules[0].body[1].expr


def test_delete_and_labels_print_and_reparse() -> None:
    text = ("materialize(l, infinity, infinity, keys(1)).\n"
            "d1 delete l(@X,Y) :- l(@X,Y), Y > 3.")
    with pytest.raises(ProgramError):
        parse_program(text)
    # a relation may still be named like the keyword's prefix
    p = parse_program("materialize(deleted, infinity, infinity, keys(1)).\n"
                      "r q(@X) :- deleted(@X).")
    assert p.rules[0].atoms()[0].relation == "deleted"
