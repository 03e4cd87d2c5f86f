"""Views kept in Spark (``--state spark``): the regional algorithm of test_regional, now with
every region's state in Spark executors, rebuilt from snapshot + log whenever a worker's copy is
stale. A smaller Spark-backed share of the differential cases, plus the CLI and the costs."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.cli import main
from netrules.engine.reference import evaluate_program
from netrules.engine.spark.resident import ResidentEngine
from netrules.errors import EngineError
from netrules.facts import Fact
from netrules.plan import plan_program
from tests.engine.test_differential import link_stream


def _sets(views: dict) -> dict:
    return {r: {f.args for f in fs} for r, fs in views.items() if fs}


@settings(max_examples=5, deadline=None)
@given(link_stream(), st.integers(2, 4), st.integers(0, 2**16))
def test_resident_equals_reference(spark, stream, parts, seed) -> None:
    plan = plan_program(programs.load("reachability"))
    initial, batches = stream
    eng = ResidentEngine(plan, initial, spark=spark, parts=parts, rng=random.Random(seed))
    balance = Counter({f: 1 for f in initial})
    assert _sets(eng.views()) == _sets(evaluate_program(plan, set(initial)))
    for batch in batches:
        eng.apply(batch)
        for sign, f in batch:
            balance[f] += 1 if sign == "+" else -1
        want = evaluate_program(plan, {f for f, n in balance.items() if n > 0})
        assert _sets(eng.views()) == _sets(want), batch


@pytest.mark.parametrize("min_log,reuse", [(0, True), (10**9, False)])
def test_state_survives_compaction_and_cold_workers(spark, min_log, reuse) -> None:
    """Compacting after every round, or never reusing a worker's copy (every round rebuilt
    from snapshot and log): the views still come out exact."""
    plan = plan_program(programs.load("reachability"))
    n = 7
    links = [Fact("link", (f"n{i}", f"n{(i + d) % n}", 1)) for i in range(n) for d in (1, -1)]
    eng = ResidentEngine(plan, links, spark=spark, parts=3, min_log=min_log, reuse=reuse)
    base = set(links)
    decoded = eng.regions.decodes.value
    for i in (0, 3, 5):
        eng.apply([("-", links[2 * i])])
        base.discard(links[2 * i])
        assert _sets(eng.views())["reachable"] == {
            f.args for f in evaluate_program(plan, base)["reachable"]}
    if not reuse:  # every round that ran a region decoded its snapshot
        assert eng.regions.decodes.value - decoded >= 3
    else:  # a worker decodes a region once, then keeps up from the chunks (2 workers here)
        assert eng.regions.decodes.value <= 4 * 3


def test_costs_one_job_per_round(spark) -> None:
    plan = plan_program(programs.load("reachability"))
    links = [Fact("link", (a, b, 1)) for a, b in [("a", "b"), ("b", "a"), ("b", "c")]]
    eng = ResidentEngine(plan, links, spark=spark, parts=2)
    d = eng.apply([("-", Fact("link", ("b", "c", 1)))])
    assert d.removed["reachable"] == {("a", "c"), ("b", "c")}
    assert d.stats.rounds >= 3  # kill, rederive, insert at least
    assert d.stats.spark_jobs == d.stats.rounds
    # the last round's output is checkpointed: lineage does not grow, the round before is freed
    assert eng.regions._persisted._jrdd.rdd().isCheckpointed()


def test_refuses_aggregates(spark) -> None:
    with pytest.raises(EngineError, match="positive programs only"):
        ResidentEngine(plan_program(programs.load("best_routes")), spark=spark)


def test_cli_eval_state_spark_equals_reference(spark, tmp_path) -> None:
    f = tmp_path / "f.facts"
    f.write_text("link(@a,b,1).\nlink(@b,a,1).\nlink(@b,c,2).\nlink(@c,d,1).\n")
    u = tmp_path / "u.upd"
    u.write_text("-link(@b,c,2).\n---\n+link(@b,c,2).\n-link(@c,d,1).\n+link(@d,a,3).\n"
                 "---\n-link(@a,b,1).\n")
    outs = []
    for extra in (["--engine", "reference"], ["--engine", "spark", "--state", "spark"]):
        r = CliRunner().invoke(main, ["eval", "reachability", "--facts", str(f), "--updates",
                                      str(u), "--json", "--shuffle", "5", *extra])
        assert r.exit_code == 0, r.output
        outs.append(json.loads(r.output))
    assert outs[0] == outs[1]
    assert len(outs[0]) == 3  # one object per batch
