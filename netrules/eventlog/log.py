"""An event log is a directory of immutable JSON-lines segments, appended one segment at a time.

Why segments and not one growing file: Spark's file stream source picks up *new files* only,
and a segment written under a temporary name then renamed is never seen half-written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from netrules.errors import EventLogError
from netrules.eventlog.schema import Event

__all__ = ["EventLog"]

_PREFIX = "events-"
_SUFFIX = ".jsonl"


class EventLog:
    """Append-only event log in ``directory``; segments are named ``events-<seq>.jsonl``."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def segments(self) -> list[Path]:
        return sorted(self.directory.glob(f"{_PREFIX}*{_SUFFIX}"))

    def _next_seq(self) -> int:
        segs = self.segments()
        if not segs:
            return 0
        return int(segs[-1].name[len(_PREFIX) : -len(_SUFFIX)]) + 1

    def append(self, events: Iterable[Event]) -> Path | None:
        """Write ``events`` as one new segment, atomically; returns its path (None if empty)."""
        lines = [e.to_line() for e in events]
        if not lines:
            return None
        seq = self._next_seq()
        final = self.directory / f"{_PREFIX}{seq:09d}{_SUFFIX}"
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        return final

    def read(self, *, strict: bool = True, errors: list[EventLogError] | None = None
             ) -> Iterator[Event]:
        """Every event in log order. A bad line raises (strict) or is reported into ``errors``."""
        for seg in self.segments():
            with seg.open(encoding="utf-8") as fh:
                for lineno, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        yield Event.from_line(line, f"{seg}:{lineno}")
                    except EventLogError as err:
                        if strict:
                            raise
                        if errors is not None:
                            errors.append(err)
