"""``--once``: read the whole event log, apply it in batches, write each, exit. No Spark.

Batches hold at most ``batch_events`` events (0: a whole segment) and never span two segments
(a segment is one collector tick). Events the store already applied are dropped *before*
batching, and a killed run committed whole batches only, so a restart forms exactly the
batches the killed run had left: same ids, same change log as an uninterrupted run.

A program with event rules (``clocked.ClockedEngine``) then runs its clock to ``until`` in one
more batch with no events, unless a previous run already took it there: the timers, expiries
and beacons after the last event are part of the run, and a restart repeats none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from netrules.eventlog import Event, EventLog
from netrules.pipeline.batch import BatchProcessor
from netrules.pipeline.recover import read_segment

__all__ = ["OnceResult", "plan_batches", "run_once"]


@dataclass
class OnceResult:
    batches: int
    events: int
    skipped_events: int
    bad_lines: list[str]


def plan_batches(log: EventLog, batch_events: int, applied: Callable[[list[str]], set[str]]
                 ) -> Iterator[tuple[int, list[Event], list[str], int]]:
    """``(segment index, events, bad lines, already-applied count)`` per batch, in log
    order."""
    for k, seg in enumerate(log.segments()):
        events, bad = read_segment(seg)
        done = applied([e.id for e in events]) if events else set()
        fresh = [e for e in events if e.id not in done]
        if not fresh:
            if bad:
                yield k, [], bad, len(events)
            continue
        size = batch_events if batch_events > 0 else len(fresh)
        for i in range(0, len(fresh), size):
            yield k, fresh[i:i + size], (bad if i == 0 else []), (
                len(events) - len(fresh) if i == 0 else 0)


def run_once(processor: BatchProcessor, log: EventLog, batch_events: int,
             on_bad_line: Callable[[str], None] | None = None,
             progress: Callable[[int], None] | None = None,
             until: float | None = None) -> OnceResult:
    """Apply every unapplied event of ``log``; ``progress(segments_done)`` as it goes; then
    run an engine's clock to ``until`` (None: no clock to run)."""
    result = OnceResult(0, 0, 0, [])
    for k, events, bad, skipped in plan_batches(log, batch_events,
                                             processor.store.applied_event_ids):
        for msg in bad:
            result.bad_lines.append(msg)
            if on_bad_line:
                on_bad_line(msg)
        result.skipped_events += skipped
        if not events:
            continue
        bid = 0 if processor.last_batch is None else processor.last_batch + 1
        processor.process(bid, events, bad_lines=bad)
        result.batches += 1
        result.events += len(events)
        if progress:
            progress(k + 1)
    if until is not None and getattr(processor.engine, "now", until) < until:
        bid = 0 if processor.last_batch is None else processor.last_batch + 1
        processor.process(bid, [], until=until)
        result.batches += 1
    return result
