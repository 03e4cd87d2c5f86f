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
from netrules.engine.spark.resident import ResidentEngine, _assign
from netrules.errors import EngineError, EvalError
from netrules.facts import Fact
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.engine.test_differential import Present, assert_dense, cycles_cut, cyclic_link_stream
from tests.meaning import evaluate_program


def _sets(views: dict) -> dict:
    return {r: {f.args for f in fs} for r, fs in views.items() if fs}


@settings(max_examples=4, deadline=None)
@given(stream=cyclic_link_stream(), parts=st.integers(2, 4), seed=st.integers(0, 2**16))
def _resident_equals_reference(spark, gang, name, tally, stream, parts, seed) -> None:
    plan = plan_program(programs.load(name))
    initial, batches = stream
    eng = ResidentEngine(plan, initial, spark=spark, parts=parts, rng=random.Random(seed),
                         gang=gang)
    present = Present(plan, initial)
    assert _sets(eng.views()) == _sets(evaluate_program(plan, present.facts()))
    cuts = 0
    for i, batch in enumerate(batches):
        before = present.facts()
        eng.apply(batch)
        present.apply(batch)
        cuts += cycles_cut(before, present.facts())
        want = evaluate_program(plan, present.facts())
        assert _sets(eng.views()) == _sets(want), (i, batch)
    tally[cuts > 0] += 1


@pytest.mark.parametrize("name", ["reachability", "best_routes"])
@pytest.mark.parametrize("gang", [True, False])
def test_resident_equals_reference(spark, gang, name) -> None:
    """Both ways of running rounds: a gang job per batch (tasks swap outboxes through the
    relay) and a job per round; a positive program and one recursive through a_MIN; views in
    executors compared after every batch, and every run cuts a cycle of links."""
    tally: Counter = Counter()
    _resident_equals_reference(spark, gang, name, tally)
    assert_dense(tally, 0.75, "a deletion that cut a cycle")


@pytest.mark.parametrize("gang", [True, False])
@pytest.mark.parametrize("min_log,reuse", [(0, True), (10**9, False)])
def test_state_survives_compaction_and_cold_workers(spark, min_log, reuse, gang) -> None:
    """Compacting after every round, or never reusing a worker's copy (every round rebuilt
    from snapshot and log): the views still come out exact."""
    plan = plan_program(programs.load("reachability"))
    n = 7
    links = [Fact("link", (f"n{i}", f"n{(i + d) % n}", 1)) for i in range(n) for d in (1, -1)]
    eng = ResidentEngine(plan, links, spark=spark, parts=3, min_log=min_log, reuse=reuse,
                         gang=gang)
    base = set(links)
    decoded = eng.regions.decodes.value
    for i in (0, 3, 5):
        eng.apply([("-", links[2 * i])])
        base.discard(links[2 * i])
        assert _sets(eng.views())["reachable"] == {
            f.args for f in evaluate_program(plan, base)["reachable"]}
    if not reuse:  # every round that ran a region decoded its snapshot
        assert eng.regions.decodes.value - decoded >= 3
    elif gang:  # each region runs where a worker holds it: decoded once, when first opened
        assert eng.regions.decodes.value <= 3
    else:  # a worker decodes a region once, then keeps up from the chunks (2 workers here)
        assert eng.regions.decodes.value <= 4 * 3


@pytest.mark.parametrize("min_log,reuse", [(0, True), (10**9, False)])
def test_counted_state_survives_compaction_and_cold_workers(spark, min_log, reuse) -> None:
    """Best routes (counts, aggregate groups, overdeletion marks in the snapshots and the
    log): compacted after every round, or rebuilt every round, still exact."""
    plan = plan_program(programs.load("best_routes"))
    n = 6
    links = [Fact("link", (f"n{i}", f"n{(i + d) % n}", 1 + i % 2)) for i in range(n)
             for d in (1, -1)]
    eng = ResidentEngine(plan, links, spark=spark, parts=3, min_log=min_log, reuse=reuse)
    base = set(links)
    for batch in ([("-", links[0])], [("-", links[5]), ("+", links[0])], [("-", links[7])]):
        eng.apply(batch)
        for sign, f in batch:
            (base.add if sign == "+" else base.discard)(f)
        assert _sets(eng.views()) == _sets(evaluate_program(plan, base)), batch


@pytest.mark.parametrize("gang", [True, False])
def test_costs_one_job_per_batch_or_round(spark, gang) -> None:
    plan = plan_program(programs.load("reachability"))
    links = [Fact("link", (a, b, 1)) for a, b in [("a", "b"), ("b", "a"), ("b", "c")]]
    eng = ResidentEngine(plan, links, spark=spark, parts=2, gang=gang)
    d = eng.apply([("-", Fact("link", ("b", "c", 1)))])
    assert d.removed["reachable"] == {("a", "c"), ("b", "c")}
    assert d.stats.strategy == "columnar (regions)"  # regions hold columns, blobs cross
    assert d.stats.rounds >= 3  # kill, rederive, insert at least
    assert d.stats.spark_jobs == (1 if gang else d.stats.rounds)
    # the last round's output is checkpointed: lineage does not grow, the round before is freed
    assert eng.regions._persisted._jrdd.rdd().isCheckpointed()


@pytest.mark.parametrize("gang", [True, False])
def test_columns_and_facts_in_executors_agree(spark, gang) -> None:
    """The same batches on regions held as columns and as facts (``columnar=False``): the
    same deltas, one job per batch either way (gang)."""
    plan = plan_program(programs.load("reachability"))
    n = 6
    links = [Fact("link", (f"n{i}", f"n{(i + d) % n}", 1)) for i in range(n) for d in (1, 2)]
    engines = [ResidentEngine(plan, links, spark=spark, parts=3, gang=gang, columnar=c)
               for c in (True, False)]
    assert [e.loaded.stats.strategy for e in engines] == ["columnar (regions)",
                                                          "psn (regions)"]
    for batch in ([("-", links[0]), ("-", links[5])], [("+", links[0])], [("-", links[7])]):
        col, fact = (e.apply(batch) for e in engines)
        assert (col.added, col.removed) == (fact.added, fact.removed), batch
        if gang:
            assert col.stats.spark_jobs == fact.stats.spark_jobs == 1
    assert _sets(engines[0].views()) == _sets(engines[1].views())


PATHS = """
p1 path(@S,D,P,C) :- link(@S,D,C), P := f_concat(S, D).
p2 path(@S,D,P,C) :- link(@S,Z,C1), path(@Z,D,P2,C2), f_member(P2, S) == 0,
                     C := C1 + C2, P := f_concat(S, P2).
"""


def test_failed_batch_changes_nothing(spark) -> None:
    """A fact that makes a builtin fail inside a gang's round: the error names the rule, and
    neither the regions nor the ledger keep any of the batch; the next batch is exact."""
    plan = plan_program(parse_program(PATHS))
    links = [Fact("link", (a, b, 1)) for a, b in [("a", "b"), ("b", "c"), ("c", "d")]]
    eng = ResidentEngine(plan, links, spark=spark, parts=2)
    before, ledger = eng.views(), eng.ledger.snapshot()
    bad = Fact("link", ("d", "e", "x"))
    with pytest.raises(EvalError, match=r"<program>:3:1: '\+' expects a number.*not applied"):
        eng.apply([("-", links[0]), ("+", bad)])
    assert eng.views() == before
    assert eng.ledger.snapshot() == ledger
    eng.apply([("-", links[0])])
    assert _sets(eng.views()) == _sets(evaluate_program(plan, set(links[1:])))


def test_regions_run_where_a_worker_holds_them() -> None:
    """The gang's assignment: a holder with a copy it can bring up to date wins (the least
    loaded holder); a copy from another history does not count; else the record's task."""
    def rec(g, stamps):
        return (g, [f"s{g}"], stamps[0], [(s, b"") for s in stamps[1:]], 0)

    a, b, c, x = (0, "a"), (1, "b"), (2, "c"), (2, "x")
    tables = [({0: rec(0, [a, b]), 1: rec(1, [a, b, c])}, {2: b, 3: a}),  # task 0
              ({2: rec(2, [a]), 3: rec(3, [a, b])}, {0: b, 1: x})]  # task 1
    owner = _assign(tables)
    assert owner[0] == 1  # task 1's worker holds region 0 at its last stamp
    assert owner[1] == 0  # task 1's copy of region 1 is from another history: home task
    assert owner[2] == 1  # task 0's worker holds region 2 at a stamp its record no longer has
    assert owner[3] == 0  # task 0's worker holds region 3 at its snapshot


def test_a_worker_drops_the_copies_of_engines_long_gone() -> None:
    from netrules.engine.regional.state import RegionState
    from netrules.engine.spark import resident

    eids = [f"test-engine-{i}" for i in range(resident.HELD_ENGINES + 2)]
    for eid in eids:
        for g in range(2):
            resident._keep(eid, g, (1, "x"), RegionState(g, 2))
    resident._keep(eids[0], 0, (2, "y"), RegionState(0, 2))  # used again: most recent
    held = {e for e, _g in resident._HELD}
    assert eids[0] in held and eids[1] not in held and eids[2] not in held
    assert set(eids[3:]) <= held
    assert sum(e in eids for e in resident._ENGINES) == resident.HELD_ENGINES
    for eid in eids:  # leave the module as it was
        resident._ENGINES.pop(eid, None)
        for g in range(2):
            resident._HELD.pop((eid, g), None)


def test_refuses_recursion_beside_negation(spark) -> None:
    text = "p(@X,Y) :- e(@X,Y).\np(@X,Y) :- e(@X,Z), p(@Z,Y), not f(@X,Y)."
    with pytest.raises(EngineError, match="recurse beside negation"):
        ResidentEngine(plan_program(parse_program(text)), spark=spark)


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
