"""Helpers for the crash tests: an event log of a known size, a pipeline subprocess that can be
SIGKILLed, and the checks that a store was built with every event applied exactly once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from netrules.eventlog import EventLog
from netrules.pipeline.sources import append_new, simulation
from netrules.store import open_store

ROOT = Path(__file__).resolve().parents[2]


def make_log(directory: Path, n_events: int, tick: float = 8.0) -> list[str]:
    """The first ``n_events`` events of random link failures on a 4x4 grid; their ids."""
    sim = simulation("grid:4x4", None, 3, random_failures="40,5,1000", name="crash")
    events = sim.events[:n_events]
    assert len(events) == n_events
    append_new(EventLog(directory), events, tick=tick)
    return [e.id for e in events]


def command(store: Path, events: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "netrules.cli", "run", "reachability", "--events",
            str(events), "--store", str(store), "-q", *extra]


def _progress(store: Path) -> tuple[int, int]:
    """(last committed batch, events applied) read with plain sqlite; (-1, 0) before the
    first batch."""
    if not store.exists():
        return -1, 0
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            row = con.execute("SELECT MAX(batch_id), SUM(n_events) FROM batches").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return -1, 0
    if row is None or row[0] is None:
        return -1, 0
    return int(row[0]), int(row[1] or 0)


def last_batch(store: Path) -> int:
    """The store's last committed batch, read with plain sqlite (-1 before the first)."""
    return _progress(store)[0]


@dataclass
class Kills:
    """What ``kill_runs`` did: kills sent, and how many landed mid-run (the killed run had
    committed a batch of its own and the log was not all applied), as opposed to in start-up
    or recovery: a test asserting only the first would pass with every kill landing idle."""

    done: int = 0
    mid_run: int = 0


def kill_runs(cmd: list[str], store: Path, kills: int, rng, *, max_ahead: int,
              timeout: float, log: Path, total_events: int) -> Kills:
    """Start ``cmd`` again and again, SIGKILLing it ``kills`` times: mostly once the store got
    a random number of batches further, sometimes after a random delay (which can land in
    start-up or recovery). Stops early if a run finishes."""
    out = Kills()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    while out.done < kills:
        begun = last_batch(store)
        with log.open("a") as err:
            p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=err)
        start = time.monotonic()
        by_time = rng.random() < 0.3
        target = begun + rng.randint(1, max_ahead)
        delay = rng.uniform(0.1, 1.0)
        while p.poll() is None and time.monotonic() - start < timeout:
            if (time.monotonic() - start >= delay) if by_time else (last_batch(store) >= target):
                break
            time.sleep(0.003)
        if p.poll() is not None:
            assert p.returncode == 0, log.read_text()[-3000:]
            return out
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        out.done += 1
        batch, applied = _progress(store)
        out.mid_run += batch > begun and applied < total_events
    return out


def check_exactly_once(store: Path, event_ids: list[str]) -> None:
    """Every event applied once, and the change log, folded from nothing, is a valid history
    (no fact added while present or removed while absent) ending in the stored views."""
    with open_store(str(store), read_only=True) as s:
        assert s.applied_event_ids(event_ids) == set(event_ids)
        assert sum(b.n_events for b in s.batches()) == len(event_ids)
        present: set = set()
        for c in s.changes():
            key = (c.fact.relation, c.fact.args)
            if c.op == "+":
                assert key not in present, f"batch {c.batch_id}: {c.fact} added twice"
                present.add(key)
            else:
                assert key in present, f"batch {c.batch_id}: {c.fact} removed while absent"
                present.discard(key)
        snap = {(r, tuple(map(_tuple, a))) for r, rows in s.snapshot().items() for a in rows}
        assert {(r, tuple(map(_tuple, a))) for r, a in present} == snap


def _tuple(v):
    return tuple(map(_tuple, v)) if isinstance(v, list | tuple) else v


def summary(store: Path) -> dict:
    """What two runs must agree on: views, change log, alerts."""
    with open_store(str(store), read_only=True) as s:
        return {
            "views": s.snapshot(),
            "changes": [(c.batch_id, c.seq, c.op, str(c.fact)) for c in s.changes()],
            "alerts": sorted((a.dedup_key, a.raised_batch, a.state, a.cleared_batch)
                             for a in s.alerts()),
        }
