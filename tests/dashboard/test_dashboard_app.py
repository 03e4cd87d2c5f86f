"""Each dashboard section rendered by Streamlit's AppTest against the three-batch store."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

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
    assert metrics["Active alerts"] == "10"
    assert "route lost: f has no bestPath to e" in texts(app.error)  # newest first
    assert "+6 more active alerts" in texts(app.caption)


def test_topology_lists_failed_links_and_the_routes_they_broke(app: AppTest) -> None:
    assert app.sidebar.radio(key="section").value == "Topology"
    md = texts(app.markdown)
    assert "**e → f** down" in md and "**b → d** down" in md
    broken = app.table[0].value
    rows = {r["route"]: r for r in broken.to_dict("records")}
    assert rows["a → f"]["now"] == "lost" and rows["a → f"]["over"] == "e→f"
    assert rows["a → d"]["now"] == "rerouted" and rows["a → d"]["was"] == "a → b → d"


def test_topology_neighbourhood_search_keeps_selection_across_reruns(app: AppTest) -> None:
    app.selectbox(key="topo_focus").set_value("f").run()
    app.slider(key="topo_hops").set_value(1).run()
    assert "Showing 2 of 6 nodes." in texts(app.caption)
    app.run()  # a live refresh reruns the script: the choice must survive it
    assert app.selectbox(key="topo_focus").value == "f"
    assert "Showing 2 of 6 nodes." in texts(app.caption)


def test_alerts_feed_newest_first_with_severity_trigger_and_cleared(app: AppTest) -> None:
    section(app, "Alerts")
    rows = app.table[0].value.to_dict("records")
    assert len(rows) == 11
    assert rows[0]["severity"] == "major" and rows[0]["state"] == "active"
    assert rows[0]["message"].startswith("route lost: f has no bestPath to e")
    assert "-link(@e,f,1)" in rows[0]["triggered by"]
    assert "UTC (batch 3)" in rows[0]["raised"]
    loop = rows[-1]
    assert loop["kind"] == "routing_loop" and loop["state"] == "cleared"
    assert loop["cleared"] == "2026-01-01 00:00:30 UTC (batch 3)"
    app.toggle(key="alerts_active_only").set_value(True).run()
    assert len(app.table[0].value) == 10


def test_reachability_query_pair_and_matrix(app: AppTest) -> None:
    section(app, "Reachability")
    assert app.text_input(key="reach_query").value == "reachable(@a,X)"
    assert list(app.dataframe[0].value["X"]) == ["b", "c", "d", "e"]
    assert "a cannot reach f." in texts(app.error)
    assert "20 of 30 ordered pairs reachable" in texts(app.caption)
    app.selectbox(key="reach_dst").set_value("e").run()
    assert "a can reach e." in texts(app.success)
    app.text_input(key="reach_query").set_value('bestPath(@a,d,P,C)').run()
    df = app.dataframe[0].value
    assert df.to_dict("records") == [{"P": "[a,c,d]", "C": "4"}]
    app.text_input(key="reach_query").set_value("reachable(@f,e)").run()
    assert "**no**" in texts(app.markdown)


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
    assert "No view named 'nosuch'" in texts(app.error)
    app.text_input(key="reach_query").set_value("link(@a,X,1+1)").run()
    assert "must be a constant or a variable" in texts(app.error)


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


def test_route_explorer_lost_route_shows_alert(app: AppTest) -> None:
    section(app, "Routes")
    assert app.selectbox(key="route_dst").value == "f"
    assert "No route from a to f" in texts(app.warning)
    assert "route lost: a has no bestPath to f" in texts(app.error)


def test_patterns_show_current_matches(app: AppTest) -> None:
    section(app, "Patterns")
    rows = app.table[0].value.to_dict("records")
    assert rows == [{"X": "acct1", "Y": "acct2"}, {"X": "acct2", "Y": "acct1"}]
    assert "loop (0)" in texts(app.caption)  # the loop cleared in batch 3


def test_timeline_counts_and_batch_changes(app: AppTest) -> None:
    section(app, "Timeline")
    assert "3 batches, 171 facts added, 81 removed." in texts(app.caption)
    assert app.selectbox(key="timeline_batch").value == 3
    changes = app.dataframe[0].value
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
