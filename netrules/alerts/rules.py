"""Turn a batch's net view changes into operator alerts, and clear them on recovery.

The rules know nothing about Spark or SQL: the engine hands :meth:`AlertRules.evaluate` the
batch's net additions and removals, the batch's events, a ``view_has`` callback that answers
"does any fact for this key still exist after the batch?", and the set of alert keys already
active in the store. That keeps the alert logic a pure function that tests can drive with
plain dicts, and lets the store stay the single source of truth for what is active.

Severity levels (highest first) and why each alert kind gets the one it gets:

* ``critical`` -- ``reachability_lost`` between a pair the operator explicitly asked to
  monitor, and ``routing_loop``: traffic is being dropped or circulating right now.
* ``major`` -- ``route_lost``: a node has no route to a destination; it may still be reachable
  otherwise, and single routes flap during convergence.
* ``minor`` -- ``pattern_matched``: a fraud/anomaly pattern is a lead to investigate, not an
  outage.
* ``info`` -- reserved for overrides (e.g. a noisy pattern relation demoted to ``info``).

``AlertConfig.severity`` overrides these by alert kind or by relation name.

Triggering events: an alert records the batch's events that could have caused it. The choice
is deliberately simple and explainable: for a loss (route/reachability) the batch's retraction
('-') events, for an appearance (loop/pattern) its assertion ('+') events; if the batch has none
of that sign (a loss can follow an assertion through negation or a cheaper-route change), every
event of the batch. At most ``max_trigger_events`` are kept per alert so a 10,000-event batch
that drops 1,000 routes does not write ten million event copies; ``subject["trigger_count"]``
keeps the full count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from netrules.eventlog.schema import Event
from netrules.facts import Fact, Value, format_value, value_from_json, value_to_json
from netrules.store.records import ALERT_KINDS, SEVERITIES, Alert

__all__ = [
    "SEVERITIES",
    "ALERT_KINDS",
    "Alert",
    "AlertConfig",
    "AlertRules",
    "ViewHas",
    "view_has_from_store",
]

_DEFAULT_SEVERITY = {
    "route_lost": "major",
    "reachability_lost": "critical",
    "routing_loop": "critical",
    "pattern_matched": "minor",
}

#: ``view_has(relation, key)``: does any fact of ``relation`` whose key positions hold ``key``
#: exist after the batch was applied?
ViewHas = Callable[[str, tuple[Value, ...]], bool]


def _pair(obj: Any) -> tuple[Value, Value]:
    a, b = obj
    return (value_from_json(a), value_from_json(b))


@dataclass(frozen=True)
class AlertConfig:
    """Which relations of the running program mean what.

    ``route_relations`` maps a relation to the (source, destination) argument positions that
    identify one route, e.g. ``{"bestPath": (0, 1)}``. ``reach_relation`` is the reachability
    view, keyed by ``reach_key``; ``monitored_pairs`` restricts reachability alerts to those
    (src, dst) pairs, and ``None`` means every pair (only sensible on small networks).
    ``loop_relations`` and ``pattern_relations`` raise an alert for every fact that appears.
    """

    route_relations: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    reach_relation: str | None = None
    reach_key: tuple[int, int] = (0, 1)
    monitored_pairs: frozenset[tuple[Value, Value]] | None = frozenset()
    loop_relations: tuple[str, ...] = ()
    pattern_relations: tuple[str, ...] = ()
    severity: Mapping[str, str] = field(default_factory=dict)
    max_trigger_events: int = 10

    def __post_init__(self) -> None:
        for name, sev in self.severity.items():
            if sev not in SEVERITIES:
                raise ValueError(f"severity for {name!r}: {sev!r} is not one of {SEVERITIES}")

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> AlertConfig:
        """Build from a JSON/TOML-shaped mapping (lists instead of tuples)."""
        pairs = obj.get("monitored_pairs", [])
        return cls(
            route_relations={k: (int(v[0]), int(v[1]))
                             for k, v in (obj.get("route_relations") or {}).items()},
            reach_relation=obj.get("reach_relation"),
            reach_key=tuple(obj.get("reach_key", (0, 1))),  # type: ignore[arg-type]
            monitored_pairs=None if pairs is None else frozenset(_pair(p) for p in pairs),
            loop_relations=tuple(obj.get("loop_relations") or ()),
            pattern_relations=tuple(obj.get("pattern_relations") or ()),
            severity=dict(obj.get("severity") or {}),
            max_trigger_events=int(obj.get("max_trigger_events", 10)),
        )


def _key_text(values: Iterable[Value]) -> str:
    # (a dedup key is stored with its alert: escaped as it always was, so an alert raised
    # before an upgrade is still found, and cleared, after it)
    return ":".join(format_value(v, ascii_only=True) for v in values)


def _describe_events(events: list[Event]) -> str:
    if not events:
        return "no triggering event"
    shown = ", ".join(f"{e.op}{e.fact}" for e in events[:3])
    more = f" and {len(events) - 3} more" if len(events) > 3 else ""
    return f"after {shown}{more}"


class AlertRules:
    """Evaluates one batch at a time; holds no state between batches (the store does)."""

    def __init__(self, config: AlertConfig) -> None:
        self.config = config

    def key_positions(self, relation: str) -> tuple[int, ...]:
        """Argument positions that make up the alert key of ``relation`` (for ``view_has``)."""
        if relation in self.config.route_relations:
            return tuple(self.config.route_relations[relation])
        if relation == self.config.reach_relation:
            return tuple(self.config.reach_key)
        raise KeyError(f"{relation!r} is not a route or reachability relation")

    def relations(self) -> set[str]:
        """Every relation this configuration watches (the engine may skip the rest)."""
        c = self.config
        rels = set(c.route_relations) | set(c.loop_relations) | set(c.pattern_relations)
        if c.reach_relation:
            rels.add(c.reach_relation)
        return rels

    def _severity(self, kind: str, relation: str) -> str:
        sev = self.config.severity
        return sev.get(relation) or sev.get(kind) or _DEFAULT_SEVERITY[kind]

    def _triggers(self, events: list[Event], op: str) -> tuple[list[Event], int]:
        chosen = [e for e in events if e.op == op] or list(events)
        return chosen[: self.config.max_trigger_events], len(chosen)

    def evaluate(
        self,
        batch_id: int,
        time: float,
        added: Mapping[str, Iterable[Fact]],
        removed: Mapping[str, Iterable[Fact]],
        trigger_events: Iterable[Event],
        view_has: ViewHas,
        active_keys: set[str] | frozenset[str] = frozenset(),
    ) -> tuple[list[Alert], list[str]]:
        """Alerts to raise and dedup keys to clear for one applied batch.

        ``added``/``removed`` are the batch's *net* view changes. A key already in
        ``active_keys`` is never raised again, and only active keys are reported cleared, so
        the output is exactly what the store and a webhook need to act on. Output order is
        deterministic (sorted by dedup key) so reruns write identical rows.
        """
        events = list(trigger_events)
        raised: dict[str, Alert] = {}
        cleared: set[str] = set()
        loss_events, loss_count = self._triggers(events, "-")
        gain_events, gain_count = self._triggers(events, "+")

        def raise_(kind: str, relation: str, key: str, message: str,
                   subject: dict[str, Any], loss: bool) -> None:
            if key in active_keys or key in raised:
                return
            trig, count = (loss_events, loss_count) if loss else (gain_events, gain_count)
            subject = {**subject, "relation": relation, "trigger_count": count}
            raised[key] = Alert(
                kind=kind,
                severity=self._severity(kind, relation),
                message=f"{message} ({_describe_events(trig)}, batch {batch_id})",
                dedup_key=key,
                subject=subject,
                raised_batch=batch_id,
                raised_time=time,
                trigger_events=tuple(trig),
            )

        def keyed(relation: str, pos: tuple[int, int]) -> tuple[set, set]:
            def keys(facts: Iterable[Fact]) -> set[tuple[Value, Value]]:
                return {(f.args[pos[0]], f.args[pos[1]]) for f in facts}
            return keys(removed.get(relation, ())), keys(added.get(relation, ()))

        for relation, pos in sorted(self.config.route_relations.items()):
            gone, came = keyed(relation, pos)
            for src, dst in gone - came:
                if not view_has(relation, (src, dst)):
                    raise_("route_lost", relation, f"route_lost:{relation}:{_key_text((src, dst))}",
                           f"route lost: {format_value(src)} has no {relation} to "
                           f"{format_value(dst)}",
                           {"src": value_to_json(src), "dst": value_to_json(dst)}, loss=True)
            for src, dst in came:
                cleared.add(f"route_lost:{relation}:{_key_text((src, dst))}")

        if self.config.reach_relation:
            relation = self.config.reach_relation
            pairs = self.config.monitored_pairs
            gone, came = keyed(relation, self.config.reach_key)
            for src, dst in gone - came:
                if pairs is not None and (src, dst) not in pairs:
                    continue
                if not view_has(relation, (src, dst)):
                    raise_("reachability_lost", relation,
                           f"reachability_lost:{relation}:{_key_text((src, dst))}",
                           f"reachability lost: {format_value(src)} can no longer reach "
                           f"{format_value(dst)}",
                           {"src": value_to_json(src), "dst": value_to_json(dst)}, loss=True)
            for src, dst in came:
                cleared.add(f"reachability_lost:{relation}:{_key_text((src, dst))}")

        for kind, rels, what in (("routing_loop", self.config.loop_relations, "routing loop"),
                                 ("pattern_matched", self.config.pattern_relations,
                                  "pattern matched")):
            for relation in sorted(rels):
                appeared = set(added.get(relation, ()))
                for fact in sorted(appeared, key=Fact.key):
                    raise_(kind, relation, f"{kind}:{relation}:{_key_text(fact.args)}",
                           f"{what}: {fact}",
                           {"fact": fact.to_json()}, loss=False)
                for fact in removed.get(relation, ()):
                    if fact not in appeared:
                        cleared.add(f"{kind}:{relation}:{_key_text(fact.args)}")

        cleared_out = sorted(k for k in cleared if k in active_keys and k not in raised)
        return [raised[k] for k in sorted(raised)], cleared_out


def view_has_from_store(
    store: Any,
    rules: AlertRules,
    added: Mapping[str, Iterable[Fact]] | None = None,
    removed: Mapping[str, Iterable[Fact]] | None = None,
) -> ViewHas:
    """A ``view_has`` backed by a :class:`netrules.store.Store`.

    Alerts are written in the same transaction as the batch, so they are evaluated *before*
    the store holds the batch: pass the batch's ``added``/``removed`` and the answer is the
    post-batch state (store rows minus ``removed``, plus ``added``). Without them it answers
    for the store as it is. Typed loosely: the rules need only ``read_view``.
    """
    plus = {rel: list(fs) for rel, fs in (added or {}).items()}
    minus = {rel: set(fs) for rel, fs in (removed or {}).items()}

    def has(relation: str, key: tuple[Value, ...]) -> bool:
        positions = rules.key_positions(relation)
        if any(tuple(f.args[p] for p in positions) == tuple(key)
               for f in plus.get(relation, ())):
            return True
        where = dict(zip(positions, key, strict=True))
        gone = {f for f in minus.get(relation, ())
                if tuple(f.args[p] for p in positions) == tuple(key)}
        rows = store.read_view(relation, where=where, limit=len(gone) + 1)
        return any(f not in gone for f in rows)

    return has
