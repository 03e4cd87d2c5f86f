"""Turn a simulation, a capture file or a live interface into event-log segments.

The event log is the pipeline's only input, so every source ends here. A segment is one
collector "tick" (events observed at the same instant, or within ``tick`` seconds): the
streaming pipeline reads one segment per micro-batch by default, so a link failure and its
recovery land in different batches and the alert they cause is visible in between.
Appending is idempotent by event id: rerunning ``netrules run --simulate`` after a crash does
not write the same events twice.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netrules.errors import EventLogError
from netrules.eventlog import Event, EventLog

__all__ = ["ticks", "append_new", "known_ids", "SimulationSource", "simulation",
           "capture_file", "follow_interface"]


def ticks(events: Iterable[Event], tick: float = 0.0) -> Iterator[list[Event]]:
    """Consecutive events grouped by instant (``tick`` = 0) or by ``tick``-second window."""
    group: list[Event] = []
    key: float | None = None
    for e in events:
        k = e.time if tick <= 0 else float(int(e.time // tick))
        if group and k != key:
            yield group
            group = []
        key = k
        group.append(e)
    if group:
        yield group


def known_ids(log: EventLog) -> dict[str, Event]:
    """Every readable event already in ``log`` by id (bad lines are the reader's concern)."""
    errors: list[EventLogError] = []
    return {e.id: e for e in log.read(strict=False, errors=errors)}


def append_new(log: EventLog, events: Iterable[Event], tick: float = 0.0,
               max_segment: int = 5_000,
               progress: Callable[[int, int], None] | None = None) -> int:
    """Append the events ``log`` does not hold yet, one segment per tick; returns how many.
    ``progress(segments written, segments)`` is told after each segment.

    An id the log holds with different content is an error, not a silent skip: the same
    event ids (``sim:NAME:SEQ``) from a changed scenario would otherwise never be applied."""
    have = known_ids(log)
    fresh = []
    for e in events:
        old = have.get(e.id)
        if old is None:
            fresh.append(e)
        elif (old.op, old.fact, old.time) != (e.op, e.fact, e.time):
            raise EventLogError(
                f"{log.directory} already holds a different event {e.id} ({old.op}{old.fact} "
                f"at {old.time:g}, now {e.op}{e.fact} at {e.time:g})\nHint: a changed "
                f"scenario needs its own --events-dir (or another scenario name)")
    last = _newest(log)
    parts = [group[i:i + max_segment] for group in ticks(fresh, tick)
             for i in range(0, len(group), max_segment)]
    for done, part in enumerate(parts, 1):
        last = _ordered(log.append(part), last)
        if progress is not None:
            progress(done, len(parts))
    return len(fresh)


def _newest(log: EventLog) -> float:
    return max((p.stat().st_mtime for p in log.segments()), default=0.0)


def _ordered(path: Path | None, last: float) -> float:
    """Give a new segment an mtime strictly after the previous one's (``last``): Spark's file
    source takes new files oldest first, and same-millisecond segments come in any order."""
    if path is None:
        return last
    mtime = max(time.time(), last + 0.002)
    os.utime(path, (mtime, mtime))
    return mtime


@dataclass
class SimulationSource:
    """A simulation's topology (written to the store) and its events."""

    graph: Any
    events: list[Event]
    dropped: dict[str, int]


def simulation(topology: str, scenario_file: str | None = None, seed: int | None = None,
               fail_links: tuple[tuple[str, str], ...] = (), at: float = 1.0,
               random_failures: str | None = None, name: str | None = None
               ) -> SimulationSource:
    """Run the simulator on ``topology`` with a scenario file and/or ``--fail-link`` flags."""
    from collectors.scenario import Scenario
    from collectors.simulate import run
    from topologies.load import load_topology

    graph = load_topology(topology)
    base = Scenario.load(scenario_file, name=name) if scenario_file else None
    scenario = Scenario.from_flags(fail_links=fail_links, fail_nodes=(),
                                   random_failures=random_failures,
                                   seed=seed, at=at, name=name or "run", base=base)
    result = run(graph, scenario)
    return SimulationSource(graph, result.events, dict(result.dropped))


def topology_rows(graph: Any) -> tuple[list[tuple[str, dict]], list[tuple]]:
    """Nodes and links of a simulated graph in the store's ``set_topology`` shape."""
    nodes = [(str(n), {k: v for k, v in d.items() if isinstance(v, str | int | float)})
             for n, d in graph.nodes(data=True)]
    links = [(str(u), str(v), d.get("cost", 1), "up",
              {k: v for k, v in d.items() if k != "cost" and isinstance(v, str | int | float)})
             for u, v, d in graph.edges(data=True)]
    return nodes, links


def capture_file(path: str) -> tuple[list[Event], str]:
    """Events of a pcap/pcapng file, and the replay's report (what it skipped and why)."""
    from collectors.pcap import replay

    with replay(path) as r:
        events = list(r)
    return events, r.report.summary()


def follow_interface(iface: str, log: EventLog, stop: threading.Event) -> threading.Thread:
    """Capture on ``iface`` in a thread, appending each event to ``log`` as it is decoded (one
    segment per event: a link that goes down must not wait in memory for the next packet)
    until ``stop`` is set. The capture itself raises CollectorError at once (no privileges,
    no such interface), before the thread starts."""
    from collectors.live import capture

    stream = capture(iface, timeout=None, stop=stop)

    def pump() -> None:
        newest = _newest(log)
        for e in stream:
            newest = _ordered(log.append([e]), newest)

    t = threading.Thread(target=pump, name=f"capture-{iface}", daemon=True)
    t.start()
    return t
