"""Fuzzing the front end: random and mutated programs either plan or fail with a clean error."""

from __future__ import annotations

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.cli import main
from netrules.errors import NetrulesError
from netrules.lang import parse_program
from netrules.plan import plan_program

TOKENS = ["p", "q", "link", "reachable", "(", ")", "@", "X", "Y", "_", ",", ".", ":-", ":=",
          "=", "==", "<", ">", "!=", "+", "-", "*", "/", "%", "not", "a_MIN", "a_COUNT", "<*>",
          "[", "]", "1", "2.5", '"s"', "f_concat", "f_member", "materialize", "keys",
          "infinity", "?-", "//c\n", "/*", "*/", " ", "\n", "r1", "@S", "C", "a", "b"]

SOURCES = [programs.source(n) for n in programs.names()]


def _check(text: str) -> None:
    try:
        plan_program(parse_program(text, "fuzz.ndlog"))
    except NetrulesError as err:
        rendered = err.render()
        assert "error[" in rendered
        assert err.code


@settings(max_examples=500)
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_random_token_soup_never_crashes(text: str) -> None:
    _check(text)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(0, len(text) - 1)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "cut", "dup"]))
        if op == "delete":
            j = i + draw(st.integers(1, 8))
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif op == "replace":
            text = text[:i] + draw(st.characters(codec="utf-8")) + text[i + 1:]
        elif op == "cut":
            text = text[:i]
        else:
            j = i + draw(st.integers(1, 30))
            text = text[:j] + text[i:j] + text[j:]
    return text


@settings(max_examples=500)
@given(mutated())
def test_mutated_programs_never_crash(text: str) -> None:
    _check(text)


@settings(max_examples=60)
@given(mutated())
def test_check_command_exit_status(tmp_path_factory, text: str) -> None:
    path = tmp_path_factory.mktemp("fz") / "p.ndlog"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code in (0, 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
