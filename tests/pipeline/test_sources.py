"""Sources -> event-log segments: idempotent appends, one segment per tick, ordered mtimes."""

from __future__ import annotations

import pytest

from netrules.errors import EventLogError
from netrules.eventlog import EventLog
from netrules.pipeline.recover import stream_base
from netrules.pipeline.sources import append_new, simulation
from netrules.store import open_store


def test_append_is_idempotent_and_one_segment_per_instant(tmp_path) -> None:
    sim = simulation("line:5", None, None, fail_links=(("n2", "n3"),), at=1.0)
    log = EventLog(tmp_path)
    assert append_new(log, sim.events) == len(sim.events) == 10
    assert append_new(log, sim.events) == 0  # a rerun after a crash adds nothing
    segs = log.segments()
    assert len(segs) == 2  # t=0: the topology; t=1: the failure
    mtimes = [p.stat().st_mtime for p in segs]
    assert mtimes == sorted(mtimes) and len(set(mtimes)) == len(mtimes)


def test_segments_keep_their_numbers_with_two_writers(tmp_path) -> None:
    """A writer keeps its next segment number; one that another writer took is skipped,
    never replaced (each writer's events stay in the log)."""
    sim = simulation("line:5", None, None, fail_links=(("n2", "n3"),), at=1.0)
    first, second = EventLog(tmp_path), EventLog(tmp_path)
    a = first.append(sim.events[:2])
    b = second.append(sim.events[2:4])  # reads the directory: takes the number after a
    c = first.append(sim.events[4:6])  # its kept number is b's: the next one is taken
    assert [p.name for p in (a, b, c)] == [f"events-{i:09d}.jsonl" for i in range(3)]
    assert [e.id for e in first.read()] == [e.id for e in sim.events[:6]]
    assert not list(tmp_path.glob(".tmp-*"))


def test_append_tells_progress_per_segment(tmp_path) -> None:
    sim = simulation("line:5", None, None, fail_links=(("n2", "n3"),), at=1.0)
    told: list[tuple[int, int]] = []
    append_new(EventLog(tmp_path), sim.events, progress=lambda d, t: told.append((d, t)))
    assert told == [(1, 2), (2, 2)]


def test_changed_scenario_under_the_same_ids_is_refused(tmp_path) -> None:
    log = EventLog(tmp_path)
    append_new(log, simulation("line:5", None, None, fail_links=(("n2", "n3"),)).events)
    other = simulation("line:5", None, None, fail_links=(("n0", "n1"),)).events
    with pytest.raises(EventLogError) as err:
        append_new(log, other)
    assert err.value.code == "EVENTLOG" and "Hint:" in str(err.value)


def test_stream_base_is_kept_per_started_checkpoint(tmp_path) -> None:
    ck = tmp_path / "ck"
    with open_store(str(tmp_path / "s.db")) as s:
        assert stream_base(s, str(ck)) == 0
        (ck / "offsets").mkdir(parents=True)
        (ck / "offsets" / "0").write_text("v1")
        assert stream_base(s, str(ck)) == 0  # the same checkpoint maps to the same ids
        other = tmp_path / "ck2"
        assert stream_base(s, str(other)) == 0  # store still empty
