"""Incidents: alerts that share a root cause, grouped on the read side.

Cutting one node off raises one alert per lost route (20 for Seattle in the demo); an operator
needs one line saying "Seattle–Sunnyvale went down, 20 routes lost", with the routes inside.
The grouping needs nothing the store does not already hold: every alert keeps its batch and the
batch's triggering events (the failed links or nodes), so alerts raised by one batch for one
set of causes are one incident. An incident whose cause comes back and fails again within
``flap_window`` seconds of event time is the same incident once more (a flap), not a new one.

:func:`group_incidents` is a pure function over alerts, so the webhook groups one batch's
alerts with it and the dashboard/CLI group the whole history (:func:`read_incidents`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from netrules.facts import Fact, format_value, value_from_json
from netrules.store.base import Store
from netrules.store.queries import LINK
from netrules.store.records import SEVERITIES, Alert

__all__ = ["FLAP_WINDOW", "Incident", "cause_of", "group_incidents", "read_incidents"]

#: Seconds of event time: a cause failing again this soon after its incident ended is a flap.
FLAP_WINDOW = 600.0


def _name(fact: Fact) -> str:
    """A link fact as an undirected link ``A–B`` (both directions are one cable); any other
    fact as itself."""
    if len(fact.args) >= 2 and all(isinstance(a, str) for a in fact.args[:2]):
        a, b = sorted(str(x) for x in fact.args[:2])
        return f"{a}–{b}" if fact.relation == LINK else f"{fact.relation} {a}–{b}"
    return str(fact)


def cause_of(alert: Alert) -> tuple[str, ...]:
    """What an alert's batch did that raised it: its triggering events, links folded to
    undirected names (``-Seattle–Sunnyvale``), sorted; the batch itself when none are kept."""
    names = sorted({f"{e.op}{_name(e.fact)}" for e in alert.trigger_events})
    return tuple(names) or (f"batch {alert.raised_batch}",)


def _plain(v: Any) -> str:
    """A node name as the operator writes it (no NDlog quotes)."""
    return v if isinstance(v, str) else format_value(value_from_json(v))


def _affected(alert: Alert) -> str:
    src, dst = alert.subject.get("src"), alert.subject.get("dst")
    if src is not None and dst is not None:
        return f"{_plain(src)} → {_plain(dst)}"
    fact = alert.subject.get("fact")
    if isinstance(fact, dict) and "relation" in fact:
        return str(Fact.from_json(fact))
    return alert.dedup_key


@dataclass(frozen=True)
class Incident:
    """Alerts with one root cause: what broke (``cause``), what it affected, since when, and
    (once every alert cleared) until when; ``flaps`` counts how often the cause failed."""

    id: str
    severity: str
    cause: tuple[str, ...]
    alerts: tuple[Alert, ...]
    start_batch: int
    start_time: float
    end_batch: int | None
    end_time: float | None
    flaps: int = 1

    @property
    def active(self) -> bool:
        return self.end_batch is None

    @property
    def affected(self) -> list[str]:
        """Affected pairs/routes/facts, one per alert key (a flap repeats none)."""
        return sorted({_affected(a) for a in self.alerts})

    @property
    def nodes(self) -> set[str]:
        """Sources and destinations of the pairs it affects (to tell an outage from an answer
        that is simply empty)."""
        return {_plain(a.subject[k]) for a in self.alerts for k in ("src", "dst")
                if a.subject.get(k) is not None}

    @property
    def links(self) -> list[str]:
        """The links (or facts) behind it, without the +/- of the triggering events."""
        return [c[1:] if c[:1] in "+-" else c for c in self.cause]

    @property
    def kinds(self) -> list[str]:
        return sorted({a.kind for a in self.alerts})

    def title(self) -> str:
        """One line for a banner: severity, cause, what it cost, state."""
        what = {"route_lost": "routes lost", "reachability_lost": "pairs unreachable",
                "routing_loop": "routing loops", "pattern_matched": "patterns matched"}
        counts = ", ".join(f"{len(self.affected_by_kind(k))} {what.get(k, k)}"
                           for k in self.kinds)
        downs = [c[1:] for c in self.cause if c.startswith("-")]
        ups = [c[1:] for c in self.cause if c.startswith("+")]
        cause = (", ".join(downs) + " down" if downs else
                 ", ".join(ups) + " up" if ups else ", ".join(self.cause))
        flap = f", flapped {self.flaps}×" if self.flaps > 1 else ""
        state = "active" if self.active else f"ended in batch {self.end_batch}"
        return f"{self.severity}: {cause}: {counts} (since batch {self.start_batch}{flap}; {state})"

    def affected_by_kind(self, kind: str) -> list[str]:
        """Affected pairs/facts of one alert kind."""
        return sorted({_affected(a) for a in self.alerts if a.kind == kind})

    def to_json(self, with_alerts: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "severity": self.severity, "state": "active" if self.active
            else "ended", "cause": list(self.cause), "links": self.links,
            "affected": self.affected, "start_batch": self.start_batch,
            "start_time": self.start_time, "end_batch": self.end_batch,
            "end_time": self.end_time, "flaps": self.flaps, "title": self.title()}
        out["alerts"] = ([a.to_json() for a in self.alerts] if with_alerts
                         else [a.dedup_key for a in self.alerts])
        return out


def _end(alerts: Sequence[Alert]) -> tuple[int | None, float | None]:
    if any(a.state == "active" for a in alerts):
        return None, None
    last = max(alerts, key=lambda a: (a.cleared_batch or 0, a.cleared_time or 0.0))
    return last.cleared_batch, last.cleared_time


def group_incidents(alerts: Iterable[Alert],
                    flap_window: float = FLAP_WINDOW) -> list[Incident]:
    """Incidents of ``alerts`` (any order), newest first.

    Alerts raised by one batch for one cause are one episode; an episode whose cause equals an
    earlier incident's, and that starts while it is active or within ``flap_window`` seconds of
    its end, joins it as one more flap.
    """
    episodes: dict[tuple[int, tuple[str, ...]], list[Alert]] = {}
    for a in alerts:
        episodes.setdefault((a.raised_batch, cause_of(a)), []).append(a)
    merged: list[dict[str, Any]] = []
    latest: dict[tuple[str, ...], dict[str, Any]] = {}
    for (batch, cause), group in sorted(episodes.items()):
        group.sort(key=lambda a: (a.kind, a.dedup_key, a.id or 0))
        end = _end(group)
        prev = latest.get(cause)
        start_time = min(a.raised_time for a in group)
        if prev is not None and (prev["end"][1] is None
                                 or start_time - prev["end"][1] <= flap_window):
            prev["alerts"].extend(group)
            prev["flaps"] += 1
            prev["end"] = _end(prev["alerts"])
            continue
        inc = {"batch": batch, "time": start_time, "cause": cause, "alerts": list(group),
               "flaps": 1, "end": end}
        merged.append(inc)
        latest[cause] = inc
    out = []
    for m in merged:
        sev = min((a.severity for a in m["alerts"]), key=SEVERITIES.index)
        out.append(Incident(
            id=f"{m['batch']}:{'+'.join(m['cause'])}", severity=sev, cause=m["cause"],
            alerts=tuple(m["alerts"]), start_batch=m["batch"], start_time=m["time"],
            end_batch=m["end"][0], end_time=m["end"][1], flaps=m["flaps"]))
    return sorted(out, key=lambda i: (i.start_batch, i.id), reverse=True)


def read_incidents(store: Store, active_only: bool = False, limit: int = 10_000,
                   flap_window: float = FLAP_WINDOW) -> list[Incident]:
    """The store's incidents, newest first, from its last ``limit`` alerts."""
    incidents = group_incidents(store.alerts(limit=limit), flap_window)
    return [i for i in incidents if i.active] if active_only else incidents
