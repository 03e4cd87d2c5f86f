"""The pipeline's CLI through CliRunner: run, query, why, routes, traceroute, diff, alerts, demo.

One store is built once per module from a five-node line n0-n1-n2-n3-n4 under path_vector,
where link n2-n3 fails at t=1 and recovers at t=2: batch 0 is the initial topology, batch 1
the failure (the line splits in two), batch 2 the recovery. Every answer is known by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from netrules.cli import main
from netrules.store import open_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LEFT, RIGHT = ("n0", "n1", "n2"), ("n3", "n4")
CUT = {(a, b) for a in LEFT for b in RIGHT} | {(b, a) for a in LEFT for b in RIGHT}


def cli(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def line_store(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("line")
    store = str(d / "s.db")
    r = cli("run", "path_vector", "--simulate", "line:5", "--scenario",
            EXAMPLES / "line-failure.scenario", "--once", "--store", store,
            "--events-dir", d / "events")
    assert r.exit_code == 0, r.output
    assert "RAISED" in r.output and "CLEARED" in r.output
    return store


def test_every_command_has_help() -> None:
    for name in main.commands:
        r = cli(name, "--help")
        assert r.exit_code == 0, (name, r.output)
        assert "Usage:" in r.output


def test_run_needs_exactly_one_source(tmp_path) -> None:
    r = cli("run", "path_vector", "--once", "--store", tmp_path / "s.db")
    assert r.exit_code == 2 and "exactly one source" in r.output


def test_query_matches_and_json(line_store: str) -> None:
    r = cli("query", "bestPath(@n0,X,P,C)", "--store", line_store, "--json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output.splitlines()[0])
    assert sorted(row[1] for row in rows) == ["n1", "n2", "n3", "n4"]
    assert ["n0", "n4", ["n0", "n1", "n2", "n3", "n4"], 4] in rows
    r = cli("query", "link(@X,Y,C)", "--store", line_store)
    assert r.exit_code == 0 and "link(@n2,n3,1)" in r.output


def test_query_unknown_node_and_relation(line_store: str) -> None:
    r = cli("query", "bestPath(@n9,X,P,C)", "--store", line_store)
    assert r.exit_code == 1
    assert "unknown node 'n9'" in r.output and "error[UNKNOWN_NODE]" in r.output
    r = cli("query", "bestPth(@n0,X,P,C)", "--store", line_store)
    assert r.exit_code == 1
    assert "unknown relation 'bestPth'" in r.output and "did you mean bestPath" in r.output


def test_query_malformed_atom_has_caret(line_store: str) -> None:
    r = cli("query", "bestPath(@n0,,X)", "--store", line_store)
    assert r.exit_code == 1
    assert "error[SYNTAX]" in r.output and "^" in r.output


def test_missing_store_is_a_clear_error(tmp_path) -> None:
    r = cli("alerts", "--store", tmp_path / "none.db")
    assert r.exit_code == 1 and "Hint:" in r.output


def test_why_tree_ends_in_link_facts(line_store: str) -> None:
    fact = "bestPath(@n0,n4,[n0,n1,n2,n3,n4],4)"
    r = cli("why", fact, "--store", line_store, "--json")
    assert r.exit_code == 0, r.output
    tree = json.loads(r.output)
    assert tree["rule"] == "b2"

    def leaves(node):
        if node["note"] == "see above":
            return []
        if not node["children"]:
            return [node]
        return [x for c in node["children"] for x in leaves(c)]

    got = leaves(tree)
    assert got and all(x["relation"] == "link" and x["rule"] is None for x in got)
    hops = sorted(tuple(x["args"][:2]) for x in got)
    assert hops == [("n0", "n1"), ("n1", "n2"), ("n2", "n3"), ("n3", "n4")]
    text = cli("why", fact, "--store", line_store).output
    assert "[base fact]" in text and "[p2]" in text and "[b1]" in text


def test_why_rejects_variables_and_absent_facts(line_store: str) -> None:
    r = cli("why", "bestPath(@n0,X,P,C)", "--store", line_store)
    assert r.exit_code == 2 and "ground fact" in r.output
    r = cli("why", "bestPath(@n0,n4,[n0,n4],1)", "--store", line_store)
    assert r.exit_code == 1 and "does not hold" in r.output
    r = cli("why", "link(@n0,n1", "--store", line_store)
    assert r.exit_code == 1 and "^" in r.output


def test_routes(line_store: str) -> None:
    r = cli("routes", "n0", "--store", line_store)
    assert r.exit_code == 0
    assert "n0 -> n4  via n0 n1 n2 n3 n4 cost 4" in r.output
    r = cli("routes", "n0", "n3", "--store", line_store, "--json")
    assert json.loads(r.output) == [["n0", "n3", ["n0", "n1", "n2", "n3"], 3]]


def test_traceroute_hop_by_hop(line_store: str) -> None:
    r = cli("traceroute", "n0", "n4", "--store", line_store, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["complete"]
    assert [(h["node"], h["next_hop"], h["cost_so_far"]) for h in out["hops"]] == [
        ("n0", "n1", 1), ("n1", "n2", 2), ("n2", "n3", 3), ("n3", "n4", 4)]
    assert all(h["rule"] == "b2" and h["route"].startswith("bestPath(@") for h in out["hops"])
    text = cli("traceroute", "n4", "n0", "--store", line_store).output
    assert "reached n0 in 4 hops" in text
    r = cli("traceroute", "n0", "nope", "--store", line_store)
    assert r.exit_code == 1 and "unknown node 'nope'" in r.output


def test_diff_between_batches_and_around_an_event(line_store: str) -> None:
    r = cli("diff", "--before", "0", "--after", "1", "--store", line_store, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["relation"] == "bestPath"
    assert {tuple(p) for p in out["lost"]} == CUT and out["gained"] == []
    back = json.loads(cli("diff", "--before", "1", "--after", "2", "--store", line_store,
                          "--json").output)
    assert {tuple(p) for p in back["gained"]} == CUT and back["lost"] == []
    assert json.loads(cli("diff", "--before", "0", "--after", "2", "--store", line_store,
                          "--json").output)["lost"] == []
    with open_store(line_store, read_only=True) as s:
        fail_event = next(e for a in s.alerts() for e in a.trigger_events)
    by_event = json.loads(cli("diff", "--event", fail_event.id, "--store", line_store,
                              "--json").output)
    assert by_event["before"] == 0 and by_event["after"] == 1
    assert {tuple(p) for p in by_event["lost"]} == CUT
    r = cli("diff", "--event", "no-such-event", "--store", line_store)
    assert r.exit_code == 1 and "no batch applied" in r.output


def test_alerts_groups_the_cut_into_one_incident(line_store: str) -> None:
    out = json.loads(cli("alerts", "--store", line_store, "--json").output)["incidents"]
    assert len(out) == 1, [i["title"] for i in out]
    inc = out[0]
    assert inc["links"] == ["n2–n3"] and inc["state"] == "ended" and inc["flaps"] == 1
    assert (inc["start_batch"], inc["end_batch"]) == (1, 2)
    alerts = inc["alerts"]
    assert {(a["subject"]["src"], a["subject"]["dst"]) for a in alerts} == CUT
    assert len(inc["affected"]) == len(CUT)
    assert all(a["state"] == "cleared" and a["raised_batch"] == 1 and a["cleared_batch"] == 2
               for a in alerts)
    active = json.loads(cli("alerts", "--active", "--store", line_store, "--json").output)
    assert active == {"incidents": []}
    text = cli("alerts", "--store", line_store).output
    assert text.startswith("[batch 1] INCIDENT major: n2–n3 down: 12 routes lost")
    assert text.count("INCIDENT") == 1 and text.count("route lost:") == 12


def test_run_refuses_a_store_of_another_program(line_store: str, tmp_path) -> None:
    r = cli("run", "reachability", "--simulate", "ring:4", "--once", "--store", line_store,
            "--events-dir", tmp_path / "ev")
    assert r.exit_code == 1 and "Hint:" in r.output and "path_vector" in r.output


def test_run_once_json_prints_views(tmp_path) -> None:
    r = cli("run", "reachability", "--simulate", "ring:4", "--once", "--json",
            "--store", tmp_path / "s.db", "--events-dir", tmp_path / "ev")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    assert out["mode"] == "once" and len(out["views"]["reachable"]) == 16


@pytest.mark.parametrize("cached", [True, False])
def test_run_says_when_the_kernels_compile(tmp_path, monkeypatch, cached: bool) -> None:
    """A first run after an install compiles the engine's kernels for about 30 s: the run
    says so before it starts, on stderr, and only then (Numba's cache missed)."""
    from netrules.engine.columnar import kernels
    from netrules.pipeline.run import COMPILING

    monkeypatch.setattr(kernels, "_WARM", False)  # this process has loaded them already
    monkeypatch.setattr(kernels, "compiled", lambda kernel: not cached)
    r = cli("run", "reachability", "--simulate", "ring:4", "--once",
            "--store", tmp_path / "s.db", "--events-dir", tmp_path / "ev")
    assert r.exit_code == 0, r.output
    assert (COMPILING in r.output) is not cached
    if not cached:  # said before the first batch
        assert r.output.index(COMPILING) < r.output.index("[batch 0]")


def test_compiled_tells_a_cache_miss() -> None:
    from numba import njit

    @njit(cache=False)
    def double(x: int) -> int:
        return 2 * x

    from netrules.engine.columnar import kernels

    assert not kernels.compiled(double)
    assert double(2) == 4 and kernels.compiled(double)


def test_demo_prints_alerts_and_dashboard_hint(tmp_path) -> None:
    r = cli("demo", "--dir", tmp_path / "demo")
    assert r.exit_code == 0, r.output
    assert "RAISED  major    route lost" in r.output and "CLEARED route_lost" in r.output
    assert f"netrules dashboard --store {tmp_path / 'demo' / 'netrules.db'}" in r.output
    with open_store(str(tmp_path / "demo" / "netrules.db"), read_only=True) as s:
        assert len(s.alerts()) == 20 and not s.alerts(active_only=True)


def test_readme_documents_every_command_and_setting() -> None:
    from netrules import settings

    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    assert settings.markdown_table() in readme
    for name in main.commands:
        assert f"netrules {name}" in readme or f"`{name}" in readme, name


def test_run_from_a_capture(tmp_path) -> None:
    from scapy.contrib.ospf import OSPF_Hdr, OSPF_Link, OSPF_LSUpd, OSPF_Router_LSA
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    def lsa(adv: str, seq: int, nbrs: list[str]):
        body = OSPF_Router_LSA(id=adv, adrouter=adv, seq=seq, linklist=[
            OSPF_Link(type=1, id=n, data="10.0.0.1", metric=1) for n in nbrs])
        p = (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
             / IP(src="10.0.0.1", dst="224.0.0.5", proto=89) / OSPF_Hdr(src=adv, type=4)
             / OSPF_LSUpd(lsalist=[body]))
        p.time = float(seq - 0x80000000)
        return p

    cap = tmp_path / "ospf.pcap"
    wrpcap(str(cap), [lsa("1.1.1.1", 0x80000001, ["2.2.2.2"]),
                      lsa("2.2.2.2", 0x80000002, ["3.3.3.3"])])
    r = cli("run", "reachability", "--capture", cap, "--once", "--json",
            "--store", tmp_path / "s.db", "--events-dir", tmp_path / "ev")
    assert r.exit_code == 0, r.output
    views = json.loads(r.output.strip().splitlines()[-1])["views"]
    assert sorted(map(tuple, views["reachable"])) == [
        ("1.1.1.1", "2.2.2.2"), ("1.1.1.1", "3.3.3.3"), ("2.2.2.2", "3.3.3.3")]


def test_a_flapping_link_is_one_incident(tmp_path) -> None:
    scenario = tmp_path / "flap.scenario"
    scenario.write_text("".join(f"at {t} fail link n1 n2\nat {t + 1} recover link n1 n2\n"
                                for t in (10, 20, 30)))
    r = cli("run", "path_vector", "--simulate", "line:3", "--scenario", scenario, "--once",
            "-q", "--store", tmp_path / "s.db", "--events-dir", tmp_path / "events")
    assert r.exit_code == 0, r.output
    (inc,) = json.loads(cli("alerts", "--store", tmp_path / "s.db", "--json").output)["incidents"]
    assert inc["flaps"] == 3 and inc["links"] == ["n1–n2"] and inc["state"] == "ended"
    assert len(inc["alerts"]) == 3 * 4  # n0,n1 <-> n2 lost three times ...
    assert len(inc["affected"]) == 4    # ... four pairs
    assert "flapped 3×" in inc["title"]


def _log_with_bad_events(d: Path) -> Path:
    from netrules.eventlog import Event, EventKind, EventLog
    from netrules.facts import Fact

    facts = [Fact("link", ("a", "b", 1)), Fact("lnk", ("a", "b", 1)), Fact("lnk", ("b", "c", 1)),
             Fact("link", ("a", "c")), Fact("link", ("b", "c", 1))]
    EventLog(d).append([Event(f"t:{i}", float(i), "t", EventKind.FACT, "+", f)
                        for i, f in enumerate(facts)])
    return d


def test_run_counts_events_it_cannot_take_and_names_them_once(tmp_path) -> None:
    ev = _log_with_bad_events(tmp_path / "ev")
    r = CliRunner().invoke(main, ["run", "reachability", "--events", str(ev), "--once",
                                  "--json", "--store", str(tmp_path / "s.db")])
    assert r.exit_code == 0, r.output
    warnings = [line for line in r.output.splitlines() if line.startswith("warning:")]
    seg = next(ev.glob("events-*.jsonl"))
    assert warnings == [
        f"warning: {seg}:2: unknown relation lnk in lnk(@a,b,1); events like it are counted "
        "in the batch stats (ignored.lnk), not applied (--strict stops instead)",
        f"warning: {seg}:4: link(@a,c) has 2 arguments; link takes 3; events like it are "
        "counted in the batch stats (ignored.arity:link), not applied (--strict stops instead)"]
    out = json.loads(r.output.strip().splitlines()[-1])
    assert sorted(map(tuple, out["views"]["reachable"])) == [("a", "b"), ("a", "c"), ("b", "c")]
    with open_store(str(tmp_path / "s.db"), read_only=True) as s:
        assert s.batches(limit=1)[-1].stats["ignored"] == {"lnk": 2, "arity:link": 1}


def test_run_strict_stops_at_the_first_and_commits_nothing(tmp_path) -> None:
    ev = _log_with_bad_events(tmp_path / "ev")
    r = cli("run", "reachability", "--events", ev, "--once", "--strict",
            "--store", tmp_path / "s.db")
    seg = next(ev.glob("events-*.jsonl"))
    assert r.exit_code == 1 and f"{seg}:2: unknown relation lnk in lnk(@a,b,1)" in r.output
    with open_store(str(tmp_path / "s.db"), read_only=True) as s:
        assert s.last_batch_id() is None
