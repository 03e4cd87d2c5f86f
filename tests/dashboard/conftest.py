"""A small store written the way the pipeline writes one, for the dashboard tests.

:class:`Net` keeps the views of the path-vector program (link, reachable, path, bestCost,
bestPath) for a set of up links, computed with networkx, and writes each step as one
``BatchRecord`` with its net changes, derivations, link states and the alerts the real
:class:`AlertRules` raises, so the dashboard is tested against the same shapes it will read in
production.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import networkx as nx
import pytest

from netrules.alerts.rules import AlertConfig, AlertRules, view_has_from_store
from netrules.eventlog.schema import Event, EventKind
from netrules.facts import Fact
from netrules.store import BatchRecord, open_store

#: (u, v, cost): bidirectional links of the 6-node test network. b-d and c-d are the two ways
#: from a to d; f hangs off e only, so failing e-f loses every route to f.
LINKS = [("a", "b", 1), ("b", "d", 1), ("a", "c", 2), ("c", "d", 2), ("d", "e", 1),
         ("e", "f", 1)]
NODES = sorted({x for u, v, _ in LINKS for x in (u, v)})
T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC

Derivs = dict[Fact, list[tuple[str, list[Fact]]]]


def link(s: str, d: str, c: int) -> Fact:
    return Fact("link", (s, d, c), 0)


def views_for(up: set[tuple[str, str, int]]) -> tuple[dict[str, set[Fact]], Derivs]:
    """The program's views and one derivation per derived fact, for the given up links."""
    g = nx.DiGraph()
    g.add_nodes_from(NODES)
    for s, d, c in up:
        g.add_edge(s, d, cost=c)
    views: dict[str, set[Fact]] = {"link": {link(*x) for x in up}, "reachable": set(),
                                   "path": set(), "bestCost": set(), "bestPath": set()}
    derivs: Derivs = {}

    def path_fact(p: list[str]) -> Fact:
        cost = sum(g.edges[a, b]["cost"] for a, b in itertools.pairwise(p))
        f = Fact("path", (p[0], p[-1], tuple(p), cost), 0)
        if f not in views["path"]:
            views["path"].add(f)
            first = link(p[0], p[1], g.edges[p[0], p[1]]["cost"])
            derivs[f] = ([("p1", [first])] if len(p) == 2
                         else [("p2", [first, path_fact(p[1:])])])
        return f

    for s, d in itertools.permutations(NODES, 2):
        if not nx.has_path(g, s, d):
            continue
        views["reachable"].add(Fact("reachable", (s, d), 0))
        best = min(nx.all_shortest_paths(g, s, d, weight="cost"))
        pf = path_fact(best)
        cost = pf.args[3]
        bc = Fact("bestCost", (s, d, cost), 0)
        bp = Fact("bestPath", (s, d, tuple(best), cost), 0)
        views["bestCost"].add(bc)
        views["bestPath"].add(bp)
        derivs[bc] = [("b1", [pf])]
        derivs[bp] = [("b2", [bc, pf])]
    return views, derivs


class Net:
    """The test network and its store: :meth:`step` writes one batch like the pipeline does."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.up = {x for u, v, c in LINKS for x in ((u, v, c), (v, u, c))}
        self.views: dict[str, set[Fact]] = {}
        self.derivs: Derivs = {}
        self.batch = 0
        self.rules = AlertRules(AlertConfig(route_relations={"bestPath": (0, 1)},
                                            loop_relations=("loop",)))
        with open_store(url) as s:
            s.set_topology(NODES, [(u, v, c) for u, v, c in sorted(self.up)])
            s.set_program("path_vector", "// test fixture")

    def step(self, down: tuple[tuple[str, str], ...] = (), up: tuple[tuple[str, str], ...] = (),
             extra_add: dict[str, set[Fact]] | None = None,
             extra_del: dict[str, set[Fact]] | None = None) -> int:
        """Fail links ``down`` and restore ``up`` (both directions) and write the batch."""
        self.batch += 1
        t = T0 + 10 * self.batch
        cost = {tuple(sorted((u, v))): c for u, v, c in LINKS}
        events, states = [], []
        for pairs, op, kind in ((down, "-", EventKind.LINK_DOWN), (up, "+", EventKind.LINK_UP)):
            for u, v in pairs:
                c = cost[tuple(sorted((u, v)))]
                for s, d in ((u, v), (v, u)):
                    (self.up.discard if op == "-" else self.up.add)((s, d, c))
                    states.append((s, d, None, "down" if op == "-" else "up"))
                    events.append(Event(f"sim:{self.batch}:{s}{d}", t, "sim", kind, op,
                                        link(s, d, c)))
        views, derivs = views_for(self.up)
        for rel, facts in (extra_add or {}).items():
            views[rel] = self.views.get(rel, set()) | facts
        for rel, facts in (extra_del or {}).items():
            views[rel] = self.views.get(rel, set()) - facts
        for rel in self.views:
            views.setdefault(rel, self.views[rel])
        added = {r: sorted(views[r] - self.views.get(r, set()), key=Fact.key) for r in views}
        removed = {r: sorted(self.views.get(r, set()) - views.get(r, set()), key=Fact.key)
                   for r in self.views}
        added = {r: fs for r, fs in added.items() if fs}
        removed = {r: fs for r, fs in removed.items() if fs}
        with open_store(self.url) as s:
            raised, cleared = self.rules.evaluate(
                self.batch, t, added, removed, events,
                view_has_from_store(s, self.rules, added, removed), s.active_alert_keys())
            gone = [f for fs in removed.values() for f in fs if f in self.derivs]
            new = [(f, r, b) for f, sup in derivs.items() if self.derivs.get(f) != sup
                   for r, b in sup]
            s.write_batch(BatchRecord(
                batch_id=self.batch, time=t, events=events, added=added, removed=removed,
                derivations_added=new,
                derivations_removed=gone + [f for f, _, _ in new if f in self.derivs],
                link_states=states, alerts_raised=raised, alerts_cleared=cleared))
        self.views, self.derivs = views, derivs
        return self.batch


LOOP = Fact("loop", ("c", "d"), 0)
SUSPECT = {Fact("suspect", ("acct1", "acct2"), None), Fact("suspect", ("acct2", "acct1"), None)}


def build_history(net: Net) -> None:
    """Batch 1 all up (plus two suspect facts); batch 2 fails b-d (a-d re-routes via c) and a
    loop appears; batch 3 fails e-f (every route to f is lost) and the loop clears."""
    net.step(extra_add={"suspect": SUSPECT})
    net.step(down=(("b", "d"),), extra_add={"loop": {LOOP}})
    net.step(down=(("e", "f"),), extra_del={"loop": {LOOP}})


@pytest.fixture(scope="session")
def store_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store holding the three-batch history (read-only for the tests that use it)."""
    path = Path(tmp_path_factory.mktemp("dash")) / "netrules.db"
    build_history(Net(str(path)))
    return str(path)
