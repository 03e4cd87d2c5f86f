"""``netrules run --engine spark --state spark``: the live pipeline with its views kept in Spark
executors (local[2] here; tests/cluster runs it on a standalone cluster). The store it writes
and the alerts it raises equal the in-process run's, a restart rebuilds the regions from the
store, each batch is one Spark job, and ``why`` still ends at base facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from netrules import programs
from netrules.cli import main
from netrules.errors import EngineError
from netrules.eventlog import EventLog
from netrules.pipeline import RunOptions, check_program, run_pipeline
from netrules.pipeline.batch import engine_factory
from netrules.pipeline.sources import append_new
from netrules.plan import plan_program
from netrules.store import open_store
from netrules.store.queries import why
from tests.pipeline.test_pipeline import failed_line


def alerts_of(store: Path) -> list[tuple]:
    """Every alert as what it says and when: comparable across runs."""
    with open_store(str(store), read_only=True) as s:
        return sorted((a.kind, a.dedup_key, a.state, a.raised_batch, a.cleared_batch,
                       tuple(sorted(e.id for e in a.trigger_events))) for a in s.alerts())


def _run(program: str, tmp: Path, engine: str, state: str) -> tuple[Path, list]:
    """line:5, link n2-n3 fails, then (after a restart, so the engine is rebuilt from the
    store) recovers. Returns the store and the batch records."""
    plan = plan_program(programs.load(program))
    events, db, _, recover = failed_line(tmp)
    records: list = []
    for part in ([], recover):
        append_new(EventLog(events), part)
        with open_store(str(db)) as store:
            check_program(store, program, str(plan.program))
            opts = RunOptions(store=str(db), events_dir=str(events), once=True,
                              engine=engine, state=state)
            run_pipeline(plan, store, opts, on_batch=lambda r, _w: records.append(r))
    return db, records


@pytest.mark.spark
@pytest.mark.parametrize("program", ["reachability", "best_routes"])
def test_state_spark_run_equals_in_process(spark, tmp_path: Path, program: str) -> None:
    (tmp_path / "ref").mkdir()
    (tmp_path / "res").mkdir()
    ref, _ = _run(program, tmp_path / "ref", "reference", "driver")
    res, records = _run(program, tmp_path / "res", "spark", "spark")
    with open_store(str(ref), read_only=True) as a, open_store(str(res), read_only=True) as b:
        assert a.snapshot() == b.snapshot()
        assert [c[:2] + c[3:] for c in a.changes()] == [c[:2] + c[3:] for c in b.changes()]
    alerts = alerts_of(res)
    assert alerts == alerts_of(ref)
    assert any(a[2] == "cleared" for a in alerts)  # raised by the failure, cleared after
    assert [r.batch_id for r in records] == [0, 1, 2]
    # one gang job per batch: the rounds swap outboxes through the relay, not through jobs
    assert [r.stats["spark_jobs"] for r in records] == [1, 1, 1]
    # derivations come from the supports each batch reported; a fact of a counting stage
    # (route, recursive through a_MIN) keeps counts, not supports: its tree stops there
    ends = {"link"} if program == "reachability" else {"link", "route"}
    with open_store(str(res), read_only=True) as s:
        rel = "reachable" if program == "reachability" else "bestPath"
        for f in s.read_view(rel):
            assert {x.relation for x in why(s, f).leaves()} <= ends, f


def test_state_spark_needs_the_spark_engine(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="--state spark .* needs --engine spark"):
        engine_factory("reference", "auto", state="spark")
    with pytest.raises(EngineError, match="--strategy dred needs --state driver"):
        engine_factory("spark", "dred", state="spark")
    with pytest.raises(EngineError, match="unknown --state 'disk'"):
        engine_factory("spark", "auto", state="disk")
    r = CliRunner().invoke(main, ["run", "reachability", "--simulate", "line:3", "--once",
                                  "--store", str(tmp_path / "s.db"),
                                  "--events-dir", str(tmp_path / "ev"), "--state", "spark"])
    assert r.exit_code != 0
    assert "--state spark" in r.output and "--engine spark" in r.output
