"""The dashboard's pure parts: which view Reachability asks, why trees, the graph at 1,000
nodes, the launcher command, and the rule that the dashboard never imports Spark or the engine."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
from click.testing import CliRunner

from dashboard import commands, graph
from dashboard.sections import reachability, routes
from netrules.facts import Fact
from netrules.store import TopoLink, TopoNode, open_store

ROOT = Path(__file__).resolve().parents[2]


# -- the reachability page's choice of view ------------------------------------------------
def test_reachability_asks_a_view_the_program_has() -> None:
    assert reachability.pair_relation({"reachable": 3, "bestPath": 2}, set()) == "reachable"
    # a path_vector store: no reachable view, so the page opens on the route view
    assert reachability.pair_relation({"bestPath": 2, "link": 4}, {"path"}) == "bestPath"
    assert reachability.pair_relation({}, {"bestCost"}) == "bestCost"
    assert reachability.pair_relation({"link": 4}, {"link"}) is None


# -- why trees -------------------------------------------------------------------------------
def test_why_lines_shares_subtrees_marks_cycles_and_lists_alternatives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    r = Fact("reachable", ("a", "c"))
    r2 = Fact("reachable", ("b", "c"))
    la, lb = Fact("link", ("a", "b", 1)), Fact("link", ("b", "c", 1))
    derivs = {r: [("r1", [la, r2]), ("r2", [r, la])], r2: [("r1", [lb])]}
    monkeypatch.setattr(routes.data, "derivations", lambda url, f: derivs.get(f, []))
    lines = routes.why_lines("u", r)
    assert lines == [
        "reachable(@a,c)   (2 derivations)",
        "├── ⟸ rule r1",
        "│   ├── link(@a,b,1)   (base fact)",
        "│   └── reachable(@b,c)   ⟸ rule r1",
        "│       └── link(@b,c,1)   (base fact)",
        "└── ⟸ rule r2",
        "    ├── reachable(@a,c)   (cycle)",
        "    └── link(@a,b,1)   (base fact)",
    ]
    assert routes.why_lines("u", r, max_lines=2)[-1] == "… cut at 2 lines"


# -- graph -------------------------------------------------------------------------------------
def test_merge_links_folds_directions_and_keeps_state() -> None:
    links = [TopoLink("a", "b", 1, "up", {}), TopoLink("b", "a", 1, "down", {}),
             TopoLink("b", "c", 2, "up", {})]
    edges = graph.merge_links(links)
    assert [(e.u, e.v, e.state) for e in edges] == [("a", "b", "down"), ("b", "c", "up")]
    assert "b→a: down, cost 1" in edges[0].detail


def test_layout_uses_stored_coordinates_when_every_node_has_them() -> None:
    nodes = [TopoNode("a", {"lon": 1.0, "lat": 2.0}), TopoNode("b", {"lon": 3.0, "lat": 4.0})]
    sig = graph.signature(nodes, [TopoLink("a", "b", 1, "up", {})])
    assert graph.compute_layout(sig) == {"a": (1.0, 2.0), "b": (3.0, 4.0)}


def _drawn(markup: str) -> dict[str, object]:
    """What an SVG map draws, read back with the standard library's XML parser: segments per
    trace, node names, node labels, hover titles and legend entries."""
    import xml.etree.ElementTree as ET

    legend, _, map_svg = markup.partition("</div>")
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.fromstring(map_svg)
    traces = {g.get("data-name"): g for g in root.iter(f"{ns}g") if g.get("class") == "trace"}
    nodes = [g for g in root.iter(f"{ns}g") if g.get("class") == "node"]
    return {
        "segments": {n: len(g.findall(f"{ns}line")) for n, g in traces.items()},
        "traces": traces,
        "nodes": [g.get("data-node") for g in nodes],
        "labels": [t.text for g in nodes for t in g.findall(f"{ns}text")],
        "link_titles": sum(len(g.findall(f"{ns}line/{ns}title")) for g in traces.values()),
        "legend": ET.fromstring(legend + "</div>").itertext(),
        "height": float(root.get("viewBox").split()[3]),
    }


def test_thousand_nodes_layout_once_then_cheap_neighbourhood_maps() -> None:
    g = nx.random_regular_graph(3, 1000, seed=1)
    nodes = [TopoNode(f"n{i}", {}) for i in g]
    links = [TopoLink(f"n{u}", f"n{v}", 1, "down" if i == 0 else "up", {})
             for i, (u, v) in enumerate(g.edges())]
    sig = graph.signature(nodes, links)
    pos = graph.compute_layout(sig)
    assert len(pos) == 1000
    edges = graph.merge_links(links)
    full = _drawn(graph.svg(sig[0], edges, pos))
    near = graph.neighbourhood(edges, ["n0"], 2)
    part = _drawn(graph.svg(sig[0], edges, pos, visible=near, focus=["n0"]))
    # the work a map does, counted instead of timed (timings belong in bench/): all 1,499 up
    # links drawn, one hover title (the down link, not 1,500), 1,000 nodes without labels
    assert full["segments"] == {"link up (1499)": 1499, "link down (1)": 1}
    assert full["link_titles"] == 1
    assert len(full["nodes"]) == 1000 and full["labels"] == []
    assert set(part["nodes"]) == near and 4 <= len(near) <= 10
    assert sorted(part["labels"]) == sorted(near)  # few nodes: names are drawn


def test_map_colours_down_links_red_and_draws_the_route() -> None:
    edges = [graph.Edge("a", "b", "up", "a→b: up"), graph.Edge("b", "c", "down", "b→c: down")]
    pos = {"a": (0.0, 0.0), "b": (1.0, 0.0), "c": (2.0, 0.0)}
    drawn = _drawn(graph.svg(["a", "b", "c"], edges, pos, route=["a", "b"],
                             broken=[["a", "b", "c"]], status={"c": "isolated"}))
    traces = drawn["traces"]
    assert traces["link down (1)"].get("stroke") == graph.DOWN
    assert traces["link up (1)"].get("stroke") == graph.UP
    assert traces["best path"].get("stroke") == graph.ROUTE
    assert traces["route lost (1)"].get("stroke-dasharray")  # dashed
    assert drawn["segments"]["route lost (1)"] == 2
    assert drawn["link_titles"] == 2  # hovering a link names it and both directions' states
    assert "".join(drawn["legend"]).split() == [
        "link", "up", "(1)", "route", "lost", "(1)", "link", "down", "(1)", "best", "path"]
    assert drawn["height"] < 620  # a flat map gets no blank band above and below


def test_map_escapes_names() -> None:
    markup = graph.svg(["a<b", "c&d"], [graph.Edge("a<b", "c&d", "up", "")],
                       {"a<b": (0.0, 0.0), "c&d": (1.0, 1.0)})
    assert set(_drawn(markup)["nodes"]) == {"a<b", "c&d"}


# -- the launcher --------------------------------------------------------------------------------
def test_dashboard_command_binds_loopback_and_passes_the_store(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = []
    monkeypatch.setattr(commands, "serve", lambda cmd, env: calls.append((cmd, env)) or 0)
    store = str(tmp_path / "s.db")
    open_store(store).close()
    result = CliRunner().invoke(commands.dashboard, ["--store", store, "--port", "8600"])
    assert result.exit_code == 0, result.output
    cmd, env = calls[0]
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--server.port") + 1] == "8600"
    assert cmd[cmd.index("--server.headless") + 1] == "true"
    assert cmd[cmd.index("--browser.gatherUsageStats") + 1] == "false"
    assert cmd[cmd.index("--client.toolbarMode") + 1] == "minimal"
    assert cmd[1:3] == [str(commands.SERVE), str(commands.APP)]
    assert env["NETRULES_STORE"] == store
    result = CliRunner().invoke(commands.dashboard, ["--store", store, "--host", "0.0.0.0"])
    assert "no authentication" in result.output


@pytest.mark.skipif(sys.platform == "win32", reason="the launcher execs the server on POSIX")
def test_a_terminated_dashboard_leaves_no_server_behind(tmp_path: Path) -> None:
    """SIGTERM to the pid ``netrules dashboard`` started stops the server and frees its port
    (the server ran as a child that outlived it, still serving, before)."""
    import os
    import signal
    import socket
    import time
    import urllib.request

    store = str(tmp_path / "s.db")
    open_store(store).close()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    log = (tmp_path / "dashboard.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "netrules.cli", "dashboard", "--store", store,
                             "--port", str(port)], cwd=tmp_path, env=env, stdout=log,
                            stderr=subprocess.STDOUT)

    def serving() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                        timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        t0 = time.monotonic()
        while not serving():
            assert proc.poll() is None, (tmp_path / "dashboard.log").read_text()
            assert time.monotonic() - t0 < 60, "the dashboard did not start"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        t0 = time.monotonic()
        while serving() and time.monotonic() - t0 < 10:
            time.sleep(0.1)
        assert not serving(), "a server still answers on the port after SIGTERM"
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


def test_one_dashboard_command_with_the_settings_default(tmp_path: Path) -> None:
    from netrules import settings
    from netrules.cli import main

    assert main.commands["dashboard"] is commands.dashboard
    store_opt = next(p for p in commands.dashboard.params if p.name == "store")
    assert store_opt.default == settings.get("store").default
    assert store_opt.envvar == "NETRULES_STORE"
    result = CliRunner().invoke(main, ["dashboard", "--store", str(tmp_path / "none.db")])
    assert result.exit_code == 1 and "Hint:" in result.output


# -- the dashboard reads the store only -----------------------------------------------------------
def test_dashboard_never_imports_spark_or_the_engine() -> None:
    banned = ("pyspark", "netrules.engine")
    for path in sorted((ROOT / "dashboard").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(banned), f"{path}: imports {name}"
    code = ("import sys, dashboard.data, dashboard.graph, dashboard.commands, "
            "dashboard.sections.topology, dashboard.sections.alerts, "
            "dashboard.sections.reachability, dashboard.sections.routes, "
            "dashboard.sections.patterns, dashboard.sections.timeline\n"
            "bad = [m for m in sys.modules if m.startswith(('pyspark', 'netrules.engine'))]\n"
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)


def test_the_served_process_warms_up_without_spark_or_the_engine() -> None:
    """serve.warm() runs what the first visit would (imports, figures, the parser) and so
    must keep working as the app changes, still without Spark or the engine."""
    code = ("import sys\nfrom dashboard import serve\nserve.warm()\n"
            "assert 'dashboard.sections.timeline' in sys.modules\n"
            "bad = [m for m in sys.modules if m.startswith(('pyspark', 'netrules.engine'))]\n"
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "No runtime found" not in proc.stderr  # the warm-up's own imports stay quiet
