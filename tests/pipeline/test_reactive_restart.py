"""A program with event rules survives a crash like a view program: the store a killed and
restarted ``--once`` run leaves is the uninterrupted run's, change log row for row.

The crash is injected where a SIGKILL can land as far as the store can tell: just before a
batch commits (the batch is lost, the engine's state in memory with it) and just after (the
next run starts from it). The event log: random failures and repairs on ring:6, so links go
down and come back (new tLink entries, expiries, re-floods) across many batches, and the
clock runs on to the default horizon in a last batch of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from netrules.eventlog import EventLog
from netrules.lang.parse import parse_program
from netrules.pipeline import RunOptions, check_program, run_pipeline
from netrules.pipeline.sources import append_new, simulation
from netrules.plan import plan_program
from netrules.store import open_store
from tests.pipeline.crash import summary

PROGRAM = Path(__file__).resolve().parents[2] / "examples" / "rapidnet" / "sim-ls-triggered.olg"


class Crash(Exception):
    pass


def make_log(directory: Path) -> int:
    sim = simulation("ring:6", None, 4, random_failures="40,15,120", name="restart")
    append_new(EventLog(directory), sim.events)
    return len(sim.events)


def run(store_path: Path, events: Path, crash_at: int | None = None, before: bool = True
        ) -> None:
    """One ``--once`` run; ``crash_at``: raise at that batch write of this run (1-based)."""
    text = PROGRAM.read_text(encoding="utf-8")
    plan = plan_program(parse_program(text, str(PROGRAM)))
    store = open_store(str(store_path))
    try:
        check_program(store, PROGRAM.name, text)
        if crash_at is not None:
            write, calls = store.write_batch, [0]

            def crashing(rec):
                calls[0] += 1
                if before and calls[0] == crash_at:
                    raise Crash
                done = write(rec)
                if not before and calls[0] == crash_at:
                    raise Crash
                return done

            store.write_batch = crashing  # type: ignore[method-assign]
        run_pipeline(plan, store, RunOptions(store=str(store_path), events_dir=str(events),
                                             once=True))
    finally:
        store.close()


def state(store_path: Path) -> dict:
    out = summary(store_path)
    with open_store(str(store_path), read_only=True) as s:
        batches = s.batches()
        out["batches"] = [(b.batch_id, b.time, b.n_events) for b in batches]
        out["clock"] = batches[-1].stats["clock"]
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, dict]:
    d = tmp_path_factory.mktemp("ref")
    make_log(d / "events")
    run(d / "ref.db", d / "events")
    return d / "events", state(d / "ref.db")


def test_the_reference_run_exercises_expiry_and_refloods(reference) -> None:
    _, ref = reference
    assert len(ref["batches"]) >= 8 and ref["batches"][-1][2] == 0  # the horizon batch
    ops = {(op, fact.split("(")[0]) for _, _, op, fact in ref["changes"]}
    assert {("+", "tLink"), ("-", "tLink"), ("+", "tLSU"), ("-", "tLSU")} <= ops
    assert ref["clock"]["reactive"]["fired"]["periodic"] > 0


@pytest.mark.parametrize("before", [True, False], ids=["before-commit", "after-commit"])
@pytest.mark.parametrize("where", ["first", "middle", "last-events", "horizon"])
def test_a_crash_and_restart_leave_the_uninterrupted_store(
        reference, tmp_path: Path, where: str, before: bool) -> None:
    events, ref = reference
    n = len(ref["batches"])
    k = {"first": 1, "middle": n // 2, "last-events": n - 1, "horizon": n}[where]
    store = tmp_path / "crashed.db"
    with pytest.raises(Crash):
        run(store, events, crash_at=k, before=before)
    run(store, events)
    got = state(store)
    for part in ("batches", "views", "changes", "alerts", "clock"):
        assert got[part] == ref[part], part
