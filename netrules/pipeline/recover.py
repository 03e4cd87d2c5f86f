"""Restart logic shared by both drivers: reading log lines tolerantly, and numbering batches.

A line that is not a valid event is reported as ``file:line`` and skipped; it never stops
the pipeline or rolls back a committed batch. Store batch ids must only grow across runs, so
a streaming query's batch ids (0, 1, ... per checkpoint) are offset by a base chosen once
per checkpoint and kept in the store's meta: a restart with the same checkpoint maps Spark's
replayed batch id to the same store batch id, which the store then recognises as written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from netrules.errors import EventLogError
from netrules.eventlog import Event
from netrules.store import Store

__all__ = ["parse_lines", "stream_base", "default_checkpoint"]


def parse_lines(lines: Iterable[tuple[str, int, str]]) -> tuple[list[Event], list[str]]:
    """``(file, line number, text)`` -> events in order, and one message per bad line."""
    events: list[Event] = []
    bad: list[str] = []
    for file, lineno, text in lines:
        if not text.strip():
            continue
        try:
            events.append(Event.from_line(text, f"{file}:{lineno}"))
        except EventLogError as err:
            bad.append(f"{err} (line skipped)")
    return events, bad


def read_segment(path: str | os.PathLike[str]) -> tuple[list[Event], list[str]]:
    """One segment file's events and bad-line messages."""
    p = Path(path)
    with p.open(encoding="utf-8", errors="replace") as fh:
        return parse_lines((str(p), n, line) for n, line in enumerate(fh, 1))


def default_checkpoint(events_dir: str) -> str:
    """``<events-dir>.checkpoint``: next to the log, never inside it (Spark would list it)."""
    return os.path.abspath(events_dir).rstrip(os.sep) + ".checkpoint"


def stream_base(store: Store, checkpoint: str) -> int:
    """The store batch id of Spark batch 0 under ``checkpoint`` (chosen once, then kept).

    A checkpoint that has not logged any offsets yet (new, or deleted by the user) starts
    again at batch 0, so it gets a fresh base after the store's last batch: otherwise its
    batches would be mistaken for replays of committed ones and skipped unread.
    """
    key = "stream_base:" + os.path.abspath(checkpoint)
    meta = store.meta()
    offsets = Path(checkpoint) / "offsets"
    started = offsets.is_dir() and any(p.name.isdigit() for p in offsets.iterdir())
    if key in meta and started:
        return int(meta[key])
    last = store.last_batch_id()
    base = 0 if last is None else last + 1
    store.set_meta(key, str(base))
    return base
