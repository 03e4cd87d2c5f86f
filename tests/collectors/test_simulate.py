"""Failure scenarios -> events: exact scripted output, the transition filter's counts,
seeded replay of random failures, scenario-file errors, and the ``simulate`` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from collectors.scenario import Scenario
from collectors.sim_commands import simulate as simulate_cmd
from collectors.simulate import run, simulate
from netrules.errors import CollectorError
from netrules.eventlog.log import EventLog
from netrules.eventlog.schema import Event, EventKind
from netrules.facts import Fact
from topologies import generate, link_facts, load_topology

UP, DOWN = EventKind.LINK_UP, EventKind.LINK_DOWN
NUP, NDOWN = EventKind.NODE_UP, EventKind.NODE_DOWN


def triangle_tail() -> nx.Graph:
    """a-b-c triangle plus c-d (cost 5): small enough to list every event by hand."""
    g = nx.Graph()
    g.add_edge("a", "b", cost=1)
    g.add_edge("b", "c", cost=1)
    g.add_edge("a", "c", cost=1)
    g.add_edge("c", "d", cost=5)
    return g


def brief(events: list[Event]) -> list[tuple[float, str, str, str]]:
    return [(e.time, str(e.kind), e.op, str(e.fact)) for e in events]


def test_initial_topology_is_every_link_up_at_time_zero() -> None:
    g = triangle_tail()
    events = simulate(g, Scenario(name="t"))
    assert [e.fact for e in events] == link_facts(g)
    assert {(e.time, e.op, e.kind) for e in events} == {(0.0, "+", UP)}
    assert [e.id for e in events] == [f"sim:t:{i}" for i in range(8)]
    assert events[0].source == "sim:t"


SCRIPT = """\
# every kind of step
at 10 fail link a b        # both directions
at 12 fail link b a        # already down: nothing, counted
at 20 recover link a b
at 30 fail node c
at 35 recover link c d     # c is down: the link stays down
at 40 recover node c
at 50 flap link a b every 2 times 2
at 60 partition a,b | c,d
at 70 heal a,b | c,d
"""


def test_exact_events_for_scripted_scenario() -> None:
    sim = run(triangle_tail(), Scenario.parse(SCRIPT, "s.scn", name="s"))
    assert brief(sim.events[8:]) == [
        (10.0, "link_down", "-", "link(@a,b,1)"),
        (10.0, "link_down", "-", "link(@b,a,1)"),
        (20.0, "link_up", "+", "link(@a,b,1)"),
        (20.0, "link_up", "+", "link(@b,a,1)"),
        (30.0, "node_down", "-", "link(@a,c,1)"),
        (30.0, "node_down", "-", "link(@b,c,1)"),
        (30.0, "node_down", "-", "link(@c,a,1)"),
        (30.0, "node_down", "-", "link(@c,b,1)"),
        (30.0, "node_down", "-", "link(@c,d,5)"),
        (30.0, "node_down", "-", "link(@d,c,5)"),
        (40.0, "node_up", "+", "link(@a,c,1)"),
        (40.0, "node_up", "+", "link(@b,c,1)"),
        (40.0, "node_up", "+", "link(@c,a,1)"),
        (40.0, "node_up", "+", "link(@c,b,1)"),
        (40.0, "node_up", "+", "link(@c,d,5)"),
        (40.0, "node_up", "+", "link(@d,c,5)"),
        (50.0, "link_down", "-", "link(@a,b,1)"),
        (50.0, "link_down", "-", "link(@b,a,1)"),
        (51.0, "link_up", "+", "link(@a,b,1)"),
        (51.0, "link_up", "+", "link(@b,a,1)"),
        (52.0, "link_down", "-", "link(@a,b,1)"),
        (52.0, "link_down", "-", "link(@b,a,1)"),
        (53.0, "link_up", "+", "link(@a,b,1)"),
        (53.0, "link_up", "+", "link(@b,a,1)"),
        (60.0, "link_down", "-", "link(@a,c,1)"),
        (60.0, "link_down", "-", "link(@b,c,1)"),
        (60.0, "link_down", "-", "link(@c,a,1)"),
        (60.0, "link_down", "-", "link(@c,b,1)"),
        (70.0, "link_up", "+", "link(@a,c,1)"),
        (70.0, "link_up", "+", "link(@b,c,1)"),
        (70.0, "link_up", "+", "link(@c,a,1)"),
        (70.0, "link_up", "+", "link(@c,b,1)"),
    ]
    assert sim.dropped == {"down_while_down": 2, "still_down": 2}
    assert sim.present == set(link_facts(triangle_tail()))
    ev = sim.events[8]
    assert ev.id == "sim:s:8"
    assert ev.detail == {"step": "at 10 fail link a b", "where": "s.scn:2"}
    assert sim.events[24].detail["flap"] == 1


def test_node_repair_keeps_independently_failed_link_down() -> None:
    text = "at 1 fail link c d\nat 2 fail node c\nat 3 recover node c\n"
    sim = run(triangle_tail(), Scenario.parse(text))
    at3 = [str(e.fact) for e in sim.events if e.time == 3]
    assert "link(@c,d,5)" not in at3 and len(at3) == 4
    assert Fact("link", ("c", "d", 5)) not in sim.present


def test_random_failures_replay_from_seed() -> None:
    g = load_topology("grid:4x4")
    text = "random failures mtbf=100 mttr=10 until=1000\nat 500 fail node r1c1\n"
    first = simulate(g, Scenario.parse(text, "r.scn"))
    again = simulate(g, Scenario.parse(text, "r.scn"))
    assert first == again
    assert [e.detail for e in first] == [e.detail for e in again]
    assert len(first) > 100
    other = simulate(g, Scenario.parse("seed 1\n" + text))
    assert brief(other) != brief(first)
    times = [e.time for e in first]
    assert times == sorted(times) and max(times) < 1000
    assert {str(e.kind) for e in first} == {"link_up", "link_down", "node_down"}


def test_random_failures_always_consistent_with_filter() -> None:
    """Replaying the events on a set never sees a duplicate up or a down of an absent link."""
    g = generate.fat_tree(4)
    sc = Scenario.parse("random failures mtbf=80 mttr=30 until=2000 on=nodes\n", name="x")
    for scenario in (Scenario.from_flags(random_failures="50,20,2000", seed=7), sc):
        state: set[Fact] = set()
        for e in simulate(g, scenario):
            assert (e.fact in state) == (e.op == "-")
            (state.add if e.op == "+" else state.discard)(e.fact)


@pytest.mark.parametrize(
    "text,line,what",
    [
        ("at 1 fail link a b\nat 2 fail link a zz\n", 2, "unknown node 'zz'"),
        ("at 1 fail link a d\n", 1, "no link a d"),
        ("at 1 fail node q\n", 1, "unknown node 'q'"),
        ("\n\nat 5 partition a,b | c,x\n", 3, "unknown node 'x'"),
    ],
)
def test_unknown_names_are_reported_at_file_line(text: str, line: int, what: str) -> None:
    scenario = Scenario.parse(text, "bad.scn")
    with pytest.raises(CollectorError) as ei:
        run(triangle_tail(), scenario)
    assert f"bad.scn:{line}:" in str(ei.value) and what in str(ei.value)


@pytest.mark.parametrize(
    "text,line,what",
    [
        ("at 1 fail link a b\nat x fail link a b\n", 2, "time must be a number"),
        ("at 1 break link a b\n", 1, "unknown step 'break'"),
        ("at 1 fail link a\n", 1, "expected 'at T fail link A B'"),
        ("at 1 flap link a b every 0 times 2\n", 1, "'every' must be > 0"),
        ("at 1 flap link a b every 2 times x\n", 1, "'times' must be a positive integer"),
        ("at 1 partition a,b c\n", 1, "two node groups"),
        ("at 1 partition a,b | b,c\n", 1, "on both sides"),
        ("random failures mtbf=10\n", 1, "needs mttr=, until="),
        ("random failures mtbf=10 mttr=1 until=5 color=red\n", 1, "unexpected 'color=red'"),
        ("random failures mtbf=0 mttr=1 until=5\n", 1, "must be > 0"),
        ("fail link a b\n", 1, "expected 'at T"),
        ('at 1 fail link "a b\n', 1, "cannot split"),
    ],
)
def test_syntax_errors_name_file_and_line(text: str, line: int, what: str) -> None:
    with pytest.raises(CollectorError) as ei:
        Scenario.parse(text, "bad.scn")
    assert f"bad.scn:{line}:" in str(ei.value) and what in str(ei.value)
    assert "bad.scn" in ei.value.render()


def test_quoted_zoo_names() -> None:
    g = load_topology("abilene")
    sim = run(g, Scenario.parse('at 5 fail link "New York" Chicago\n'
                                'at 6 partition "New York","Washington DC" | Chicago\n'))
    assert [str(e.fact) for e in sim.events if e.time == 5] == [
        'link(@"New York","Chicago",1)', 'link(@"Chicago","New York",1)']
    assert sim.dropped["down_while_down"] == 2


def test_from_flags_and_load(tmp_path: Path) -> None:
    f = tmp_path / "outage.scn"
    f.write_text("seed 3\nat 10 fail node c\n")
    base = Scenario.load(f)
    assert base.name == "outage" and base.seed == 3
    sc = Scenario.from_flags(fail_links=[("a", "b")], random_failures="100,10,50", base=base)
    assert sc.seed == 3 and len(sc.steps) == 2 and len(sc.random) == 1
    assert Scenario.from_flags(seed=9, base=base).seed == 9
    with pytest.raises(CollectorError, match="MTBF,MTTR,UNTIL"):
        Scenario.from_flags(random_failures="1,2")
    events = simulate(triangle_tail(), sc)
    assert events[8].time == 1.0 and events[8].detail["step"] == "--fail-link a b"


# ------------------------------------------------------------------------------------- CLI


def test_cli_prints_json_lines(tmp_path: Path) -> None:
    res = CliRunner().invoke(simulate_cmd, ["ring:4", "--fail-link", "n0", "n1", "--json"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    events = [Event.from_line(x) for x in lines]
    assert len(events) == 8 + 2
    assert events[-1].fact == Fact("link", ("n1", "n0", 1)) and events[-1].op == "-"
    assert json.loads(lines[0])["id"] == "sim:cli:0"


def test_cli_scenario_to_log(tmp_path: Path) -> None:
    scn = tmp_path / "s.scn"
    scn.write_text("at 10 fail node r1c1\nrandom failures mtbf=20 mttr=5 until=100\n")
    log = tmp_path / "log"
    args = ["grid:3x3", "--scenario", str(scn), "--seed", "4", "--log", str(log)]
    res = CliRunner().invoke(simulate_cmd, args)
    assert res.exit_code == 0, res.output
    logged = list(EventLog(log).read())
    assert logged == simulate(load_topology("grid:3x3"),
                              Scenario.from_flags(seed=4, base=Scenario.load(scn)))
    assert logged[0].id == "sim:s:0"
    assert "appended" in res.stderr


def test_cli_text_output_and_errors(tmp_path: Path) -> None:
    res = CliRunner().invoke(simulate_cmd, ["abilene", "--fail-node", "Denver"])
    assert res.exit_code == 0
    assert '-link(@"Denver","Kansas City",1)' in res.stdout and "node_down" in res.stdout
    res = CliRunner().invoke(simulate_cmd, ["ring:4", "--fail-link", "n0", "n9"])
    assert res.exit_code != 0 and "unknown node 'n9'" in res.output
    res = CliRunner().invoke(simulate_cmd, ["nosuch"])
    assert res.exit_code != 0 and "bundled" in res.output.lower()
