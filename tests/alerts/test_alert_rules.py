"""Alert rules: raise on loss/appearance, clear on recovery, dedup, and the store round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from netrules.alerts import Alert, AlertConfig, AlertRules, view_has_from_store
from netrules.eventlog.schema import Event, EventKind
from netrules.facts import Fact
from netrules.store import BatchRecord, open_store


def bp(s: str, d: str, p: tuple[str, ...], c: int = 1) -> Fact:
    return Fact("bestPath", (s, d, p, c))


def ev(i: int, op: str, a: str, b: str) -> Event:
    kind = EventKind.LINK_UP if op == "+" else EventKind.LINK_DOWN
    return Event(f"sim:{i}", float(i), "sim", kind, op, Fact("link", (a, b, 1)))


CONFIG = AlertConfig(
    route_relations={"bestPath": (0, 1)},
    reach_relation="reachable",
    monitored_pairs=frozenset({("a", "c")}),
    loop_relations=("loop",),
    pattern_relations=("scan",),
)


class FakeView:
    """A post-batch view: the keys that still have a fact."""

    def __init__(self, *keys: tuple[str, tuple]) -> None:
        self.keys = set(keys)

    def __call__(self, relation: str, key: tuple) -> bool:
        return (relation, tuple(key)) in self.keys


def test_route_lost_raised_with_trigger_and_cleared_on_recovery() -> None:
    rules = AlertRules(CONFIG)
    down, up = ev(1, "-", "b", "c"), ev(2, "+", "x", "y")
    raised, cleared = rules.evaluate(
        5, 50.0, added={}, removed={"bestPath": [bp("a", "c", ("a", "b", "c"))]},
        trigger_events=[down, up], view_has=FakeView())
    assert cleared == []
    (alert,) = raised
    assert alert.kind == "route_lost" and alert.severity == "major"
    assert alert.dedup_key == "route_lost:bestPath:a:c"
    assert alert.trigger_events == (down,)  # the batch's '-' events
    assert "a" in alert.message and "c" in alert.message and "link(@b,c,1)" in alert.message
    assert alert.subject == {"src": "a", "dst": "c", "relation": "bestPath", "trigger_count": 1}
    assert (alert.raised_batch, alert.raised_time, alert.state) == (5, 50.0, "active")

    # recovery: a route a->c reappears
    raised, cleared = rules.evaluate(
        6, 60.0, added={"bestPath": [bp("a", "c", ("a", "d", "c"), 2)]}, removed={},
        trigger_events=[ev(3, "+", "d", "c")], view_has=FakeView(("bestPath", ("a", "c"))),
        active_keys={"route_lost:bestPath:a:c"})
    assert raised == [] and cleared == ["route_lost:bestPath:a:c"]


def test_route_not_lost_when_replaced_or_still_present() -> None:
    rules = AlertRules(CONFIG)
    removed = {"bestPath": [bp("a", "c", ("a", "b", "c"))]}
    # replaced in the same batch
    raised, _ = rules.evaluate(1, 1.0, {"bestPath": [bp("a", "c", ("a", "d", "c"), 3)]},
                               removed, [ev(1, "-", "b", "c")], FakeView())
    assert raised == []
    # another fact for (a, c) remains in the view
    raised, _ = rules.evaluate(1, 1.0, {}, removed, [ev(1, "-", "b", "c")],
                               FakeView(("bestPath", ("a", "c"))))
    assert raised == []
    # a recovery for a key that is not active reports nothing to clear
    _, cleared = rules.evaluate(1, 1.0, {"bestPath": [bp("a", "c", ("a", "c"))]}, {}, [],
                                FakeView())
    assert cleared == []


def test_dedup_against_active_alerts() -> None:
    rules = AlertRules(CONFIG)
    removed = {"bestPath": [bp("a", "c", ("a", "b", "c")), bp("a", "c", ("a", "e", "c")),
                            bp("b", "c", ("b", "c"))]}
    raised, _ = rules.evaluate(2, 2.0, {}, removed, [ev(1, "-", "b", "c")], FakeView(),
                               active_keys={"route_lost:bestPath:a:c"})
    assert [a.dedup_key for a in raised] == ["route_lost:bestPath:b:c"]  # one per key, once


def test_trigger_fallback_and_cap() -> None:
    rules = AlertRules(AlertConfig(route_relations={"bestPath": (0, 1)}, max_trigger_events=3))
    ups = [ev(i, "+", "p", f"q{i}") for i in range(5)]
    (alert,) = rules.evaluate(1, 1.0, {}, {"bestPath": [bp("a", "c", ("a", "c"))]}, ups,
                              FakeView())[0]
    # no '-' event in the batch: every event is a candidate cause, capped at 3
    assert alert.trigger_events == tuple(ups[:3]) and alert.subject["trigger_count"] == 5


def test_monitored_pair_reachability() -> None:
    rules = AlertRules(CONFIG)
    removed = {"reachable": [Fact("reachable", ("a", "c")), Fact("reachable", ("a", "b"))]}
    raised, _ = rules.evaluate(3, 3.0, {}, removed, [ev(1, "-", "b", "c")], FakeView())
    assert [(a.kind, a.dedup_key, a.severity) for a in raised] == [
        ("reachability_lost", "reachability_lost:reachable:a:c", "critical")]  # a-b unmonitored
    raised, cleared = rules.evaluate(
        4, 4.0, {"reachable": [Fact("reachable", ("a", "c"))]}, {}, [ev(2, "+", "b", "c")],
        FakeView(("reachable", ("a", "c"))), active_keys={"reachability_lost:reachable:a:c"})
    assert raised == [] and cleared == ["reachability_lost:reachable:a:c"]
    every = AlertRules(AlertConfig(reach_relation="reachable", monitored_pairs=None))
    raised, _ = every.evaluate(3, 3.0, {}, removed, [], FakeView())
    assert len(raised) == 2


def test_loop_and_pattern_raise_and_clear() -> None:
    rules = AlertRules(CONFIG)
    loop = Fact("loop", ("a", "c", ("a", "b", "a")))
    scan = Fact("scan", ("10.0.0.9", 443))
    raised, _ = rules.evaluate(7, 7.0, {"loop": [loop], "scan": [scan]}, {},
                               [ev(1, "+", "b", "a"), ev(2, "-", "x", "y")], FakeView())
    by_kind = {a.kind: a for a in raised}
    assert by_kind["routing_loop"].severity == "critical"
    assert by_kind["routing_loop"].dedup_key == "routing_loop:loop:a:c:[a,b,a]"
    assert by_kind["routing_loop"].trigger_events == (ev(1, "+", "b", "a"),)
    assert by_kind["routing_loop"].subject["fact"] == loop.to_json()
    assert by_kind["pattern_matched"].severity == "minor"
    assert by_kind["pattern_matched"].dedup_key == 'pattern_matched:scan:"10.0.0.9":443'
    active = {a.dedup_key for a in raised}
    raised, cleared = rules.evaluate(8, 8.0, {}, {"loop": [loop], "scan": [scan]}, [],
                                     FakeView(), active_keys=active)
    assert raised == [] and cleared == sorted(active)


def test_config_from_dict_and_severity_override() -> None:
    cfg = AlertConfig.from_dict({
        "route_relations": {"bestPath": [0, 1]},
        "reach_relation": "reachable",
        "monitored_pairs": [["a", "c"]],
        "pattern_relations": ["scan"],
        "severity": {"scan": "info", "route_lost": "critical"},
    })
    assert cfg.monitored_pairs == frozenset({("a", "c")})
    rules = AlertRules(cfg)
    raised, _ = rules.evaluate(1, 1.0, {"scan": [Fact("scan", ("h",))]},
                               {"bestPath": [bp("a", "c", ("a", "c"))]}, [], FakeView())
    assert {a.kind: a.severity for a in raised} == {"route_lost": "critical",
                                                   "pattern_matched": "info"}
    with pytest.raises(ValueError):
        AlertConfig(severity={"scan": "apocalyptic"})
    assert rules.relations() == {"bestPath", "reachable", "scan"}


def test_alert_json_round_trip() -> None:
    (alert,) = AlertRules(CONFIG).evaluate(
        1, 1.0, {}, {"bestPath": [bp("a", "c", ("a", "c"))]}, [ev(1, "-", "a", "c")],
        FakeView())[0]
    assert Alert.from_json(alert.to_json()) == alert


def test_engine_flow_with_store(tmp_path: Path) -> None:
    """The loop the engine runs: evaluate against the store + pending batch, write both."""
    rules = AlertRules(CONFIG)
    with open_store(str(tmp_path / "s.db")) as store:
        p1, p2 = bp("a", "c", ("a", "b", "c"), 2), bp("a", "c", ("a", "d", "c"), 3)
        store.write_batch(BatchRecord(0, 0.0, added={"bestPath": [p1, p2]}))

        def step(bid: int, events: list[Event], added: dict, removed: dict) -> list[Alert]:
            has = view_has_from_store(store, rules, added, removed)
            raised, cleared = rules.evaluate(bid, float(bid), added, removed, events, has,
                                             store.active_alert_keys())
            assert store.write_batch(BatchRecord(bid, float(bid), events, added, removed,
                                                 alerts_raised=raised, alerts_cleared=cleared))
            return raised

        # one of two routes goes: the other remains in the store, no alert
        assert step(1, [ev(1, "-", "b", "c")], {}, {"bestPath": [p1]}) == []
        # the last one goes: route lost
        (lost,) = step(2, [ev(2, "-", "d", "c")], {}, {"bestPath": [p2]})
        assert store.active_alert_keys() == {"route_lost:bestPath:a:c"}
        assert store.alerts()[0].trigger_events == (ev(2, "-", "d", "c"),)
        # recovery clears it
        step(3, [ev(3, "+", "b", "c")], {"bestPath": [p1]}, {})
        assert store.active_alert_keys() == set()
        (stored,) = store.alerts()
        assert (stored.state, stored.cleared_batch, stored.dedup_key) == (
            "cleared", 3, lost.dedup_key)


def test_dedup_keys_of_non_ascii_names_are_what_stores_hold() -> None:
    """Facts print names as written, but an alert's dedup key is stored with it and found
    again to clear it: it keeps the escaped form stores written before hold, or an alert
    raised before an upgrade would never clear after it."""
    from netrules.alerts.rules import _key_text

    assert _key_text(("Pátra", "Arkhangel’sk")) == '"P\\u00e1tra":"Arkhangel\\u2019sk"'
    assert _key_text(("a", ("Pátra", "b"))) == 'a:["P\\u00e1tra",b]'
