"""The one event schema every collector writes and the engine reads, and its transition filter.

An event asserts (``op="+"``) or retracts (``op="-"``) one located fact. Derivation bookkeeping
needs each real change exactly once, so collectors pass their raw observations through
:class:`TransitionFilter`, which drops duplicates and no-op transitions (down while already
down) and counts what it dropped.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from netrules.errors import EventLogError
from netrules.facts import Fact

__all__ = ["SCHEMA_VERSION", "EventKind", "Event", "TransitionFilter"]

SCHEMA_VERSION = 1


class EventKind(StrEnum):
    """What was observed; the fact says what it means for the rules."""

    LINK_UP = "link_up"
    LINK_DOWN = "link_down"
    SESSION_UP = "session_up"
    SESSION_DOWN = "session_down"
    ROUTE_ANNOUNCED = "route_announced"
    ROUTE_WITHDRAWN = "route_withdrawn"
    NEIGHBOUR_SEEN = "neighbour_seen"
    NEIGHBOUR_EXPIRED = "neighbour_expired"
    BFD_UP = "bfd_up"
    BFD_DOWN = "bfd_down"
    NODE_DOWN = "node_down"
    NODE_UP = "node_up"
    FACT = "fact"  # a plain assertion/retraction with no protocol behind it


@dataclass(frozen=True)
class Event:
    """One change to one located fact, as the event log stores it (schema version 1).

    ``id`` is unique per source (the source name plus a sequence number) so that the engine and
    the streaming checkpoint can apply each event exactly once.
    """

    id: str
    time: float
    source: str
    kind: EventKind
    op: str
    fact: Fact
    detail: dict[str, Any] = field(default_factory=dict, compare=False)
    where: str | None = field(default=None, compare=False, repr=False)  # "segment:line" read

    def __post_init__(self) -> None:
        if self.op not in ("+", "-"):
            raise ValueError(f"event {self.id}: op must be '+' or '-', not {self.op!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "v": SCHEMA_VERSION,
            "id": self.id,
            "time": self.time,
            "source": self.source,
            "kind": str(self.kind),
            "op": self.op,
            "fact": self.fact.to_json(),
            "detail": self.detail,
        }

    def to_line(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, obj: Any, where: str = "<event>") -> Event:
        """Parse one event object; any defect raises EventLogError naming ``where``."""
        try:
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            version = obj.get("v", SCHEMA_VERSION)
            if version != SCHEMA_VERSION:
                raise ValueError(f"schema version {version!r}, this reader knows {SCHEMA_VERSION}")
            return cls(
                id=str(obj["id"]),
                time=float(obj["time"]),
                source=str(obj["source"]),
                kind=EventKind(obj["kind"]),
                op=str(obj["op"]),
                fact=Fact.from_json(obj["fact"]),
                detail=dict(obj.get("detail") or {}),
                where=None if where == "<event>" else where,
            )
        except (KeyError, TypeError, ValueError) as err:
            raise EventLogError(f"{where}: invalid event: {err}") from err

    @classmethod
    def from_line(cls, line: str, where: str = "<event>") -> Event:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise EventLogError(f"{where}: not JSON: {err.msg} at column {err.colno}") from err
        return cls.from_json(obj, where)


class TransitionFilter:
    """Edge-trigger raw observations: pass a '+' only when the fact was absent and a '-' only
    when it was present. Everything else is counted in ``dropped`` by reason."""

    def __init__(self, present: set[Fact] | None = None) -> None:
        self.present: set[Fact] = set(present or ())
        self.dropped: Counter[str] = Counter()

    def accept(self, op: str, fact: Fact) -> bool:
        if op == "+":
            if fact in self.present:
                self.dropped["duplicate_up"] += 1
                return False
            self.present.add(fact)
            return True
        if fact not in self.present:
            self.dropped["down_while_down"] += 1
            return False
        self.present.discard(fact)
        return True
