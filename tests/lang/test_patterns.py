"""Path patterns in the front end: parsing and precedence, printing round trips, compilation
into shared auxiliary relations, located diagnostics, and the Regular Datalog check
(shared/notes/wolfson-regular-datalog-lftj.md §2.1, §2.6, acceptance test 16).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.cli import main
from netrules.errors import NdlogSyntaxError, NetrulesError, ProgramError
from netrules.lang import ast, parse_program
from netrules.lang.patterns import check_regular, push_inverse, split_empty
from netrules.plan import plan_program

DECL = "".join(f"materialize({r}, infinity, infinity, keys(1,2)).\n" for r in "efg")
P_REL = [ast.PathRel(r) for r in "efg"]


def path_exprs(leaves=P_REL, max_leaves: int = 6) -> st.SearchStrategy:
    """Random patterns: any nesting of +, *, -, concatenation and union."""
    def grow(children: st.SearchStrategy) -> st.SearchStrategy:
        many = st.lists(children, min_size=2, max_size=3).map(tuple)
        return st.one_of(st.builds(ast.PathPlus, children), st.builds(ast.PathStar, children),
                         st.builds(ast.PathInverse, children),
                         st.builds(ast.PathConcat, many), st.builds(ast.PathUnion, many))
    return st.recursive(st.sampled_from(leaves), grow, max_leaves=max_leaves)


def _flat(e: ast.PathExpr) -> ast.PathExpr:
    """What the parser builds: nested concatenations and unions flattened."""
    if isinstance(e, ast.PathRel):
        return e
    if isinstance(e, ast.PathConcat | ast.PathUnion):
        parts: list[ast.PathExpr] = []
        for p in map(_flat, e.parts):
            parts.extend(p.parts if type(p) is type(e) else (p,))
        return type(e)(tuple(parts))
    return type(e)(_flat(e.inner))


def pattern_of(text: str) -> ast.PathExpr:
    prog = parse_program(DECL + f"v(X,Y) :- <{text}>(X,Y).")
    return prog.written[0].body[0].pattern


# ---------------------------------------------------------------------------- parsing
def test_precedence_union_loosest_then_concat_then_postfix() -> None:
    e, f, g = P_REL
    assert pattern_of("e | f . g+") == ast.PathUnion((e, ast.PathConcat((f, ast.PathPlus(g)))))
    assert pattern_of("(e | f) . g") == ast.PathConcat((ast.PathUnion((e, f)), g))
    assert pattern_of("e . f . g") == ast.PathConcat((e, f, g))
    assert pattern_of("e . (f . g)") == ast.PathConcat((e, f, g))
    assert pattern_of("e-+*") == ast.PathStar(ast.PathPlus(ast.PathInverse(e)))
    assert pattern_of("(e . f)-") == ast.PathInverse(ast.PathConcat((e, f)))


@settings(max_examples=150)
@given(path_exprs())
def test_printed_patterns_parse_back(expr: ast.PathExpr) -> None:
    text = f"{DECL}v(X,Y) :- <{expr}>(X,Y), not <{expr}>(Y,X)."
    prog = parse_program(text)
    lit = prog.written[0].body[0]
    assert lit.pattern == _flat(expr)
    again = parse_program(str(prog))
    assert again == prog and str(again) == str(prog)


@pytest.mark.parametrize("name", ["fraud", "brand_reach", "loops", "constrained_reach"])
def test_pattern_programs_print_their_patterns(name: str) -> None:
    prog = programs.load(name)
    assert "<" in str(prog) and prog.patterns
    assert not any(isinstance(b, ast.PathAtom) or (isinstance(b, ast.Negation)
                   and isinstance(b.atom, ast.PathAtom)) for r in prog.rules for b in r.body)
    assert parse_program(str(prog)) == prog


@pytest.mark.parametrize("name", ["fraud", "brand_reach", "loops", "constrained_reach"])
def test_netrules_check_accepts_pattern_programs(name: str) -> None:
    result = CliRunner().invoke(main, ["check", name])
    assert result.exit_code == 0, result.output
    assert "_plus" in result.output


# ------------------------------------------------------------------------- compilation
def test_fraud_compiles_to_shared_readable_relations() -> None:
    prog = programs.load("fraud")
    heads = [r.head.relation for r in prog.rules]
    assert heads.count("pstransfer_plus") == 2  # one closure, used by both literals
    assert heads.count("monitors_plus") == 2
    assert {"transfer_or_stransfer", "cmonitored_plus",
            "connected_then_cmonitored_plus_then_connected"} <= set(heads)
    suspect = next(r for r in prog.rules if r.head.relation == "suspect")
    assert str(suspect) == "suspect(X,Y) :- pstransfer_plus(X,Y), pstransfer_plus(Y,X)."
    rec = next(r for r in prog.rules if r.head.relation == "pstransfer_plus" and len(r.body) == 2)
    assert str(rec) == "pstransfer_plus(X,Y) :- pstransfer(X,Z), pstransfer_plus(Z,Y)."


def test_sub_patterns_are_shared_across_rules() -> None:
    prog = parse_program(DECL + "a(X,Y) :- <e+>(X,Y).\nb(X,Y) :- <e+ . f>(X,Y).\n"
                                "c(X,Y) :- <(e+ . f)+>(X,Y), <e+>(Y,X).")
    heads = [r.head.relation for r in prog.rules]
    assert heads.count("e_plus") == 2 and heads.count("e_plus_then_f") == 1
    assert dict(prog.patterns)["e_plus_then_f_plus"] == "(e+ . f)+"


def test_base_relations_and_their_inverses_are_inlined() -> None:
    prog = parse_program(DECL + "a(X,Y) :- <e>(X,Y), <f->(X,Y).")
    assert str(prog.rules[0]) == "a(X,Y) :- e(X,Y), f(Y,X)."


def test_inverse_is_pushed_to_the_relations() -> None:
    e, f, _ = P_REL
    inv = push_inverse(pattern_of("(e . f+)-"))
    assert inv == ast.PathConcat((ast.PathPlus(ast.PathInverse(f)), ast.PathInverse(e)))
    assert push_inverse(pattern_of("e--")) == e


def test_empty_path_split() -> None:
    e, f, _ = P_REL
    assert split_empty(pattern_of("e*")) == (True, ast.PathPlus(e))
    assert split_empty(pattern_of("e* . f")) == (False, ast.PathUnion((
        ast.PathConcat((ast.PathPlus(e), f)), f)))
    assert split_empty(pattern_of("e* . f*"))[0]
    assert not split_empty(pattern_of("(e* . f*)+ . e"))[0]


def test_star_adds_x_equals_y_over_the_literal_domain() -> None:
    prog = parse_program(DECL + "a(X,Y) :- <e* | f>(X,Y).")
    refl = [str(r) for r in prog.rules if r.head.relation == "e_star_or_f"]
    assert "e_star_or_f(X,X) :- e(X,W)." in refl and "e_star_or_f(Y,Y) :- f(W,Y)." in refl


def test_relations_with_more_arguments_use_their_first_two() -> None:
    prog = parse_program("link(@a,b,1).\nr(@S,D) :- <link+>(S,D).")
    assert "link_plus(@X,Y) :- link(@X,Y,_)." in [str(r) for r in prog.rules]
    assert str(prog.rules[-1]) == "r(@S,D) :- link_plus(@S,D)."


def test_aux_names_never_collide_with_user_relations() -> None:
    prog = parse_program(DECL + "e_plus(X,Y) :- f(X,Y).\na(X,Y) :- <e+>(X,Y), e_plus(X,Y).")
    assert "e_plus_2" in {r.head.relation for r in prog.rules}
    assert str(prog.rules[-1]) == "a(X,Y) :- e_plus_2(X,Y), e_plus(X,Y)."


def test_negated_patterns_compile_to_negated_atoms() -> None:
    prog = parse_program(DECL + "a(X,Y) :- e(X,Y), not <f+>(X,Y).")
    assert str(prog.rules[-1]) == "a(X,Y) :- e(X,Y), not f_plus(X,Y)."


def test_located_patterns_are_localizable() -> None:
    text = ("link(@a,b,1).\n"
            "r(@S,D) :- <link . link- . (link | link-)+ . link*>(@S,D), <link-*>(D,S).")
    plan = plan_program(parse_program(text))
    for r in plan.rules:
        locs = {str(a.location_term) for a in r.atoms() if a.locspec is not None}
        assert len(locs) <= 1, str(r)
    inv = next(r for r in plan.rules if r.head.relation == "link_inv")
    assert str(inv) == "link_inv(@X,Y) :- link(@Y,X,_)."


# ------------------------------------------------------------------------- diagnostics
BAD = [
    ("a(X,Y) :- <e+ . nosuch>(X,Y).", "UNKNOWN_RELATION", 1, 17),
    ("one(a).\na(X,Y) :- <e . one>(X,Y).", "NOT_BINARY", 2, 16),
    ("a(X,Y,Z) :- <e+>(X,Y,Z).", "NOT_BINARY", 1, 13),
    ("a(X) :- <e+>(X).", "NOT_BINARY", 1, 9),
    ("link(@a,b,1).\na(X,Y) :- <link . e>(X,Y).", "LOCSPEC", 2, 19),
    ("u(X,Y) :- e(X,Y).\na(X,Y) :- <e+>(@X,Y).", "LOCSPEC", 2, 11),
    ("far(a,@b).\na(X,Y) :- <far+>(X,Y).", "LOCSPEC", 2, 12),
    ("a(X,Y) :- <e+>(X,@Y).", "SYNTAX", 1, 18),
    ("a(X,a_MIN<Y>) :- <e+>(X,a_MIN<Y>).", "SYNTAX", 1, 25),
    ("a(X,Y) :- <e+>(X,Z).", "UNSAFE", 1, 1),
    ("a(X,Y) :- e(X,Y), not <f+>(X,Z).", "UNSAFE", 1, 19),
]


@pytest.mark.parametrize("text,code,line,col", BAD)
def test_pattern_errors_are_located(text: str, code: str, line: int, col: int) -> None:
    with pytest.raises((NdlogSyntaxError, ProgramError)) as ei:
        parse_program(DECL + text, "bad.ndlog")
    d = ei.value.diagnostics[0]
    rendered = ei.value.render()
    assert d.code == code, rendered
    assert (d.loc.line - 3, d.loc.column) == (line, col), rendered
    assert "^" in rendered


def test_every_unknown_relation_is_reported() -> None:
    with pytest.raises(ProgramError) as ei:
        parse_program("a(X,Y) :- <p | q>(X,Y).\nb(X,Y) :- <q*>(X,Y).", "u.ndlog")
    assert [(d.loc.line, d.loc.column) for d in ei.value.diagnostics] == [(1, 12), (1, 16),
                                                                            (2, 12)]
    assert "materialize(p, infinity, infinity, keys(1,2))" in ei.value.render()


def test_declared_relation_location_conflict() -> None:
    with pytest.raises(ProgramError) as ei:
        parse_program("materialize(h, infinity, infinity, keys(1)).\n"
                      "b(X,Y) :- <h>(X,Y).\na(@X,Y) :- <h+>(@X,Y).")
    assert ei.value.code == "LOCSPEC" and ei.value.diagnostics[0].loc.line == 3
    located = parse_program("materialize(h, infinity, infinity, keys(1)).\n"
                            "a(@X,Y) :- <h+>(@X,Y).\nb(X,Y) :- <h>(X,Y).")
    assert str(located.rules[-1]) == "b(X,Y) :- h(@X,Y)."  # '@' is optional once located


@pytest.mark.parametrize("text,label", [
    ("a(X,Y) :- <e+ f>(X,Y).", "union is written r | s"),
    ("a(X,Y) :- <|e>(X,Y).", "built from relation names"),
    ("a(X,Y) :- <Edge+>(X,Y).", "built from relation names"),
    ("a(X,Y) :- <e.f(X,Y).", "closed with '>'"),
    ("a(X,Y) :- <e>;", "two endpoints in parentheses"),
    ("<e>(X,Y) :- e(X,Y).", "only appear in a rule body"),
])
def test_unseen_pattern_mistakes_get_a_catalogue_message(text: str, label: str) -> None:
    with pytest.raises(NdlogSyntaxError) as ei:
        parse_program(text, "bad.ndlog")
    assert label in (ei.value.label or ""), ei.value.render()


PATTERN_TOKENS = ["<", ">", "e", "f", "+", "*", "-", ".", "|", "(", ")", "X", "Y", ",", "@",
                  "not", " ", "a(X,Y) :- ", "<e+>(X,Y)", "_"]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(PATTERN_TOKENS), max_size=25).map("".join))
def test_pattern_token_soup_never_crashes(text: str) -> None:
    try:
        plan_program(parse_program(DECL + text, "fuzz.ndlog"))
    except NetrulesError as err:
        assert "error[" in err.render() and err.code


# ------------------------------------------------------------------ Regular Datalog check
@pytest.mark.parametrize("name", ["fraud", "brand_reach", "loops", "detectable"])
def test_shipped_pattern_programs_are_regular_datalog(name: str) -> None:
    check_regular(programs.load(name))


def test_non_closure_recursion_is_rejected_by_the_regular_check() -> None:
    prog = parse_program(DECL + "a(X,Y) :- <e+>(X,Y).\nb(X,Y) :- e(X,Z), b(Z,Y).\n"
                                "b(X,Y) :- e(X,Y).", "rd.ndlog")
    with pytest.raises(ProgramError) as ei:
        check_regular(prog)
    assert ei.value.code == "NOT_REGULAR"
    assert ei.value.diagnostics[0].loc.line == 5
    plan_program(prog)  # plain NDlog still accepts it
