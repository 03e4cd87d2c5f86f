"""From-scratch evaluation on Spark in columns: the Arrow codec, the blobs regions exchange,
and the regions' rounds (run in-process here, on Spark in test_spark.py) against the
reference evaluator."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.engine.columnar.values import Values
from netrules.engine.spark import per_fact
from netrules.engine.spark.columns import distinct, ids_of, table_of, table_of_tuples, tuples_of
from netrules.engine.spark.fixpoint import (
    SparkRunStats,
    _absorbed,
    _facts_table,
    _stratum_round,
    frame_width,
    spark_evaluate,
)
from netrules.engine.spark.iterated import finish_facts
from netrules.engine.spark.packed import packed_round, packed_table, unpack
from netrules.engine.spark.partition import PartitionMap
from netrules.facts import Fact
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.engine.test_differential import random_program, update_stream
from tests.meaning import evaluate_program

_VALUES = st.recursive(
    st.one_of(st.text(max_size=6), st.integers(-2**70, 2**70), st.booleans(),
              st.floats(allow_nan=False), st.sampled_from(["[", "true", "", "{"])),
    lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)


def _canonical(v):
    if isinstance(v, tuple):
        return tuple(map(_canonical, v))
    if isinstance(v, bool) or (isinstance(v, float) and v.is_integer()):
        return int(v)
    return v


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_VALUES, max_size=4).map(tuple), max_size=8))
def test_columns_keep_every_value(rows) -> None:
    """Python values -> columns -> Python values, and columns -> a region's ids -> columns,
    give the values back (bools as ints, integral floats as ints, as Values has them)."""
    want = [tuple(map(_canonical, r)) for r in rows]
    n = len(rows)
    table = table_of_tuples([0] * n, ["r"] * n, rows, [False] * n, 4)
    assert tuples_of(table, 4) == want
    values = Values()
    ids = np.stack([ids_of(values, table, i) for i in range(4)], axis=1)
    again = table_of(values, np.zeros(n, np.int32), "r", False, ids, 4)
    assert tuples_of(again, 4) == want


def test_lists_of_strings_are_arrow_lists() -> None:
    table = table_of_tuples([0, 1], ["route", "route"], [("a", ("a", "b")), ("b", (1, "c"))],
                            [False, True], 2)
    assert table.column("l1").to_pylist() == [["a", "b"], None]
    assert table.column("j1").to_pylist() == [None, '[1,"c"]']


def test_blobs_group_by_destination() -> None:
    rows = [(f"n{i}", i) for i in range(10)]
    table = table_of_tuples([i % 3 for i in range(10)], ["r"] * 10, rows,
                            [i % 2 == 0 for i in range(10)], 2)
    blobs = packed_table(table)
    assert sorted(zip(blobs.column("part").to_pylist(), blobs.column("new").to_pylist(),
                      strict=True)) == sorted({(i % 3, i % 2 == 0) for i in range(10)})
    assert sorted(tuples_of(unpack(blobs.column("facts").to_pylist(), 2), 2)) == sorted(rows)


def test_distinct_keeps_the_first_of_repeats() -> None:
    table = table_of_tuples([0, 0, 1, 0], ["r", "r", "r", "s"], [("a",), ("a",), ("a",), ("a",)],
                            [False, True, False, False], 1)
    got = distinct(table, 1)
    assert got.num_rows == 3 and got.column("new").to_pylist() == [False, False, False]


def in_process(plan, facts: list[Fact], parts: int) -> tuple[set, SparkRunStats]:
    """spark_evaluate's rounds without Spark: the same round functions over the same blobs,
    each region's group handed to the function in turn."""
    facts = list(dict.fromkeys([*plan.program.facts, *facts]))
    pmap = PartitionMap.from_facts(facts, parts)
    width, stats = frame_width(plan, facts), SparkRunStats()
    state = packed_table(_facts_table(plan, facts, pmap, width))

    def by_region(fn) -> pa.Table:
        part = state.column("part").to_numpy()
        outs = [fn(state.filter(pa.array(part == p))) for p in np.unique(part)]
        return pa.concat_tables(outs) if outs else state

    for k, stratum in enumerate(plan.strata):
        after = plan.strata[k + 1] if k + 1 < len(plan.strata) else None
        first = True
        while True:
            stats.rounds += 1
            state = by_region(packed_round(
                _stratum_round(plan, stratum, pmap, first, width, stats), width))
            new = state.column("new").to_numpy(zero_copy_only=False)
            pending = int(state.column("n").to_numpy()[new].sum())
            first = False
            if pending == 0 or _absorbed(stratum, after):
                break
        if stratum.iterated:
            state = by_region(packed_round(lambda t: finish_facts(t, width), width))
    table = unpack(state.column("facts").to_pylist(), width)
    rels = table.column("rel").to_pylist()
    assert not pc.any(table.column("new")).as_py()
    return set(zip(rels, tuples_of(table, width), strict=True)), stats


def _want(plan, facts) -> set:
    return {(r, f.args) for r, fs in evaluate_program(plan, facts).items() for f in fs}


NEGATION_AND_AGGREGATES = """
    a1 hop(@D,S) :- link(@S,D,C).
    a2 fanin(@D, a_COUNT<*>) :- hop(@D,S).
    a3 oneway(@S,D) :- link(@S,D,C), not hop(@S,D).
    a4 far(@S,D) :- link(@S,D,C), fanin(@D,N), N > 1.
    a5 reach(@S,D) :- oneway(@S,D).
    a6 reach(@S,D) :- link(@S,Z,C), reach(@Z,D).
    a7 low(@S, a_MIN<C>) :- link(@S,D,C)."""


def _program_and_links(name: str, seed: int) -> tuple:
    """A shipped program (or one written inline) and a random weighted graph of 9 nodes."""
    program = programs.load(name) if "(" not in name else parse_program(name)
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(9)]
    links = sorted({Fact("link", (a, b, rng.randint(1, 3))) for a in nodes for b in nodes
                    if a != b and rng.random() < 0.25}, key=Fact.key)
    return plan_program(program), links


@pytest.mark.parametrize("name", ["reachability", "path_vector", "best_routes", "min_cost",
                                  NEGATION_AND_AGGREGATES])
@pytest.mark.parametrize("seed", range(3))
def test_regions_in_columns_equal_the_reference(name: str, seed: int) -> None:
    """Every stratum runs in columns, recursion through an aggregate included, and the
    regions' fixpoint is the reference's, over 1-4 regions."""
    plan, links = _program_and_links(name, seed)
    for parts in (1, 2, 4):
        got, stats = in_process(plan, links, parts)
        assert got == _want(plan, links), (name, parts)
        assert stats.per_fact == {}


@pytest.mark.parametrize("name", ["reachability", "best_routes", "min_cost",
                                  NEGATION_AND_AGGREGATES])
@pytest.mark.parametrize("seed", range(3))
def test_the_crossover_mixes_paths_and_changes_nothing(name: str, seed: int,
                                                       monkeypatch) -> None:
    """As on a cold worker (kernels not loaded), with the size threshold inside the regions'
    range: small regions' rounds run per fact, larger ones in columns, region by region and
    round by round, and the fixpoint is still the reference's."""
    plan, links = _program_and_links(name, seed)
    real = per_fact.per_fact_now
    rows_seen: list[int] = []
    chose: list[bool] = []

    def record(rows: int, places: int) -> bool:
        rows_seen.append(max(rows, places * places))
        chose.append(real(rows, places))
        return chose[-1]

    monkeypatch.setattr(per_fact, "kernels_warm", lambda: False)
    monkeypatch.setattr(per_fact, "BUDGET_S", float("inf"))
    monkeypatch.setattr(per_fact, "per_fact_now", record)
    monkeypatch.setattr(per_fact, "SMALL_FACTS", 0)
    want = _want(plan, links)
    assert in_process(plan, links, 3)[0] == want
    assert not any(chose)
    middle = int(np.median(rows_seen))  # regions at most this big per fact, the rest not
    for small in (middle, 10**9):
        monkeypatch.setattr(per_fact, "SMALL_FACTS", small)
        for parts in (1, 3):
            chose.clear()
            got, stats = in_process(plan, links, parts)
            assert got == want, (name, small, parts)
            assert stats.per_fact == {}
            if small > middle:
                assert all(chose)
    monkeypatch.setattr(per_fact, "SMALL_FACTS", middle)
    chose.clear()
    in_process(plan, links, 3)
    assert set(chose) == {True, False}  # both sides of the threshold in one run


def test_the_crossover_stops_when_warm_or_over_budget(monkeypatch) -> None:
    monkeypatch.setattr(per_fact, "_spent", [0.0])
    monkeypatch.setattr(per_fact, "kernels_warm", lambda: False)
    assert per_fact.per_fact_now(per_fact.SMALL_FACTS, 10)
    assert not per_fact.per_fact_now(per_fact.SMALL_FACTS + 1, 10)
    assert not per_fact.per_fact_now(10, 101)  # 101 places: a closure of 10,201 pairs
    per_fact.charge(per_fact.BUDGET_S)
    assert not per_fact.per_fact_now(1, 1)
    monkeypatch.setattr(per_fact, "_spent", [0.0])
    monkeypatch.setattr(per_fact, "kernels_warm", lambda: True)
    assert not per_fact.per_fact_now(1, 1)


def test_places_are_distinct_locations() -> None:
    table = table_of_tuples([0] * 4, ["r"] * 4, [("a", 1), ("a", 2), ("b", 1), (3, 1)],
                            [False] * 4, 2)
    assert per_fact.places_of(table) == 2


@settings(max_examples=60, deadline=None)
@given(random_program(), update_stream(), st.integers(1, 3))
def test_random_programs_in_columns(text: str, stream, parts: int) -> None:
    plan = plan_program(parse_program(text))
    initial, _ = stream
    got, _ = in_process(plan, initial, parts)
    assert got == _want(plan, initial)


@pytest.mark.spark
def test_spark_runs_the_columns(spark) -> None:
    """On Spark: the columns path, a job per round, and readers see a row per fact."""
    plan = plan_program(parse_program(NEGATION_AND_AGGREGATES))
    rng = random.Random(5)
    links = sorted({Fact("link", (f"n{rng.randrange(10)}", f"n{rng.randrange(10)}", 1))
                    for _ in range(30)}, key=Fact.key)
    df, stats = spark_evaluate(spark, plan, links, parts=3)
    assert stats.per_fact == {} and stats.spark_jobs == stats.rounds
    assert df.count() == len(_want(plan, links))
    assert {r["rel"] for r in df.select("rel").distinct().collect()} == \
        {r for r, _ in _want(plan, links)}


SHIPPED = ["best_routes", "brand_reach", "constrained_reach", "detectable", "fraud", "loops",
           "min_cost", "path_vector", "reachability", "routing_loop"]


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_program_runs_in_columns(name: str) -> None:
    """Random facts of each base relation (node names first, small ints after), 3 regions:
    no stratum falls back per fact and the fixpoint is the reference's."""
    plan = plan_program(programs.load(name))
    rng = random.Random(len(name))
    nodes = [f"n{i}" for i in range(7)]
    facts = sorted({Fact(rel, tuple(rng.choice(nodes) if i < 2 else rng.randint(1, 3)
                                    for i in range(plan.arity[rel])), plan.locspec.get(rel, 0))
                    for rel in plan.base for _ in range(14)}, key=Fact.key)
    got, stats = in_process(plan, facts, 3)
    assert stats.per_fact == {}
    assert got == _want(plan, facts)


def test_a_stratum_the_columns_cannot_run_falls_back_per_fact() -> None:
    """A relation derived by an aggregate rule and another (the columnar engine keeps an
    aggregate relation to one rule) runs per fact, through the same frame, and says so."""
    plan = plan_program(parse_program("""
        a1 deg(@S, a_COUNT<*>) :- link(@S,D,C).
        a2 deg(@S, C) :- link(@S,D,C), C > 2.
        a3 big(@D, N) :- link(@S,D,C), deg(@S,N)."""))
    rng = random.Random(2)
    links = sorted({Fact("link", (f"n{rng.randrange(8)}", f"n{rng.randrange(8)}",
                                  rng.randint(1, 4))) for _ in range(20)}, key=Fact.key)
    got, stats = in_process(plan, links, 3)
    deg = next(s.index for s in plan.strata if "deg" in s.relations)
    assert "aggregate" in stats.per_fact[deg] and len(stats.per_fact) == 1
    assert got == _want(plan, links)


def test_facts_of_a_relation_the_program_never_mentions_pass_through() -> None:
    plan = plan_program(programs.load("reachability"))
    links = [Fact("link", ("a", "b", 1)), Fact("link", ("b", "c", 1))]
    extra = [Fact("note", ("a", "x", 1, 2, ("p", "q"))), Fact("note", ("c", "y", 3, 4, ()))]
    got, stats = in_process(plan, links + extra, 2)
    assert stats.per_fact == {}
    assert got == _want(plan, links) | {(f.relation, f.args) for f in extra}
