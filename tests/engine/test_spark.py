"""The Spark backends against the reference: the partitioned many-hops-per-job evaluator and the
Spark-mirrored engine (the Spark-backed share of the differential suite)."""

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
from netrules.engine.spark.engine import SparkEngine
from netrules.engine.spark.fixpoint import (
    decode_args,
    decode_many,
    encode_args,
    encode_many,
    frame_facts,
    murmur3_int,
    region_key,
    spark_evaluate,
)
from netrules.errors import EngineError
from netrules.facts import Fact, value_to_json
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.meaning import evaluate_program

pytestmark = pytest.mark.spark

# reuse the differential suite's generators
from tests.engine.test_differential import (  # noqa: E402
    NODES,
    Present,
    assert_dense,
    base_fact,
    cycles_cut,
    cyclic_link_stream,
    random_program,
    stamp,
    update_stream,
)


def as_sets(views) -> dict[str, set]:
    return {r: {f.args for f in fs} for r, fs in views.items() if fs}


def spark_sets(df, plan) -> dict[str, set]:
    out: dict[str, set] = {}
    for f in frame_facts(df, plan):
        out.setdefault(f.relation, set()).add(f.args)
    return out


@st.composite
def e_cycle(draw: st.DrawFn) -> list[Fact]:
    """A cycle of e over 2-4 of the nodes, so that deletions have cycles to cut."""
    nodes = draw(st.lists(st.sampled_from(NODES), min_size=2, max_size=4, unique=True))
    return [base_fact("e", a, b) for a, b in zip(nodes, nodes[1:] + nodes[:1], strict=True)]


def run_on_spark(spark, plan, initial, batches, seed: int, relation: str,
                 ends: tuple[int, int] = (0, 1)) -> int:
    """The driver-state engine (``SparkEngine``) takes the stream batch by batch: its views
    and its Spark mirror (collected: a real Spark job) must equal the reference and the
    oracle after every batch; then the partitioned evaluator runs from scratch on the final
    facts. Returns how many deletions cut a cycle of ``relation``."""
    eng = SparkEngine(plan, spark=spark, rng=random.Random(seed), checkpoint_every=2)
    eng.load(initial)
    present = Present(plan, initial)
    want = as_sets(evaluate_program(plan, present.facts()))
    assert as_sets(eng.views()) == want
    cuts = 0
    for i, batch in enumerate(batches):
        before = present.facts()
        eng.apply(batch)
        present.apply(batch)
        cuts += cycles_cut(before, present.facts(), relation, ends)
        want = as_sets(evaluate_program(plan, present.facts()))
        assert as_sets(eng.views()) == want, f"batch {i}: driver state"
        assert spark_sets(eng.views_frame(), plan) == want, f"batch {i}: Spark mirror"
    df, _ = spark_evaluate(spark, plan, sorted(present.facts(), key=Fact.key), parts=3)
    assert spark_sets(df, plan) == want, "from scratch after the batches"
    return cuts


@settings(max_examples=4, deadline=None)
@given(random_program(), e_cycle(), update_stream(), st.data(), st.integers(0, 2**16))
def _random_programs(spark, tally, text, cycle, stream, data, seed) -> None:
    plan = plan_program(parse_program(text))
    initial, batches = stream
    initial = list(dict.fromkeys([*cycle, *initial]))
    cut, at = data.draw(st.sampled_from(cycle)), data.draw(st.integers(0, len(batches) - 1))
    batches = stamp([[("-", cut), *(u[:2] for u in b)] if i == at else [u[:2] for u in b]
                     for i, b in enumerate(batches)])
    tally[run_on_spark(spark, plan, initial, batches, seed, "e") > 0] += 1


def test_spark_random_programs_batch_by_batch(spark) -> None:
    tally: Counter = Counter()
    _random_programs(spark, tally)
    assert_dense(tally, 0.75, "a deletion that cut a cycle of e")


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(["reachability", "path_vector", "routing_loop", "best_routes"]),
       cyclic_link_stream(), st.integers(0, 2**16))
def _network_programs(spark, tally, name, stream, seed) -> None:
    plan = plan_program(programs.load(name))
    initial, batches = stream
    relation, ends = "link", (0, 1)
    if name == "routing_loop":
        def hop(f: Fact) -> Fact:
            return Fact("nexthop", (f.args[0], "d", f.args[1]))
        initial = [hop(f) for f in initial]
        batches = [[(u[0], hop(u[1]), *u[2:]) for u in b] for b in batches]
        relation, ends = "nexthop", (0, 2)
    tally[run_on_spark(spark, plan, initial, batches, seed, relation, ends) > 0] += 1


def test_spark_network_programs_batch_by_batch(spark) -> None:
    tally: Counter = Counter()
    _network_programs(spark, tally)
    assert_dense(tally, 0.75, "a deletion that cut a cycle")


def test_many_hops_per_round(spark) -> None:
    """A 40-hop line closes in far fewer rounds than hops (4 regions)."""
    plan = plan_program(programs.load("reachability"))
    line = [Fact("link", (f"n{i}", f"n{i + 1}", 1)) for i in range(40)]
    df, stats = spark_evaluate(spark, plan, line, parts=4)
    assert len(spark_sets(df, plan)["reachable"]) == 40 * 41 // 2
    assert stats.rounds < 40 / 2
    assert stats.spark_jobs > 0


def test_spark_engine_batches_equal_reference(spark) -> None:
    plan = plan_program(programs.load("reachability"))
    rng = random.Random(7)
    nodes = [f"n{i}" for i in range(8)]
    links = {Fact("link", (a, b, 1)) for a in nodes for b in nodes if a != b and
             rng.random() < 0.2}
    engine = SparkEngine(plan, spark=spark, checkpoint_every=3)
    engine.load(sorted(links, key=Fact.key))
    present = set(links)
    for step in range(6):
        batch = []
        for f in rng.sample(sorted(present, key=Fact.key), 2):
            batch.append(("-", f))
            present.discard(f)
        new = Fact("link", tuple(rng.sample(nodes, 2)) + (1,))
        if new not in present:
            batch.append(("+", new))
            present.add(new)
        delta = engine.apply(batch)
        assert delta.stats.spark_jobs <= 1, step
        assert as_sets(engine.views()) == as_sets(evaluate_program(plan, present))
    assert spark_sets(engine.views_frame(), plan) == as_sets(engine.views())
    assert engine.audit() == []


def test_lost_route_on_spark(spark) -> None:
    plan = plan_program(programs.load("reachability"))
    engine = SparkEngine(plan, spark=spark)
    links = [Fact("link", x) for x in [("a", "b", 1), ("b", "a", 1), ("b", "c", 1)]]
    engine.load(links)
    delta = engine.apply([("-", links[2])])
    assert delta.removed["reachable"] == {("a", "c"), ("b", "c")}


def test_spark_refuses_remote_aggregate_head(spark) -> None:
    plan = plan_program(parse_program("indeg(@D, a_COUNT<*>) :- link(@S,D,C)."))
    with pytest.raises(EngineError, match="aggregates where their body"):
        SparkEngine(plan, spark=spark)


def test_cli_eval_spark_equals_reference(spark, tmp_path) -> None:
    f = tmp_path / "f.facts"
    f.write_text("link(@a,b,1).\nlink(@b,a,1).\nlink(@b,c,2).\nlink(@c,d,1).\n")
    u = tmp_path / "u.upd"
    u.write_text("-link(@b,c,2).\n---\n+link(@b,c,2).\n-link(@c,d,1).\n+link(@d,a,3).\n")
    outs = []
    for engine in ("reference", "spark"):
        r = CliRunner().invoke(main, ["eval", "path_vector", "--facts", str(f), "--updates",
                                      str(u), "--engine", engine, "--json", "--shuffle", "3"])
        assert r.exit_code == 0, r.output
        outs.append(json.loads(r.output))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("seed", range(2))
def test_spark_evaluator_best_routes(spark, seed: int) -> None:
    """Recursion through a_MIN on Spark: regions exchange contributions until none changes;
    the result is the reference's Jacobi fixpoint, on graphs spread over 3 regions."""
    import networkx as nx

    plan = plan_program(programs.load("best_routes"))
    rng = random.Random(seed)
    g = nx.connected_watts_strogatz_graph(14, 4, 0.3, seed=seed).to_directed()
    links = [Fact("link", (f"n{u}", f"n{v}", rng.randint(1, 4))) for u, v in g.edges]
    df, stats = spark_evaluate(spark, plan, links, parts=3)
    assert spark_sets(df, plan) == as_sets(evaluate_program(plan, links))
    assert stats.rounds < 30


_VALUES = st.recursive(
    st.one_of(st.text(max_size=6), st.integers(-2**40, 2**40), st.booleans(),
              st.floats(allow_nan=False), st.sampled_from(["[", "true", "null", "{", ",\"]"])),
    lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_VALUES, max_size=4).map(tuple), max_size=8))
def test_codec_is_the_json_form(rows) -> None:
    """One encoder for every call, and one encoding cut into rows, give the text json.dumps
    of value_to_json gave; a column decoded at once equals each row decoded alone (bools come
    back as ints, lists as tuples), whichever path the text takes."""
    texts = [encode_args(r) for r in rows]
    assert texts == encode_many(rows) == [
        json.dumps([value_to_json(a) for a in r], separators=(",", ":")) for r in rows]
    assert decode_many(texts) == [decode_args(t) for t in texts] == [_plain(r) for r in rows]


def _plain(v):
    return tuple(map(_plain, v)) if isinstance(v, tuple) else int(v) if isinstance(v, bool) \
        else v


def test_one_job_per_round(spark) -> None:
    """A round's job fills its lazy checkpoint: the next round and later reads of the result
    run nothing again (each region's round runs once)."""
    plan = plan_program(programs.load("reachability"))
    line = [Fact("link", (f"n{i}", f"n{i + 1}", 1)) for i in range(20)]
    df, stats = spark_evaluate(spark, plan, line, parts=4)
    assert stats.spark_jobs == stats.rounds
    assert df.count() == 20 + 20 + 20 * 21 // 2  # link, linkD, reachable
    plan = plan_program(programs.load("best_routes"))
    df, stats = spark_evaluate(spark, plan, line, parts=3)
    assert stats.spark_jobs == stats.rounds


def test_non_recursive_strata_are_taken_in_by_the_next(spark) -> None:
    """Messages of a non-recursive stratum reach their region in the next stratum's first
    round, which negation and aggregates there read complete."""
    plan = plan_program(parse_program("""
        a1 hop(@D,S) :- link(@S,D,C).
        a2 fanin(@D, a_COUNT<*>) :- hop(@D,S).
        a3 oneway(@S,D) :- link(@S,D,C), not hop(@S,D).
        a4 far(@S,D) :- link(@S,D,C), fanin(@D,N), N > 1."""))
    rng = random.Random(3)
    links = [Fact("link", (f"n{rng.randrange(12)}", f"n{rng.randrange(12)}", 1))
             for _ in range(30)]
    df, stats = spark_evaluate(spark, plan, links, parts=3)
    assert spark_sets(df, plan) == as_sets(evaluate_program(plan, links))
    assert stats.rounds <= len(plan.strata) + 1


def test_regions_get_their_own_shuffle_partition(spark) -> None:
    """Grouped by (region_key, part), region p runs in shuffle partition p mod the tasks
    that run at once; the key follows Spark's own hash."""
    from pyspark import TaskContext
    from pyspark.sql import functions as F

    pairs = [(a, b) for a in range(-3, 40, 7) for b in (-(2**31), -5, 0, 9, 2**31 - 1)]
    got = spark.createDataFrame(pairs, "a int, b int").select(F.hash("a", "b")).collect()
    assert [r[0] for r in got] == [murmur3_int(b, murmur3_int(a, 42)) for a, b in pairs]

    def where(pdf):
        return pdf.head(1).assign(args=str(TaskContext.get().partitionId()))

    slots = int(spark.conf.get("spark.sql.shuffle.partitions"))
    for parts, tasks in ((2, 2), (4, 2), (4, 4), (6, 4)):
        df = spark.createDataFrame([(i % parts, "r", "[]", False) for i in range(24)],
                                   "part int, rel string, args string, new boolean")
        out = df.groupBy(region_key(parts, slots, tasks), "part").applyInPandas(where,
                                                                                df.schema)
        assert {r["part"]: int(r["args"]) for r in out.collect()} == \
            {p: p % min(slots, tasks) for p in range(parts)}
