"""Each dashboard section rendered by Streamlit's AppTest against the three-batch store."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboard.conftest import T0

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "app.py")


@pytest.fixture
def app(store_url: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("NETRULES_STORE", store_url)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def section(at: AppTest, name: str) -> AppTest:
    at.sidebar.radio(key="section").set_value(name).run()
    assert not at.exception, at.exception
    return at


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def test_header_and_banner_show_the_active_route_lost_alert(app: AppTest) -> None:
    metrics = {m.label: m.value for m in app.metric}
    assert "Program **path_vector**" in texts(app.caption)
    assert metrics["Last batch"] == "3"
    assert metrics["Links down"] == "4"
    assert metrics["Active incidents"] == "1"
    assert metrics["Nodes up"] == "2"  # a and c
    assert metrics["Degraded · isolated"] == "3 · 1"  # b, d, e degraded; f cut off
    banners = [e.value for e in app.error]
    assert banners == ["**Incident** · major: e–f down: 10 routes lost (since batch 3; active)"]


def test_topology_lists_failed_links_and_the_routes_they_broke(app: AppTest) -> None:
    assert app.sidebar.radio(key="section").value == "Topology"
    md = texts(app.markdown)
    assert "**e → f** down" in md and "**b → d** down" in md
    broken = app.table[0].value
    rows = {r["route"]: r for r in broken.to_dict("records")}
    assert rows["a → f"]["now"] == "lost" and rows["a → f"]["over"] == "e→f"
    assert rows["a → d"]["now"] == "rerouted" and rows["a → d"]["was"] == "a → b → d"
    # both directions of the cut: 5 routes to f and 5 from it, matched against one link row
    assert rows["f → a"]["now"] == "lost" and rows["f → a"]["over"] == "e→f"
    assert any(c.startswith("10 lost, ") for c in texts(app.caption).splitlines())
    assert ":red[**f** isolated]" in md and ":orange[**e** degraded]" in md


def test_topology_neighbourhood_search_keeps_selection_across_reruns(app: AppTest) -> None:
    app.selectbox(key="topo_focus").set_value("f").run()
    app.slider(key="topo_hops").set_value(1).run()
    assert "Showing 2 of 6 nodes." in texts(app.caption)
    app.run()  # a live refresh reruns the script: the choice must survive it
    assert app.selectbox(key="topo_focus").value == "f"
    assert "Showing 2 of 6 nodes." in texts(app.caption)


def test_alerts_shows_incidents_first_then_a_sortable_feed(app: AppTest) -> None:
    section(app, "Alerts")
    incidents = app.dataframe[0].value.to_dict("records")
    assert [(i["cause"], i["state"], i["affected"]) for i in incidents] == [
        ("e–f", "active", 10), ("b–d", "ended", 1)]
    assert "major: e–f down: 10 routes lost" in app.expander[0].label
    rows = app.dataframe[-1].value.to_dict("records")  # a data grid: sortable
    assert len(rows) == 11
    assert rows[0]["severity"] == "major" and rows[0]["state"] == "active"
    assert rows[0]["message"].startswith("route lost: f has no bestPath to e")
    assert "-link(@e,f,1)" in rows[0]["triggered by"]
    assert "UTC (batch 3)" in rows[0]["raised"]
    loop = rows[-1]
    assert loop["kind"] == "routing_loop" and loop["state"] == "cleared"
    assert loop["cleared"] == "2026-01-01 00:00:30 UTC (batch 3)"
    app.toggle(key="alerts_active_only").set_value(True).run()
    assert len(app.dataframe[-1].value) == 10
    assert len(app.dataframe[0].value) == 1


def test_reachability_query_pair_and_matrix(app: AppTest) -> None:
    section(app, "Reachability")
    assert app.text_input(key="reach_query").value == "reachable(@a,X)"
    assert list(app.dataframe[0].value["X"]) == ["b", "c", "d", "e"]
    assert "Outage: a cannot reach f: major: e–f down" in texts(app.error)
    assert "f is cut off: every link of it is down: e–f (down since batch 3)" in app.code[0].value
    assert "20 of 30 ordered pairs reachable" in texts(app.caption)
    app.selectbox(key="reach_dst").set_value("e").run()
    assert "a can reach e (reachable)." in texts(app.success)
    app.text_input(key="reach_query").set_value('bestPath(@a,d,P,C)').run()
    df = app.dataframe[0].value
    assert df.to_dict("records") == [{"P": "[a,c,d]", "C": "4"}]
    app.text_input(key="reach_query").set_value("reachable(@f,e)").run()
    assert "**no**" in texts(app.markdown)
    assert ("Outage: the answer is empty while this incident is active: major: e–f down"
            in texts(app.error))


def test_reachability_large_network_shows_counts_over_time(
        app: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard.sections import reachability

    monkeypatch.setattr(reachability, "MATRIX_LIMIT", 5)  # pretend 6 nodes is large
    section(app, "Reachability")
    assert "Reachable pairs over time" in texts(app.subheader)
    assert "20 reachable pairs now; after each of the last 3 batches:" in texts(app.caption)
    df = reachability.counts_over_time(app.text_input(key="store_url").value, 20)
    assert list(df["reachable pairs"]) == [30, 30, 20]


def test_reachability_bad_query_shows_caret(app: AppTest) -> None:
    section(app, "Reachability")
    app.text_input(key="reach_query").set_value("reachable(@a,,X)").run()
    assert not app.exception
    assert "not an NDlog atom" in texts(app.error)
    code = app.code[0].value
    assert "error[SYNTAX]" in code and "^" in code
    app.text_input(key="reach_query").set_value("nosuch(@a,X)").run()
    assert "unknown relation 'nosuch'" in texts(app.error)
    app.text_input(key="reach_query").set_value("link(@a,X,f_concat(X,b))").run()
    assert "mixes variables into a value" in texts(app.error)


def test_route_explorer_cost_path_and_why_tree(app: AppTest) -> None:
    section(app, "Routes")
    app.selectbox(key="route_dst").set_value("d").run()
    assert {m.label: m.value for m in app.metric}["Cost"] == "4"
    assert "a → c → d" in texts(app.markdown)
    why = app.code[0].value.splitlines()
    assert why[0] == "bestPath(@a,d,[a,c,d],4)   ⟸ rule b2"
    assert any("link(@a,c,2)   (base fact)" in line for line in why)
    assert any("link(@c,d,2)   (base fact)" in line for line in why)
    assert any("path(@a,d,[a,c,d],4)   (see above)" in line for line in why)


def test_route_explorer_lost_route_shows_why_not(app: AppTest) -> None:
    section(app, "Routes")
    assert app.selectbox(key="route_dst").value == "f"
    assert "No route from a to f" in texts(app.warning)
    assert "Outage: major: e–f down: 10 routes lost" in texts(app.error)
    why_not = app.code[0].value
    assert "Last held: bestPath(@a,f,[a,c,d,e,f],6)" in why_not
    assert "removed by batch 3 (2026-01-01 00:00:30 UTC)" in why_not
    assert "removed by batch 3" in why_not and "-link(@e,f,1)" in why_not
    assert "b: b has no bestPath to f either (lost in batch 3)" in why_not


def test_patterns_show_current_matches(app: AppTest) -> None:
    section(app, "Patterns")
    rows = app.table[0].value.to_dict("records")
    assert rows == [{"X": "acct1", "Y": "acct2"}, {"X": "acct2", "Y": "acct1"}]
    assert "loop (0)" in texts(app.caption)  # the loop cleared in batch 3


def test_timeline_counts_and_batch_changes(app: AppTest) -> None:
    section(app, "Timeline")
    assert ("3 batches; links down after the last 2, at most 2; 252 facts changed."
            in texts(app.caption))
    series = app.dataframe[0].value
    assert list(series["links down"]) == [0, 1, 2]
    assert list(series["active incidents"]) == [0, 1, 1]
    app.slider(key="timeline_range").set_range(T0 + 20, T0 + 30).run()
    assert list(app.dataframe[0].value["batch"]) == [2, 3]
    assert app.selectbox(key="timeline_link").value == ("b", "d")  # down links first
    app.selectbox(key="timeline_link").set_value(("e", "f")).run()
    assert "e – f: went down 1 time." in texts(app.caption)
    history = app.dataframe[1].value.to_dict("records")
    assert [(r["batch"], r["change"]) for r in history] == [(3, "down"), (3, "down"),
                                                          (1, "up"), (1, "up")]
    assert app.selectbox(key="timeline_batch").value == 3
    changes = app.dataframe[2].value
    assert {"op": "-", "fact": "link(@e,f,1)"} in changes.to_dict("records")


def test_missing_store_is_reported_not_raised(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETRULES_STORE", str(tmp_path / "absent.db"))
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    assert not at.exception
    assert "Cannot open the store yet" in texts(at.warning)


def test_topology_only_failed_links_shows_their_neighbourhood(app: AppTest) -> None:
    app.checkbox(key="topo_only_down").check().run()
    # b-d and e-f are down: their endpoints b, d, e, f plus neighbours a and c = all 6 ...
    assert "Showing 6 of 6 nodes." in texts(app.caption)
    app.text_input(key="topo_filter").set_value("F").run()  # ... narrowed by name
    assert "Showing 1 of 6 nodes." in texts(app.caption)
