"""`netrules why-not` on stores of the three programs that answer "is there a route?".

Each store is a line n0-n1-n2-n3-n4 whose link n2-n3 fails at t=1 and stays down, written by
the real pipeline (`netrules run --once`): batch 0 all up, batch 1 the cut.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from netrules.cli import main


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module", params=[("path_vector", "bestPath"), ("best_routes", "bestPath"),
                                        ("reachability", "reachable")], ids=lambda p: p[0])
def cut_store(request, tmp_path_factory) -> tuple[str, str]:
    program, relation = request.param
    d = tmp_path_factory.mktemp(program)
    scenario = d / "cut.scenario"
    scenario.write_text("at 1 fail link n2 n3\n")
    store = d / "s.db"
    r = cli("run", program, "--simulate", "line:5", "--scenario", scenario, "--once",
            "--store", store, "--events-dir", d / "events", "-q")
    assert r.exit_code == 0, r.output
    return str(store), relation


def atom(relation: str, src: str, dst: str) -> str:
    return f"{relation}({src},{dst})" if relation == "reachable" else \
        f"{relation}({src},{dst},P,C)"


def test_why_not_names_the_last_fact_the_batch_and_the_cut_link(cut_store) -> None:
    store, relation = cut_store
    r = cli("why-not", atom(relation, "n0", "n4"), "--store", store, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["holds"] is False
    assert out["last"]["args"][:2] == ["n0", "n4"]
    assert out["lost_batch"] == 1
    assert sorted(out["taken_by"]) == ["link(@n2,n3,1)", "link(@n3,n2,1)"]
    assert out["links"] == ["n2–n3"]
    assert out["neighbours"] == [{"node": "n1", "link": "up", "since_batch": 1,
                                  "reason": f"n1 has no {relation} to n4 either "
                                            f"(lost in batch 1)"}]
    assert out["incident"] is not None and out["incident"]["links"] == ["n2–n3"]


def test_why_not_at_the_cut_says_the_link_is_down(cut_store) -> None:
    store, relation = cut_store
    r = cli("why-not", atom(relation, "n2", "n3"), "--store", store)
    assert r.exit_code == 0, r.output
    assert f"{relation}(n2, n3, …) does not hold." in r.output
    assert "removed by batch 1" in r.output
    assert "n3: the link n2–n3 is down (since batch 1)" in r.output
    assert f"n1: n1 has no {relation} to n3 either (lost in batch 1)" in r.output


def test_why_not_on_a_pair_that_holds_and_on_bad_input(cut_store) -> None:
    store, relation = cut_store
    r = cli("why-not", atom(relation, "n0", "n2"), "--store", store)
    assert r.exit_code == 0 and "holds" in r.output
    r = cli("why-not", atom(relation, "n0", "n9"), "--store", store)
    assert r.exit_code == 1 and "unknown node 'n9'" in r.output
    r = cli("why-not", atom(relation, "X", "n2"), "--store", store)
    assert r.exit_code == 1 and "as constants" in r.output
    r = cli("why-not", "nosuch(n0,n2)", "--store", store)
    assert r.exit_code == 1 and "unknown relation" in r.output


@pytest.mark.parametrize("program", ["best_routes", "path_vector"])
def test_why_a_best_route_reaches_the_links_it_uses(program: str, tmp_path) -> None:
    """Best routes keep no supports (their stratum iterates through an aggregate); the
    store's derivations are witnesses found in the view, so ``why`` walks a best path down
    through the routes it extends to the links, hop by hop, with nothing left unexplained."""
    store = tmp_path / "s.db"
    r = cli("run", program, "--simulate", "line:5", "--once", "--store", store,
            "--events-dir", tmp_path / "events", "-q")
    assert r.exit_code == 0, r.output
    fact = 'bestPath(@n0,n4,["n0","n1","n2","n3","n4"],4)'
    r = cli("why", fact, "--store", store, "--json")
    assert r.exit_code == 0, r.output
    tree = json.loads(r.output)

    def walk(node: dict) -> list[dict]:
        return [node] + [x for c in node["children"] for x in walk(c)]

    nodes = walk(tree)
    assert not [n["fact"] for n in nodes if n["note"] == "no stored derivation"]
    leaves = sorted(n["fact"] for n in nodes if not n["children"] and n["note"] is None)
    assert leaves == [f"link(@n{i},n{i + 1},1)" for i in range(4)]


@pytest.mark.parametrize("program,topology", [("path_vector", "grid:3x3"),
                                              ("best_routes", "grid:4x4"),
                                              ("reachability", "grid:4x4")])
def test_every_stored_derivation_rests_on_facts_that_hold(program: str, topology: str,
                                                          tmp_path) -> None:
    """After links fail and recover, batch by batch, every derivation the store holds for a
    fact of a view names only facts the store holds: path_vector's least cost whose path
    went while another of the same cost stayed gets a new witness, not the one through the
    path that went. A stale witness would make ``why`` explain a route by a link that is
    down."""
    import sqlite3

    store = tmp_path / "s.db"
    r = cli("run", program, "--simulate", topology, "--random-failures", "30,8,150",
            "--seed", "5", "--once", "--store", store, "--events-dir", tmp_path / "ev", "-q")
    assert r.exit_code == 0, r.output
    con = sqlite3.connect(store)
    held = set(con.execute("SELECT relation, args FROM views"))
    batches = con.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
    rows = con.execute("SELECT relation, args, body FROM derivations").fetchall()
    con.close()
    assert batches > 20 and rows
    checked = 0
    for rel, args, body in rows:
        if (rel, args) not in held:
            continue  # (a fact that went keeps no derivation the store shows)
        for brel, bargs, _loc in json.loads(body):
            text = json.dumps(bargs, separators=(",", ":"), ensure_ascii=False)
            assert (brel, text) in held, f"{rel}{args} rests on {brel}{text}, which is gone"
            checked += 1
    assert checked > 100
