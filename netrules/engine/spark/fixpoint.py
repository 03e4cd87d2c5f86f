"""From-scratch evaluation on Spark with many hops per job.

Facts live in one DataFrame ``(part, rel, args, new)`` where ``part`` is the partition of the
fact's location (PartitionMap). One *round* is one ``groupBy(part).applyInPandas`` job: each
partition loads its facts, runs the stratum's localized rules to a local fixpoint with the
reference evaluator's own matcher, keeps facts located in its region and emits the rest as
messages (``new = true``, ``part`` = destination). Strata run in order, each until no message
is in flight, so negation and aggregates read complete lower strata. A naive round-per-hop loop
needs as many rounds as the network has hops; here a round crosses a region boundary.

Aggregates are computed where their body is; a rule whose aggregate head is located elsewhere
than its body would need a shuffle of partial groups and is refused with a clear error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial

import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from netrules.engine.reference import Database, aggregate_rule, head_fact, solve_body
from netrules.engine.session import count_jobs
from netrules.engine.spark.iterated import finish, iterated_round_fn
from netrules.engine.spark.partition import PartitionMap
from netrules.errors import EngineError
from netrules.facts import Fact, value_from_json, value_to_json
from netrules.lang import ast
from netrules.plan import Plan, Stratum

__all__ = ["SCHEMA", "spark_evaluate", "SparkRunStats", "encode_args", "decode_args",
           "facts_frame", "frame_facts"]

SCHEMA = "part int, rel string, args string, new boolean"


def encode_args(args: tuple) -> str:
    return json.dumps([value_to_json(a) for a in args], separators=(",", ":"))


def decode_args(text: str) -> tuple:
    return tuple(value_from_json(v) for v in json.loads(text))


@dataclass
class SparkRunStats:
    rounds: int = 0
    spark_jobs: int = 0
    messages: int = 0


def check_spark_plan(plan: Plan) -> None:
    """Refuse what the partitioned evaluator cannot do exactly."""
    for r in plan.rules:
        agg = r.head.aggregate()
        if not agg:
            continue
        body_locs = {str(a.location_term) for a in r.atoms() if a.locspec is not None}
        head_loc = str(r.head.location_term) if r.head.locspec is not None else None
        if body_locs and head_loc not in body_locs:
            raise EngineError(f"{r.loc}: the Spark engine computes aggregates where their body "
                              f"is; {r.head.relation} is located at {head_loc}, the body at "
                              f"{', '.join(sorted(body_locs))}. Use --engine reference, or "
                              "locate the head with the body.")


def _location(relation: str, args: tuple, plan: Plan):
    spec = plan.locspec.get(relation, 0)
    return None if spec is None else args[spec]


def _part_of(plan: Plan, pmap: PartitionMap, rel: str, args: tuple) -> int:
    loc = _location(rel, args, plan)
    return 0 if loc is None else pmap.of(loc)


def _round_fn(plan: Plan, stratum: Stratum, pmap: PartitionMap, first: bool):
    rules = stratum.rules
    rels = stratum.relations

    def part_of(rel: str, args: tuple) -> int:
        loc = _location(rel, args, plan)
        return 0 if loc is None else pmap.of(loc)

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        if pdf.empty:
            return pdf
        me = int(pdf["part"].iloc[0])
        db, frontier = Database(), Database()
        for rel, args, new in zip(pdf["rel"], pdf["args"], pdf["new"], strict=True):
            row = decode_args(args)
            if db.add(rel, row) and new:
                frontier.add(rel, row)
        out_rel: list[str] = []
        out_args: list[tuple] = []
        out_part: list[int] = []
        out_new: list[bool] = []
        for rel, rows in db.rel.items():
            for row in rows:
                out_rel.append(rel)
                out_args.append(row)
                out_part.append(me)
                out_new.append(False)
        sent: set[tuple[str, tuple]] = set()

        def emit(rel: str, row: tuple) -> bool:
            """Keep a derived fact here or send it; True when it is new here."""
            dest = part_of(rel, row)
            if dest == me:
                if db.add(rel, row):
                    out_rel.append(rel)
                    out_args.append(row)
                    out_part.append(me)
                    out_new.append(False)
                    return True
                return False
            if (rel, row) not in sent:
                sent.add((rel, row))
                out_rel.append(rel)
                out_args.append(row)
                out_part.append(dest)
                out_new.append(True)
            return False

        if first:
            for rule in rules:
                if rule.head.aggregate():
                    for row in aggregate_rule(rule, solve_body(rule, db)):
                        emit(rule.head.relation, row)
            plain = [r for r in rules if not r.head.aggregate()]
            produced = [(r.head.relation, head_fact(r, b)) for r in plain
                        for b in solve_body(r, db)]
            frontier = Database()
            for rel, row in produced:
                if emit(rel, row):
                    frontier.add(rel, row)
        plain = [r for r in rules if not r.head.aggregate()]
        while any(frontier.rel.get(r) for r in rels | _body_rels(plain)):
            nxt = Database()
            for rule in plain:
                atoms = rule.atoms()
                for i, atom in enumerate(atoms):
                    if not frontier.rel.get(atom.relation):
                        continue
                    reads = {j: (frontier if j == i else db) for j in range(len(atoms))}
                    for b in solve_body(rule, reads, neg=db, first=i):
                        row = head_fact(rule, b)
                        if emit(rule.head.relation, row):
                            nxt.add(rule.head.relation, row)
            frontier = nxt
        return pd.DataFrame({"part": out_part, "rel": out_rel,
                             "args": [encode_args(a) for a in out_args], "new": out_new})

    return run


def _body_rels(rules: Iterable[ast.Rule]) -> set[str]:
    return {a.relation for r in rules for a in r.atoms()}


def facts_frame(spark: SparkSession, plan: Plan, facts: Iterable[Fact], pmap: PartitionMap
                ) -> DataFrame:
    rows = []
    for f in facts:
        loc = _location(f.relation, f.args, plan)
        rows.append((0 if loc is None else pmap.of(loc), f.relation, encode_args(f.args), False))
    return spark.createDataFrame(rows, SCHEMA)


def frame_facts(df: DataFrame, plan: Plan) -> Iterator[Fact]:
    """Stream a facts frame to the driver partition by partition (tests and small outputs)."""
    for r in df.select("rel", "args").toLocalIterator():
        yield Fact(r["rel"], decode_args(r["args"]), plan.locspec.get(r["rel"], 0))


def spark_evaluate(spark: SparkSession, plan: Plan, facts: Iterable[Fact], *,
                   parts: int = 4, pmap: PartitionMap | None = None,
                   max_rounds: int = 10_000) -> tuple[DataFrame, SparkRunStats]:
    """Every fact of the least model, as a cached DataFrame, and what it cost."""
    check_spark_plan(plan)
    facts = [*plan.program.facts, *facts]
    pmap = pmap or PartitionMap.from_facts(facts, parts)
    stats = SparkRunStats()
    with count_jobs(spark) as jobs:
        state = facts_frame(spark, plan, facts, pmap)
        for stratum in plan.strata:
            first = True
            while True:
                stats.rounds += 1
                if stats.rounds > max_rounds:
                    raise EngineError(f"no fixpoint after {max_rounds} rounds")
                fn = (iterated_round_fn(plan, stratum, partial(_part_of, plan, pmap),
                                        decode_args, encode_args)
                      if stratum.iterated else _round_fn(plan, stratum, pmap, first))
                out = state.groupBy("part").applyInPandas(fn, SCHEMA)
                out = out.localCheckpoint(eager=True)
                pending = out.filter("new").count()
                stats.messages += pending
                state = out
                first = False
                if pending == 0:
                    break
            if stratum.iterated:
                state = finish(state)
    stats.spark_jobs = jobs.jobs
    return state, stats
