"""SIGKILL the pipeline at random points and restart it: the store must end exactly as an
uninterrupted run leaves it, with every event applied once.

The --once runner takes 10 kills over 2,000 events (its batching is deterministic, so even
the change log and alerts must match the uninterrupted run row for row); the Spark Structured
Streaming driver takes 3 kills over 300 events (Spark may group files differently after a
restart, so there the views must match and the change log must be a valid exactly-once
history).
"""

from __future__ import annotations

import random
import subprocess

import pytest

from tests.pipeline.crash import (
    ROOT,
    check_exactly_once,
    command,
    kill_runs,
    make_log,
    summary,
)


def test_once_runner_survives_ten_sigkills(tmp_path) -> None:
    events = tmp_path / "events"
    ids = make_log(events, 2000)
    extra = ("--once", "--batch-events", "20")
    ref = tmp_path / "ref.db"
    subprocess.run(command(ref, events, *extra), cwd=ROOT, check=True, capture_output=True)

    crashed = tmp_path / "crashed.db"
    log = tmp_path / "stderr.log"
    kills = kill_runs(command(crashed, events, *extra), crashed, 10, random.Random(6),
                      max_ahead=6, timeout=60, log=log, total_events=len(ids))
    assert kills.done == 10, "a run finished before it could be killed ten times"
    # eight of the ten kills wait for batches (the other two fire after a delay): those eight
    # at least land while the log is being applied
    assert kills.mid_run >= 8, kills
    subprocess.run(command(crashed, events, *extra), cwd=ROOT, check=True, capture_output=True)

    check_exactly_once(crashed, ids)
    check_exactly_once(ref, ids)
    want, got = summary(ref), summary(crashed)
    assert got["views"] == want["views"]
    assert got["changes"] == want["changes"]
    assert got["alerts"] == want["alerts"]


SEED = 1  # the streaming test's kills: one after a delay, then two waiting for batches


@pytest.mark.spark
def test_streaming_pipeline_survives_three_sigkills(tmp_path) -> None:
    events = tmp_path / "events"
    ids = make_log(events, 300)
    ref = tmp_path / "ref.db"
    subprocess.run(command(ref, events, "--once"), cwd=ROOT, check=True, capture_output=True)

    crashed = tmp_path / "crashed.db"
    log = tmp_path / "stderr.log"
    stream = ("--max-files-per-trigger", "2", "--checkpoint", str(tmp_path / "checkpoint"))
    kills = kill_runs(command(crashed, events, *stream), crashed, 3, random.Random(SEED),
                      max_ahead=3, timeout=120, log=log, total_events=len(ids))
    assert kills.done == 3, "a run finished before it could be killed three times"
    # with this seed two kills wait for batches of their run (one fires after a delay, in
    # Spark's start-up): both land mid-run, so recovery from a half-applied log is exercised
    assert kills.mid_run >= 2, kills
    subprocess.run(command(crashed, events, *stream), cwd=ROOT, check=True,
                   capture_output=True)

    check_exactly_once(crashed, ids)
    assert summary(crashed)["views"] == summary(ref)["views"]
