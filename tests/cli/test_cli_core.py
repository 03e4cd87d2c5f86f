"""`netrules check` and `netrules eval` through click's CliRunner."""

from __future__ import annotations

import json

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
