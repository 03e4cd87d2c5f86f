"""From-scratch evaluation on Spark with many hops per job.

Facts live in one frame partitioned by region (``part``, the region of the fact's location:
PartitionMap). One *round* is one ``groupBy(part).applyInArrow`` job: each region runs the
stratum's localized rules to a local fixpoint, keeps facts located in its region and emits the
rest as messages (``new = true``, ``part`` = destination). Strata run in order, each until no
message is in flight, so negation and aggregates read complete lower strata. A naive
round-per-hop loop needs as many rounds as the network has hops; here a round crosses a region
boundary.

Regions run the columnar engine and exchange facts as Arrow columns packed into one Spark row
per region and destination (``columnar_round.py``, ``columnar_iterated.py``, ``columns.py``,
``packed.py``; docs/engine.md, "From scratch in columns"). The per-fact rounds below
(``_round_fn``, ``iterated.py``: the reference evaluator's matcher over JSON arguments) are the
fallback for a stratum the columnar engine cannot run on Spark, through ``per_fact.py``.

A round costs one Spark job: its output is checkpointed lazily and the count of messages in
flight fills the checkpoint, so the next round reads it and the lineage never grows. A region
no message reached is at its local fixpoint already and returns its rows untouched. A
non-recursive stratum's messages are taken in by the next stratum's first round, and each
region is steered to a task of its own (``region_key``).

Aggregates are computed where their body is; a rule whose aggregate head is located elsewhere
than its body would need a shuffle of partial groups and is refused with a clear error.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import reduce, wraps
from itertools import count

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from netrules.engine.joins import bindings_of, fire_rows
from netrules.engine.reference import Database, aggregate_rule
from netrules.engine.session import count_jobs
from netrules.engine.spark.partition import PartitionMap
from netrules.errors import EngineError
from netrules.facts import Fact, value_from_json
from netrules.lang import ast
from netrules.plan import Plan, Stratum

__all__ = ["SCHEMA", "spark_evaluate", "SparkRunStats", "encode_args", "encode_many",
           "decode_args", "decode_many", "facts_frame", "frame_facts", "frame_width"]

SCHEMA = "part int, rel string, args string, new boolean"

RoundFn = Callable[[pd.DataFrame], pd.DataFrame]

# json encodes a tuple as an array, nested ones too: the same text value_to_json's lists give
_ENCODER = json.JSONEncoder(separators=(",", ":"))
_PLAIN = frozenset({str, int, float})
_NOT_FLAT = ("true", "false", "null", "{")


def encode_args(args: tuple) -> str:
    """A fact's arguments as a JSON array; one encoder serves every call (json.dumps with
    separators builds a new one per call, which cost more than the encoding)."""
    return _ENCODER.encode(args)


def encode_many(rows: Sequence[tuple]) -> list[str]:
    """``encode_args`` over many rows: one encoding of them all, cut at the ``],[`` between
    rows when that text occurs nowhere else (``],[`` cannot overlap itself, so a count of
    one less than the rows proves it); otherwise row by row."""
    if len(rows) < 2:
        return [encode_args(r) for r in rows]
    inner = _ENCODER.encode(rows)[2:-2]
    if inner.count("],[") != len(rows) - 1:
        return [encode_args(r) for r in rows]
    return ["[" + text + "]" for text in inner.split("],[")]


def decode_args(text: str) -> tuple:
    return _thaw(json.loads(text))


def decode_many(texts: Sequence[str]) -> list[tuple]:
    """``decode_args`` over a column with one ``json.loads`` (a call per row cost more than the
    parsing). Text with no nested array, bool, null or object, the common case, parses to the
    rows' values as they are; otherwise each row goes through ``value_from_json``."""
    if not texts:
        return []
    blob = "[" + ",".join(texts) + "]"
    rows = json.loads(blob)
    if blob.count("[") == len(texts) + 1 and not any(w in blob for w in _NOT_FLAT):
        return list(map(tuple, rows))
    return list(map(_thaw, rows))


def _thaw(values: list) -> tuple:
    if all(type(v) in _PLAIN for v in values):
        return tuple(values)
    return tuple(value_from_json(v) for v in values)


def _gc_paused(fn: RoundFn) -> RoundFn:
    """A round allocates a tuple per fact, all alive until it returns: the cyclic collector's
    passes over them found nothing to free and took most of the decoding time."""

    @wraps(fn)
    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(pdf)
        finally:
            if was:
                gc.enable()

    return run


@dataclass
class SparkRunStats:
    rounds: int = 0
    spark_jobs: int = 0
    messages: int = 0
    per_fact: dict[int, str] = field(default_factory=dict)
    """strata run by the per-fact evaluator, and why (the others run in columns)"""


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


def locator(plan: Plan, pmap: PartitionMap) -> Callable[[str, tuple], int]:
    """A fact's partition (0 when unlocated), with the lookups bound once: it runs per
    derived fact."""
    spec_of, known, of = plan.locspec.get, pmap.assignment.get, pmap.of

    def part_of(rel: str, args: tuple) -> int:
        spec = spec_of(rel, 0)
        if spec is None:
            return 0
        part = known(args[spec])
        return of(args[spec]) if part is None else part

    return part_of


def read_relations(rules: Iterable[ast.Rule]) -> frozenset[str] | None:
    """Relations the rules' bodies read, negated ones included; None when a path atom is left
    (the planner compiles them away), meaning: any relation may be read."""
    out: set[str] = set()
    for rule in rules:
        for lit in rule.body:
            atom = lit.atom if isinstance(lit, ast.Negation) else lit
            if isinstance(atom, ast.PathAtom):
                return None
            if isinstance(atom, ast.Atom):
                out.add(atom.relation)
    return frozenset(out)


def groups_of(rels: np.ndarray, mask: np.ndarray) -> Iterator[tuple[str, np.ndarray]]:
    """(relation, row positions) for the rows ``mask`` selects."""
    idx = np.flatnonzero(mask)
    codes, names = pd.factorize(rels[idx])
    for k, rel in enumerate(names):
        yield rel, idx[codes == k]


def add_known(db: Database, rel: str, idx: np.ndarray, rows: list[tuple],
              keep: np.ndarray | None = None) -> None:
    """Add a relation's rows at positions ``idx``, unmarking ``keep`` for repeats. A region's
    old rows are distinct (every round keeps one row per fact), so one set takes them all
    instead of an add per row."""
    got = set(rows)
    if len(got) == len(rows) and not db.rel.get(rel):
        db.rel[rel] = got  # a fresh relation has no index to update
        return
    for i, row in zip(idx, rows, strict=True):
        if not db.add(rel, row) and keep is not None:
            keep[i] = False


def load_facts(pdf: pd.DataFrame, new: np.ndarray, used: frozenset[str] | None
               ) -> tuple[Database, Database, np.ndarray]:
    """The region's facts of the ``used`` relations (all when None), messages' relations too,
    with the rows to keep: a message for a fact already here, or a repeat, is dropped. Old
    facts go in first, so a message joins the frontier only when its fact is new here."""
    rels = pdf["rel"].to_numpy(dtype=object)
    args = pdf["args"].to_numpy(dtype=object)
    keep = np.ones(len(pdf), dtype=bool)
    wanted = np.ones(len(pdf), dtype=bool) if used is None else \
        pdf["rel"].isin(used | set(rels[new])).to_numpy()
    db, frontier = Database(), Database()
    for rel, idx in groups_of(rels, wanted & ~new):
        add_known(db, rel, idx, decode_many(args[idx].tolist()), keep)
    idx = np.flatnonzero(new)
    for i, rel, row in zip(idx, rels[idx], decode_many(args[idx].tolist()), strict=True):
        if db.add(rel, row):
            frontier.add(rel, row)
        else:
            keep[i] = False
    return db, frontier, keep


class _Emitter:
    """Where a region's derived facts go: kept here when located here, else sent once."""

    def __init__(self, me: int, db: Database, part_of: Callable[[str, tuple], int]) -> None:
        self.me, self.db, self.part_of = me, db, part_of
        self.rows: list[tuple[int, str, tuple, bool]] = []
        self.sent: set[tuple[str, tuple]] = set()

    def __call__(self, rel: str, row: tuple) -> bool:
        """Keep a derived fact here or send it; True when it is new here. Most derivations
        repeat a fact (every neighbour derives it again), so that is tested first: a fact in
        ``db`` is located here, one in ``sent`` elsewhere, and neither needs locating."""
        if row in self.db.rel.get(rel, ()) or (rel, row) in self.sent:
            return False
        dest = self.part_of(rel, row)
        if dest == self.me:
            self.db.add(rel, row)
            self.rows.append((dest, rel, row, False))
            return True
        self.sent.add((rel, row))
        self.rows.append((dest, rel, row, True))
        return False

    def frame(self) -> pd.DataFrame:
        parts, rels, rows, news = zip(*self.rows, strict=True) if self.rows else ((),) * 4
        return pd.DataFrame({"part": np.array(parts, dtype=np.int32), "rel": list(rels),
                             "args": encode_many(rows),
                             "new": np.array(news, dtype=bool)})


def _local_fixpoint(stratum: Stratum, db: Database, frontier: Database, emit: _Emitter,
                    first: bool) -> None:
    """The stratum's rules to a local fixpoint: in its first round from everything here, after
    that semi-naively from the messages that brought new facts."""
    plain = [r for r in stratum.rules if not r.head.aggregate()]
    if first:
        for rule in stratum.rules:
            if rule.head.aggregate():
                for row in aggregate_rule(rule, bindings_of(rule, db)):
                    emit(rule.head.relation, row)
        produced = [(r.head.relation, row) for r in plain for row, _ in fire_rows(r, db)]
        frontier = Database()
        for rel, row in produced:
            if emit(rel, row):
                frontier.add(rel, row)
    watched = stratum.relations | _body_rels(plain)
    while any(frontier.rel.get(r) for r in watched):
        nxt = Database()
        for rule in plain:
            atoms = rule.atoms()
            for i, atom in enumerate(atoms):
                if not frontier.rel.get(atom.relation):
                    continue
                reads = {j: (frontier if j == i else db) for j in range(len(atoms))}
                for row, _ in fire_rows(rule, reads, db, first=i):
                    if emit(rule.head.relation, row):
                        nxt.add(rule.head.relation, row)
        frontier = nxt


def _round_fn(plan: Plan, stratum: Stratum, pmap: PartitionMap, first: bool) -> RoundFn:
    reads = read_relations(stratum.rules)
    used = None if reads is None else reads | stratum.relations
    needs_body = reads is not None and all(r.atoms() for r in stratum.rules)
    part_of = locator(plan, pmap)

    def run(pdf: pd.DataFrame) -> pd.DataFrame:
        if pdf.empty:
            return pdf
        new = pdf["new"].to_numpy(dtype=bool)
        if not new.any():
            if not first:
                return pdf  # no message came: still at the local fixpoint it reached
            if needs_body and not pdf["rel"].isin(reads).any():
                return pdf  # no fact any rule reads is here: nothing to derive
        db, frontier, keep = load_facts(pdf, new, used)
        emit = _Emitter(int(pdf["part"].iat[0]), db, part_of)
        _local_fixpoint(stratum, db, frontier, emit, first)
        return pd.concat([pdf[keep].assign(new=False), emit.frame()], ignore_index=True)

    return run


def _body_rels(rules: Iterable[ast.Rule]) -> set[str]:
    return {a.relation for r in rules for a in r.atoms()}


def frame_width(plan: Plan, facts: Iterable[Fact] = ()) -> int:
    """Argument positions the columns frame carries: the widest relation's, the program's or
    a given fact's (a relation the program never mentions is carried as it is)."""
    return max([1, *plan.arity.values(), *(len(f.args) for f in facts)])


def _facts_table(plan: Plan, facts: list[Fact], pmap: PartitionMap, width: int):
    from netrules.engine.spark.columns import table_of_tuples

    part_of = locator(plan, pmap)
    return table_of_tuples([part_of(f.relation, f.args) for f in facts],
                           [f.relation for f in facts], [f.args for f in facts],
                           [False] * len(facts), width)


def facts_frame(spark: SparkSession, plan: Plan, facts: Iterable[Fact], pmap: PartitionMap
                ) -> DataFrame:
    """The facts as the columns frame (``spark/columns.py``), a row per fact."""
    from netrules.engine.spark.columns import schema

    facts = list(facts)
    width = frame_width(plan, facts)
    return spark.createDataFrame(_facts_table(plan, facts, pmap, width), schema(width))


def frame_facts(df: DataFrame, plan: Plan) -> Iterator[Fact]:
    """The facts of a frame, columns or JSON (tests and small outputs: collected whole)."""
    if "args" in df.columns:
        for r in df.select("rel", "args").toLocalIterator():
            yield Fact(r["rel"], decode_args(r["args"]), plan.locspec.get(r["rel"], 0))
        return
    from netrules.engine.spark.columns import tuples_of

    table = df.toArrow()
    width = sum(1 for c in df.columns if c.startswith("s") and c[1:].isdigit())
    rels = table.column("rel").to_pylist()
    for rel, args in zip(rels, tuples_of(table, width), strict=True):
        yield Fact(rel, args, plan.locspec.get(rel, 0))


_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def murmur3_int(value: int, seed: int) -> int:
    """Spark's ``Murmur3_x86_32.hashInt``: what a shuffle hashes an int key with."""
    k = _rotl((value & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h = (_rotl((seed & _MASK) ^ k, 13) * 5 + 0xE6546B64) & _MASK
    h ^= 4
    h = (h ^ (h >> 16)) * 0x85EBCA6B & _MASK
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h >> 31 else h


def shuffle_slot(key: int, part: int, slots: int) -> int:
    """The shuffle partition of a row grouped by the int columns (key, part): Spark chains
    Murmur3 over the columns from seed 42 and takes the result modulo the partitions."""
    return murmur3_int(part, murmur3_int(key, 42)) % slots


def region_key(parts: int, slots: int, tasks: int) -> Column:
    """A column that, grouped by with ``part``, puts region p in shuffle partition
    ``p % min(slots, tasks)``: a region per task, as many tasks as run at once (``tasks``);
    a Python task costs ~0.1 s even when its regions are small. Grouped by ``part`` alone
    Spark's hash put regions 0, 1 and 3 of 4 in one task while the other core idled, and a
    2-region run on a 2-worker cluster ran on one worker. The groups stay the regions
    whatever the key."""
    used = max(1, min(slots, tasks))
    keys = [next(k for k in count() if shuffle_slot(k, p, slots) == p % used)
            for p in range(parts)]
    part = F.col("part")
    when = reduce(lambda acc, pk: acc.when(part == pk[0], pk[1]), enumerate(keys[1:], 1),
                  F.when(part == 0, keys[0]))
    return when.otherwise(0).cast("int")


def _absorbed(stratum: Stratum, after: Stratum | None) -> bool:
    """A non-recursive stratum's messages derive nothing more in it, so the next stratum's
    first round takes them in: no round runs only to deliver them."""
    return not stratum.recursive and after is not None


def _stratum_round(plan: Plan, stratum: Stratum, pmap: PartitionMap, first: bool,
                   width: int, stats: SparkRunStats) -> Callable:
    """The round's function over a region's Arrow rows: the columnar engine when it runs the
    stratum (per fact instead in a small region on a worker that has not loaded the kernels:
    ``per_fact.crossover``), else the per-fact evaluator through the JSON form (the reason
    kept in ``stats.per_fact``)."""
    from netrules.engine.spark.columnar_iterated import iterated_columns_fn
    from netrules.engine.spark.columnar_round import Locator, columnar_round_fn
    from netrules.engine.spark.iterated import iterated_round_fn
    from netrules.engine.spark.per_fact import crossover, in_columns
    from netrules.engine.spark.region_plan import iterated_plan, region_plan

    fn = (iterated_round_fn(stratum, locator(plan, pmap), first) if stratum.iterated
          else _round_fn(plan, stratum, pmap, first))
    per_fact = in_columns(_gc_paused(fn), width)
    if stratum.iterated:
        ip = iterated_plan(plan, stratum)
        if not isinstance(ip, str):
            return crossover(iterated_columns_fn(ip, stratum, Locator(plan, pmap), first,
                                                 width), per_fact)
        rp: object = ip
    else:
        rp = region_plan(plan, stratum, first)
        if not isinstance(rp, str):
            return crossover(columnar_round_fn(rp, stratum, Locator(plan, pmap), first,
                                               width), per_fact)
    stats.per_fact.setdefault(stratum.index, rp)
    return per_fact


def spark_evaluate(spark: SparkSession, plan: Plan, facts: Iterable[Fact], *,
                   parts: int = 4, pmap: PartitionMap | None = None,
                   max_rounds: int = 10_000) -> tuple[DataFrame, SparkRunStats]:
    """Every fact of the least model, as a columns frame (``spark/columns.py``) over the last
    round's checkpoint, and what it cost."""
    from netrules.engine.spark.iterated import finish_facts
    from netrules.engine.spark.packed import PACKED, packed_frame, packed_round, unpacked

    check_spark_plan(plan)
    facts = list(dict.fromkeys([*plan.program.facts, *facts]))  # one row per fact
    pmap = pmap or PartitionMap.from_facts(facts, parts)
    stats = SparkRunStats()
    width = frame_width(plan, facts)
    key = region_key(pmap.parts, int(spark.conf.get("spark.sql.shuffle.partitions")),
                     spark.sparkContext.defaultParallelism)
    with count_jobs(spark) as jobs:
        state = packed_frame(spark, _facts_table(plan, facts, pmap, width))
        for k, stratum in enumerate(plan.strata):
            after = plan.strata[k + 1] if k + 1 < len(plan.strata) else None
            first = True
            while True:
                stats.rounds += 1
                if stats.rounds > max_rounds:
                    raise EngineError(f"no fixpoint after {max_rounds} rounds")
                fn = packed_round(_stratum_round(plan, stratum, pmap, first, width, stats),
                                  width)
                out = state.groupBy(key, "part").applyInArrow(fn, PACKED)
                out = out.localCheckpoint(eager=False)
                # the round's one job fills the checkpoint
                pending = out.filter("new").agg(F.sum("n")).collect()[0][0] or 0
                stats.messages += pending
                state, first = out, False
                if pending == 0 or _absorbed(stratum, after):
                    break
            if stratum.iterated:
                done = packed_round(lambda t: finish_facts(t, width), width)
                state = state.groupBy(key, "part").applyInArrow(done, PACKED)
    stats.spark_jobs = jobs.jobs
    return unpacked(state, width), stats
