"""Stage 2: the append-only, versioned event log; the engine's only input."""

from netrules.eventlog.log import EventLog
from netrules.eventlog.schema import SCHEMA_VERSION, Event, EventKind, TransitionFilter

__all__ = ["SCHEMA_VERSION", "Event", "EventKind", "EventLog", "TransitionFilter"]
