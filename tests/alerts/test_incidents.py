"""Incidents: alerts grouped by root cause, flaps folded in, and the webhook's grouping."""

from __future__ import annotations

from netrules.alerts.webhook import payload
from netrules.eventlog.schema import Event, EventKind
from netrules.facts import Fact
from netrules.store.incidents import cause_of, group_incidents
from netrules.store.records import Alert


def down(a: str, b: str, t: float) -> tuple[Event, ...]:
    return tuple(Event(f"e:{t}:{s}{d}", t, "sim", EventKind.LINK_DOWN, "-",
                       Fact("link", (s, d, 1), 0)) for s, d in ((a, b), (b, a)))


def lost(src: str, dst: str, batch: int, events: tuple[Event, ...], *,
         cleared: int | None = None, severity: str = "major") -> Alert:
    return Alert(kind="route_lost", severity=severity, message=f"route lost: {src} -> {dst}",
                 dedup_key=f"route_lost:bestPath:{src}:{dst}",
                 subject={"src": src, "dst": dst, "relation": "bestPath"},
                 raised_batch=batch, raised_time=10.0 * batch, trigger_events=events,
                 state="active" if cleared is None else "cleared", cleared_batch=cleared,
                 cleared_time=None if cleared is None else 10.0 * cleared)


def test_one_cut_is_one_incident_with_every_pair() -> None:
    ev = down("Seattle", "Sunnyvale", 20.0)
    alerts = [lost(n, "Seattle", 2, ev) for n in ("Atlanta", "Chicago")] + \
             [lost("Seattle", n, 2, ev, severity="critical") for n in ("Atlanta", "Chicago")]
    (inc,) = group_incidents(alerts)
    assert cause_of(alerts[0]) == ("-Seattle–Sunnyvale",)
    assert inc.links == ["Seattle–Sunnyvale"] and inc.severity == "critical"
    assert inc.affected == ["Atlanta → Seattle", "Chicago → Seattle", "Seattle → Atlanta",
                            "Seattle → Chicago"]
    assert inc.active and (inc.start_batch, inc.start_time) == (2, 20.0)
    assert inc.title().startswith("critical: Seattle–Sunnyvale down: 4 routes lost")


def test_an_incident_ends_when_its_last_alert_clears() -> None:
    ev = down("a", "b", 10.0)
    (inc,) = group_incidents([lost("a", "b", 1, ev, cleared=2), lost("b", "a", 1, ev, cleared=3)])
    assert not inc.active and (inc.end_batch, inc.end_time) == (3, 30.0)
    (open_,) = group_incidents([lost("a", "b", 1, ev, cleared=2), lost("b", "a", 1, ev)])
    assert open_.active and open_.end_batch is None


def test_different_causes_are_different_incidents() -> None:
    one = lost("a", "c", 1, down("a", "b", 10.0))
    two = lost("d", "c", 1, down("d", "e", 10.0))
    assert len(group_incidents([one, two])) == 2


def test_a_flapping_link_is_one_incident_with_a_flap_count() -> None:
    alerts = [lost("a", "c", b, down("a", "b", 10.0 * b), cleared=b + 1) for b in (1, 3, 5)]
    (inc,) = group_incidents(alerts)
    assert inc.flaps == 3 and inc.start_batch == 1 and inc.end_batch == 6
    assert inc.affected == ["a → c"] and len(inc.alerts) == 3
    assert "flapped 3×" in inc.title()
    # the same cut long after the last one ended is a new incident
    assert len(group_incidents(alerts, flap_window=5.0)) == 3


def test_webhook_payload_puts_incidents_first() -> None:
    ev = down("Seattle", "Sunnyvale", 20.0)
    raised = [lost(n, "Seattle", 2, ev) for n in ("Atlanta", "Chicago", "Denver")]
    body = payload(raised, ["route_lost:bestPath:x:y"], batch_id=2)
    assert list(body) == ["batch_id", "incidents", "raised", "cleared"]
    (inc,) = body["incidents"]
    assert inc["links"] == ["Seattle–Sunnyvale"] and inc["state"] == "active"
    assert inc["alerts"] == [a.dedup_key for a in raised]
    assert len(body["raised"]) == 3 and body["cleared"] == ["route_lost:bestPath:x:y"]
