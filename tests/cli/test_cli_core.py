"""`netrules check` and `netrules eval` through click's CliRunner."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from netrules.cli import main


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_check_prints_strata_and_localized_rules() -> None:
    r = run("check", "reachability")
    assert r.exit_code == 0, r.output
    assert "stratum" in r.output and "linkD(@Z,S) :- link(@S,Z,C)." in r.output
    r = run("check", "reachability", "--json")
    assert json.loads(r.output)["base"] == ["link"]


def test_check_reports_error_with_caret_and_status_1(tmp_path) -> None:
    p = tmp_path / "bad.ndlog"
    p.write_text("p(@X) :- q(@X),\n  Y > 1.\n")
    r = run("check", str(p))
    assert r.exit_code == 1
    assert f"{p}:2:3: error[UNSAFE]" in r.output
    assert "  ^" in r.output


def test_check_unknown_program() -> None:
    r = run("check", "no-such-program")
    assert r.exit_code == 1 and "not a shipped program" in r.output


def test_eval_json_sorted(tmp_path) -> None:
    f = tmp_path / "f.facts"
    f.write_text("link(@b,c,1).\nlink(@a,b,1).\n")
    r = run("eval", "reachability", "--facts", str(f), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"reachable": [["a", "b"], ["a", "c"], ["b", "c"]]}


def test_eval_updates_reference(tmp_path) -> None:
    f = tmp_path / "f.facts"
    f.write_text("link(@a,b,1).\nlink(@b,a,1).\nlink(@b,c,1).\n")
    u = tmp_path / "u.upd"
    u.write_text("-link(@b,c,1).\n---\n+link(@b,c,1).\n")
    r = run("eval", "reachability", "--facts", str(f), "--updates", str(u), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert len(out) == 2
    assert ["a", "c"] not in out[0]["reachable"] and ["a", "c"] in out[1]["reachable"]


def test_eval_bad_facts_file_is_located(tmp_path) -> None:
    f = tmp_path / "f.facts"
    f.write_text("link(@a,b,1).\nlink(@a,b\n")
    r = run("eval", "reachability", "--facts", str(f))
    assert r.exit_code == 1 and f"{f}:2:" in r.output


def test_eval_rejects_facts_for_derived_relations(tmp_path) -> None:
    f = tmp_path / "f.facts"
    f.write_text("reachable(@a,b).\n")
    r = run("eval", "reachability", "--facts", str(f))
    assert r.exit_code == 1 and "derived relation" in r.output


def test_eval_keeps_empty_batches_in_place(tmp_path) -> None:
    """Batch N of the output is batch N of the input (issue 21), empty batches included."""
    u = tmp_path / "u.upd"
    u.write_text("+link(@a,b,1).\n---\n---\n// nothing\n---\n-link(@a,b,1).\n---\n")
    r = run("eval", "reachability", "--updates", str(u), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [o.get("reachable", []) for o in out] == [[["a", "b"]], [["a", "b"]],
                                                      [["a", "b"]], [], []]
    r = run("eval", "reachability", "--updates", str(u))
    assert [line for line in r.output.splitlines() if line.startswith("---")] == [
        f"--- after batch {i}" for i in range(1, 6)]


def test_eval_is_last_writer_wins(tmp_path) -> None:
    """Up, down, down, up leaves the link up; up, up, down leaves it down (as `run` does)."""
    u = tmp_path / "u.upd"
    u.write_text("+link(@a,b,1).\n-link(@a,b,1).\n-link(@a,b,1).\n+link(@a,b,1).\n---\n"
                 "+link(@b,c,1).\n+link(@b,c,1).\n-link(@b,c,1).\n")
    r = run("eval", "reachability", "--updates", str(u), "--json", "--shuffle", "3")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)[-1] == {"reachable": [["a", "b"]]}


@pytest.mark.parametrize(("option", "text", "where", "message"), [
    ("--facts", "link(@a,b,1).\nlnk(@a,b,1).\n", "f:2:1", "unknown relation lnk"),
    ("--facts", "link(@a,b,1).\n  link(@a,b).\n", "f:2:3", "has 2 arguments; link takes 3"),
    ("--facts", "reachable(@a,b).\n", "f:1:1", "asserts derived relation reachable"),
    ("--updates", "+link(@a,b,1).\n---\n  -lnk(@a,b,1).\n", "f:3:4", "unknown relation lnk"),
    ("--updates", "+link(@a,b).\n", "f:1:2", "has 2 arguments; link takes 3"),
])
def test_eval_refuses_input_the_program_cannot_take(tmp_path, option, text, where,
                                                    message) -> None:
    """A fact or update file naming an unknown relation, the wrong arity or a derived
    relation is refused at its file:line:col."""
    f = tmp_path / "f"
    f.write_text(text)
    r = run("eval", "reachability", option, str(f))
    assert r.exit_code == 1 and f"{tmp_path / where}" in r.output and message in r.output
    if option == "--facts":
        assert "^" in r.output


def test_check_refuses_facts_and_updates_the_program_cannot_take(tmp_path) -> None:
    f = tmp_path / "f.facts"
    f.write_text("link(@a,b,1).\nlink(@a,b).\n")
    r = run("check", "reachability", "--facts", str(f))
    assert r.exit_code == 1 and f"{f}:2:1" in r.output and "link takes 3" in r.output
    u = tmp_path / "u.upd"
    u.write_text("+link(@a,b,1).\n---\n-route(@a,b,1).\n")
    r = run("check", "reachability", "--updates", str(u))
    assert r.exit_code == 1 and f"{u}:3:2" in r.output and "unknown relation route" in r.output
    u.write_text("+link(@a,b,1).\n")
    assert run("check", "reachability", "--updates", str(u), "--facts", str(u)).exit_code == 1
    f.write_text("link(@a,b,1).\n")
    assert run("check", "reachability", "--facts", str(f)).exit_code == 0


def test_check_locates_a_program_fact_of_the_wrong_arity(tmp_path) -> None:
    p = tmp_path / "p.ndlog"
    p.write_text("r(@X,Y) :- link(@X,Y,C).\n  link(@a,b).\n")
    r = run("check", str(p))
    assert r.exit_code == 1 and f"{p}:2:3: error[ARITY]" in r.output
