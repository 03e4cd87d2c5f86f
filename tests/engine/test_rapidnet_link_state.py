"""RapidNet's link-state programs (``examples/rapidnet/sim-ls-*.olg``, unmodified) on the
``Reactive`` driver: flooded LSUs give every node the links of its part of the network, and
shortest paths computed over that database equal networkx's, after each phase of a script.

RapidNet runs these programs under ``examples/rapidnet-app-simulator.cc`` (netdb2017/
rapidnet_v1.0): 3 nodes on one CSMA LAN (a broadcast reaches every node), 100 s, printing
``tLink`` and ``tLSU``; ``link`` comes from its neighbour discovery (``discovery.olg``: a
beacon every 5 s from 1 s on, so ``link`` is inserted or refreshed every 5 s with cost 1).
That driver has no link script, so the phases here are those of its ``reachable-test.cc`` /
``pathvector-test.cc`` (a line, a cut, a ring), with a broadcast reaching the nodes a node
has a link to (radio range), and the beacons carrying the script's costs. The programs
compute no routes themselves; ``ROUTES`` (ours) adds them as views over ``tLSU``.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from netrules.cli import main
from netrules.engine.reactive import Reactive
from netrules.facts import Fact
from netrules.lang.parse import parse_program
from netrules.plan import plan_program

HERE = Path(__file__).resolve().parents[2] / "examples" / "rapidnet"
PROGRAMS = ["sim-ls-periodic.olg", "sim-ls-triggered.olg"]
INF = 999999

ROUTES = """
#include "{path}"
// shortest paths over each node's link-state database: tLSU(@S, Origin, Dst, Cost, ...)
materialize(lsPath, infinity, infinity, keys(1,2,4:list)).
materialize(bestPath, infinity, infinity, keys(1,2)).
p1 lsPath(@S,D,C,P) :- tLSU(@S,S,D,C,Seq,TTL), P1 := f_append(S), P := f_append(P1,D).
p2 lsPath(@S,D,C,P) :- lsPath(@S,Z,C1,P1), tLSU(@S,Z,D,C2,Seq,TTL), f_member(P1,D) == 0,
                       C := C1 + C2, P := f_append(P1,D).
b1 bestPath(@S,D,a_MIN<C>,P) :- lsPath(@S,D,C,P).
"""

# reachable-test.cc / pathvector-test.cc: insertlink(a, b, c) is link(a,b,c) and link(b,a,c)
PHASES = [
    {(1, 2): 7, (2, 3): 4, (3, 4): 2, (4, 5): 6},
    {(1, 2): 7, (3, 4): 2, (4, 5): 6},
    {(1, 2): 7, (3, 4): 2, (4, 5): 6, (2, 3): 10, (1, 5): 3},
]
PHASE = 300.0  # long enough for tLink (11 s) and tLSU (65 s) of a cut link to expire


def plan_of(name: str, tmp_path: Path | None = None):
    path = HERE / name
    text = path.read_text(encoding="utf-8")
    if tmp_path is not None:
        path = tmp_path / f"routes-{name}"
        text = ROUTES.format(path=HERE / name)
        path.write_text(text)
    return plan_program(parse_program(text, str(path)))


def rows(r: Reactive, rel: str) -> set[tuple]:
    return {f.args for f in r.views().get(rel, [])}


def beacons(links: dict[tuple, int], t: float) -> list[tuple]:
    """What neighbour discovery raises at a beacon: link(@a,b,c) for every live link."""
    return [("+", Fact("link", (a, b, c))) for (u, v), c in sorted(links.items())
            for a, b in ((u, v), (v, u))]


@pytest.mark.parametrize("name", PROGRAMS)
def test_netrules_check_accepts_it_unmodified(name: str) -> None:
    r = CliRunner().invoke(main, ["check", str(HERE / name)])
    assert r.exit_code == 0, r.output
    assert "r32 eLSU(@Broadcast," in r.output and "r02 eLinkCount" in r.output
    assert "events fed from outside: link\n" in r.output


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_drivers_three_node_lan(name: str) -> None:
    """rapidnet-app-simulator's defaults: tLink and tLSU as printed at 100 s, written out by
    hand from the rules. Sequence numbers go to 1 at 59 s (r12); the periodic LSUs of 60-62 s
    reach every node in one broadcast (TTL 999998), the origin keeps its own at 999999.
    Triggered: r13 floods a new link at once (sequence 0), so at 30 s tLSU is complete."""
    nodes = [1, 2, 3]
    r = Reactive(plan_of(name), nodes=nodes)
    lan = {(a, b): 1 for a in nodes for b in nodes if a < b}
    for k in range(20):
        r.apply(beacons(lan, 1 + 5 * k), 1 + 5 * k)
        if k == 5:
            lsu = {(n, o, d, 1, 0, INF if n == o else INF - 1) for n in nodes
                   for o in nodes for d in nodes if o != d}
            assert rows(r, "tLSU") == (lsu if "triggered" in name else set())
    r.advance(100)
    assert rows(r, "tLink") == {(a, b, 1, 1) for a in nodes for b in nodes if a != b}
    assert rows(r, "tLSU") == {(n, o, d, 1, 1, INF if n == o else INF - 1) for n in nodes
                               for o in nodes for d in nodes if o != d}
    assert r.fired["periodic"] == 6  # r12 at 59 s, r11 at 60, 61, 62 s: once per node


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("strategy_name", ["auto", "dred"])
def test_flooding_and_routes_match_networkx_after_each_phase(
        name: str, strategy_name: str, tmp_path: Path) -> None:
    """After each phase: tLink at n is n's links; tLSU at n holds every link of n's
    component (links of a cut-off part expire); bestPath is networkx's shortest path."""
    links: dict[tuple, int] = {}

    def radio(n: object) -> list[object]:
        return sorted({v for e in links for u, v in (e, e[::-1]) if u == n})

    r = Reactive(plan_of(name, tmp_path), strategy_name, nodes=[1, 2, 3, 4, 5],
                 neighbours=radio)
    for p, phase in enumerate(PHASES):
        links.clear()
        links.update(phase)
        start = p * PHASE
        for k in range(int(PHASE // 5)):
            r.apply(beacons(links, start + 1 + 5 * k), start + 1 + 5 * k)
        r.advance(start + PHASE - 1)
        g = nx.Graph()
        g.add_weighted_edges_from((u, v, c) for (u, v), c in links.items())
        arcs = {(a, b, c) for (u, v), c in links.items() for a, b in ((u, v), (v, u))}
        assert {t[:3] for t in rows(r, "tLink")} == arcs, p
        want = {(n, a, b, c) for n in g for a, b, c in arcs
                if a in nx.node_connected_component(g, n)}
        assert {t[:4] for t in rows(r, "tLSU")} == want, p
        best = set()
        for s in g:
            dist, paths = nx.single_source_dijkstra(g, s)
            best |= {(s, d, dist[d], tuple(paths[d])) for d in dist if d != s}
        assert rows(r, "bestPath") == best, p
    assert (1, 3, 11, (1, 5, 4, 3)) in best and (1, 3, 11, (1, 2, 3)) not in best
