"""The alert record as the store keeps it: what the engine's rules raise and readers list.

It lives with the store, not with the rules that raise it, so the store (a sink between the
engine and its readers) imports nothing from the engine stage; ``netrules.alerts`` re-exports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from netrules.eventlog.schema import Event

__all__ = ["SEVERITIES", "ALERT_KINDS", "Alert"]

SEVERITIES = ("critical", "major", "minor", "info")
ALERT_KINDS = ("route_lost", "reachability_lost", "routing_loop", "pattern_matched")


@dataclass(frozen=True)
class Alert:
    """One alert; ``id``/``state``/``cleared_*`` are filled in when read back from the store."""

    kind: str
    severity: str
    message: str
    dedup_key: str
    subject: dict[str, Any]
    raised_batch: int
    raised_time: float
    trigger_events: tuple[Event, ...] = ()
    id: int | None = None
    state: str = "active"
    cleared_batch: int | None = None
    cleared_time: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ALERT_KINDS:
            raise ValueError(f"unknown alert kind {self.kind!r}")
        if self.severity not in SEVERITIES:
            raise ValueError(f"unknown severity {self.severity!r}; one of {SEVERITIES}")
        if self.state not in ("active", "cleared"):
            raise ValueError(f"alert state must be 'active' or 'cleared', not {self.state!r}")

    def to_json(self) -> dict[str, Any]:
        """Plain JSON form (webhook payloads, CLI ``--json``)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "severity": self.severity,
            "message": self.message,
            "dedup_key": self.dedup_key,
            "subject": self.subject,
            "raised_batch": self.raised_batch,
            "raised_time": self.raised_time,
            "trigger_events": [e.to_json() for e in self.trigger_events],
            "state": self.state,
            "cleared_batch": self.cleared_batch,
            "cleared_time": self.cleared_time,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Alert:
        return cls(
            kind=obj["kind"],
            severity=obj["severity"],
            message=obj["message"],
            dedup_key=obj["dedup_key"],
            subject=dict(obj.get("subject") or {}),
            raised_batch=int(obj["raised_batch"]),
            raised_time=float(obj["raised_time"]),
            trigger_events=tuple(Event.from_json(e) for e in obj.get("trigger_events") or ()),
            id=obj.get("id"),
            state=obj.get("state", "active"),
            cleared_batch=obj.get("cleared_batch"),
            cleared_time=obj.get("cleared_time"),
        )
