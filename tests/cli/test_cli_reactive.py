"""RapidNet's link-state programs (``examples/rapidnet/sim-ls-*.olg``, unmodified) through
``netrules run --simulate ... --once``: the simulator's link events feed ``link`` (announced
when a link comes up and every beacon while it stays up), the tables land in the store, and
what a failed link refreshed expires after its lifetime.

ring:6 with links n0-n1 and n3-n4 failed at t=1 splits into {n1,n2,n3} and {n4,n5,n0}: at
every node, tLSU must hold exactly the links of its part (both directions), tLink its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from netrules.cli import main
from netrules.store import open_store
from topologies.load import load_topology

PROGRAMS = Path(__file__).resolve().parents[2] / "examples" / "rapidnet"
FAILED = [("n0", "n1"), ("n3", "n4")]


def cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def run(name: str, d: Path, *extra: object):
    r = cli("run", PROGRAMS / name, "--simulate", "ring:6", "--fail-link", *FAILED[0],
            "--fail-link", *FAILED[1], "--once", "--store", d / "s.db", "--events-dir",
            d / "events", *extra)
    assert r.exit_code == 0, r.output
    return r


def table(d: Path, rel: str) -> set[tuple]:
    with open_store(str(d / "s.db"), read_only=True) as s:
        return {tuple(f.args) for f in s.read_view(rel)}


def arcs(g: nx.Graph) -> set[tuple]:
    return {(a, b, c) for u, v, c in g.edges(data="cost") for a, b in ((u, v), (v, u))}


@pytest.mark.parametrize("name", ["sim-ls-periodic.olg", "sim-ls-triggered.olg"])
def test_run_floods_each_part_its_links(name: str, tmp_path: Path) -> None:
    r = run(name, tmp_path, "--json")
    out = json.loads(r.output.splitlines()[-1])
    # default horizon: last event (1 s) + tLSU's 65 s + one round of the 60 s timer (delay 60,
    # period 60, 1 s spacing over 6 nodes)
    assert out["clock"] == 1 + 65 + 60 + 60 + 6
    g = load_topology("ring:6")
    g.remove_edges_from(FAILED)
    live = arcs(g)
    assert {t[:3] for t in table(tmp_path, "tLink")} == live
    want = {(n, a, b, c) for n in g for a, b, c in live
            if a in nx.node_connected_component(g, n)}
    assert {t[:4] for t in table(tmp_path, "tLSU")} == want
    assert {(n, o, d, c) for n, o, d, c, *_ in (tuple(x) for x in out["views"]["tLSU"])} \
        == want
    # and the store answers queries over it like any view
    q = cli("query", 'tLSU(@"n2",O,D,C,S,T)', "--store", tmp_path / "s.db", "--json")
    assert q.exit_code == 0, q.output
    assert {(o, d) for _, o, d, *_ in json.loads(q.output.splitlines()[0])} == {
        ("n1", "n2"), ("n2", "n1"), ("n2", "n3"), ("n3", "n2")}


def test_a_failed_links_entries_expire_after_their_lifetime(tmp_path: Path) -> None:
    """sim-ls-triggered floods every link at t=0 (r13, sequence 0); n0-n1 fails at t=1 and is
    never announced again, so its tLink entries (lifetime 11 s) go at 11 s and its tLSU
    entries (65 s) at 65 s, at every node. Each run takes the same store further."""
    failed = {("n0", "n1"), ("n1", "n0")}

    def held(rel: str) -> set[tuple]:
        return {t[:2] if rel == "tLink" else t[1:3] for t in table(tmp_path, rel)} & failed

    expected = [(10.5, failed, failed), (11.5, set(), failed), (64.5, set(), failed),
                (65.5, set(), set())]
    for until, in_link, in_lsu in expected:
        run("sim-ls-triggered.olg", tmp_path, "--until", until)
        assert held("tLink") == in_link, until
        assert held("tLSU") == in_lsu, until
    # every node had heard of the failed link before it went (the ring was whole at t=0)
    with open_store(str(tmp_path / "s.db"), read_only=True) as s:
        gone = [c for c in s.changes() if c.op == "-" and c.fact.relation == "tLSU"
                and tuple(c.fact.args[1:3]) in failed]
        assert {c.fact.args[0] for c in gone} == {f"n{i}" for i in range(6)}
        assert {s.batches()[-1].batch_id} == {c.batch_id for c in gone}


def test_until_needs_once_and_spark_is_refused(tmp_path: Path) -> None:
    r = cli("run", PROGRAMS / "sim-ls-periodic.olg", "--simulate", "ring:3", "--until", "5",
            "--store", tmp_path / "s.db", "--events-dir", tmp_path / "ev")
    assert r.exit_code == 2 and "--until runs the clock on after the whole log" in r.output
    r = cli("run", PROGRAMS / "sim-ls-periodic.olg", "--simulate", "ring:3", "--once",
            "--engine", "spark", "--store", tmp_path / "s2.db", "--events-dir",
            tmp_path / "ev2")
    assert r.exit_code == 1 and "run in process on the reference engine" in r.output


def test_eval_runs_event_rules_on_the_files_clock(tmp_path: Path) -> None:
    """a-b-c as link facts at time 0 (announced every 5 s while up), then b-c goes down at
    update time 2 and 3: by 80 s its tLink and tLSU entries have expired, a-b's stay."""
    facts = tmp_path / "links.facts"
    facts.write_text("".join(f'link(@"{x}","{y}",1).\n'
                             for x, y in ("ab", "ba", "bc", "cb")))
    updates = tmp_path / "links.updates"
    updates.write_text('+link(@"a","b",1).\n---\n-link(@"b","c",1).\n-link(@"c","b",1).\n')
    r = cli("eval", PROGRAMS / "sim-ls-triggered.olg", "--facts", facts, "--updates",
            updates, "--until", 80, "--json")
    assert r.exit_code == 0, r.output
    after = json.loads(r.output)
    assert len(after) == 2
    assert {tuple(t[:2]) for t in after[0]["tLink"]} == {("a", "b"), ("b", "a"), ("b", "c"),
                                                        ("c", "b")}
    assert {tuple(t[:2]) for t in after[1]["tLink"]} == {("a", "b"), ("b", "a")}
    assert {tuple(t[:3]) for t in after[1]["tLSU"]} == {
        (n, x, y) for n in "ab" for x, y in ("ab", "ba")}
    bad = tmp_path / "bad.facts"
    bad.write_text('link(@"a","b").\n')
    r = cli("eval", PROGRAMS / "sim-ls-triggered.olg", "--facts", bad)
    assert r.exit_code == 1 and f"{bad}:1:1" in r.output, r.output
