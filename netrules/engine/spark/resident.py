"""Views kept in Spark: each region's state lives in an executor, and a round is one job.

The state is an RDD with one record per region, ``(region, snapshot id, snapshot, log)``: the
pickled ``RegionState`` as of the last compaction plus the changes logged since, one pickled
chunk per round that changed it. A round maps
that RDD with the round's payload (broadcast: the facts that died, the suspects, the messages
for each region) and collects only the regions' outboxes; the new state RDD is persisted
(memory, spilling to disk) and locally checkpointed, so lineage never grows and views larger
than the driver's memory stay in executors. Nothing on this path collects a view.

Decoding a region's snapshot costs far more than its round's work, so each Python worker keeps
the regions it last ran, keyed by (snapshot id, length of the log): a worker whose copy is
current uses it as is; any other rebuilds from the snapshot and replays the log, so any worker
may run any region and a lost worker costs time, not correctness. A region's log is folded into
a new snapshot once it grows past a quarter of its facts (``COMPACT_SHARE``).

Costs: one Spark job per round; a batch that deletes runs kill rounds until no new suspect,
one rederive round, then insert rounds until no message is in flight; an insert-only batch
only the insert rounds. ``docs/engine.md`` quotes measured figures.
"""

from __future__ import annotations

import pickle
import random
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import SparkSession

from netrules.engine.firing import FactKey
from netrules.engine.regional.driver import RegionalEngine, run_step
from netrules.engine.regional.state import RegionState
from netrules.engine.regional.steps import Outbox, Program, check_resident_plan
from netrules.engine.session import count_jobs, get_spark
from netrules.engine.spark.fixpoint import locator
from netrules.engine.spark.partition import PartitionMap
from netrules.facts import Fact
from netrules.plan import Plan

__all__ = ["SparkRegions", "ResidentEngine", "run_resident_batches", "COMPACT_SHARE",
           "MIN_LOG"]

COMPACT_SHARE = 0.25  # log length / region facts past which the log is folded into a snapshot
MIN_LOG = 2_000  # changes a log may always hold

# per Python worker: programs by engine id, and the regions this worker holds decoded
_PROGRAMS: dict[str, Program] = {}
_HELD: dict[tuple[str, int], tuple[tuple[str, int], RegionState]] = {}

Record = tuple[int, str, bytes, list[bytes], int]  # region, snapshot id, snapshot, log, ops


def _program(eid: str, shipped: Any) -> Program:
    prog = _PROGRAMS.get(eid)
    if prog is None:
        plan, pmap, k = shipped.value
        prog = _PROGRAMS[eid] = Program(plan, locator(plan, pmap), k)
    return prog


def _round_fn(eid: str, shipped: Any, payload: Any, min_log: int, reuse: bool):
    """The task of one round: run the region if it has work, pass its record on if not.
    ``reuse`` False makes every round rebuild from snapshot and log (tests). Everything a task
    returns is pickled here with C pickle: PySpark's own serializer (cloudpickle) took most of
    a large round's time."""

    def run(records: Iterator[Record]) -> Iterator[tuple[str, Any]]:
        for g, snap_id, snap, chunks, n_ops in records:
            kind, batch, targets, common, per_region = payload.value
            if g not in targets:
                yield ("s", (g, snap_id, snap, chunks, n_ops))
                continue
            prog = _program(eid, shipped)
            held = _HELD.get((eid, g))
            if reuse and held is not None and held[0] == (snap_id, len(chunks)):
                state = held[1]
            else:
                _HELD.pop((eid, g), None)  # stale: free it before decoding the snapshot
                state = _rebuild(snap, chunks)
            state.log = []
            out = run_step(state, prog, kind, batch, common, per_region.get(g))
            ops, state.log = state.log, None
            if ops:
                chunks, n_ops = [*chunks, pickle.dumps(ops, 5)], n_ops + len(ops)
            if n_ops > max(min_log, COMPACT_SHARE * len(state.rank)):
                snap_id, snap, chunks, n_ops = uuid.uuid4().hex, pickle.dumps(state, 5), [], 0
            _HELD[(eid, g)] = ((snap_id, len(chunks)), state)
            yield ("s", (g, snap_id, snap, chunks, n_ops))
            yield ("o", (g, pickle.dumps(out, 5)))

    return run


def _rebuild(snap: bytes, chunks: list[bytes]) -> RegionState:
    state: RegionState = pickle.loads(snap)
    for chunk in chunks:
        state.replay(pickle.loads(chunk))
    return state


def _visible(records: Iterator[Record]) -> Iterator[FactKey]:
    for _g, _sid, snap, chunks, _n in records:
        yield from _rebuild(snap, chunks).visible()


def _counts(records: Iterator[Record]) -> Iterator[tuple[int, int]]:
    for _g, _sid, snap, chunks, _n in records:
        state = _rebuild(snap, chunks)
        yield state.facts(), state.records()


class SparkRegions:
    """Regions in Spark executors (see the module docstring); one job per round."""

    def __init__(self, spark: SparkSession, plan: Plan, pmap: PartitionMap, k: int = 2, *,
                 min_log: int = MIN_LOG, reuse: bool = True) -> None:
        check_resident_plan(plan)
        self.min_log, self.reuse = min_log, reuse
        self.spark, self.sc = spark, spark.sparkContext
        self.parts = pmap.parts
        self.prog = Program(plan, locator(plan, pmap), k)
        self.eid = uuid.uuid4().hex
        self._shipped = self.sc.broadcast((plan, pmap, k))
        empty = [(g, uuid.uuid4().hex, pickle.dumps(RegionState(g, k), 5), [], 0)
                 for g in range(self.parts)]
        self.rdd = self.sc.parallelize(empty, self.parts)
        self._jobs = 0

    def run(self, kind: str, batch: int, targets: Iterable[int], common: Any,
            per_region: dict[int, Any]) -> dict[int, Outbox]:
        payload = self.sc.broadcast((kind, batch, frozenset(targets), common, per_region))
        fn = _round_fn(self.eid, self._shipped, payload, self.min_log, self.reuse)
        nxt = self.rdd.mapPartitions(fn, preservesPartitioning=True)
        nxt.persist(StorageLevel.MEMORY_AND_DISK)  # not pipelined into what reads it
        nxt.localCheckpoint()
        with count_jobs(self.spark) as jobs:
            outs = nxt.filter(lambda r: r[0] == "o").map(lambda r: r[1]).collect()
        self._jobs += jobs.jobs
        payload.unpersist()  # the next round's task closure still names it: not destroy()
        old, self.rdd = self.rdd, nxt.filter(lambda r: r[0] == "s").map(lambda r: r[1])
        old.unpersist()
        return {g: pickle.loads(blob) for g, blob in outs}

    def facts(self) -> Iterable[FactKey]:
        """Every visible fact, streamed partition by partition (a read, not the hot path)."""
        return self.rdd.mapPartitions(_visible).toLocalIterator()

    def counts(self) -> tuple[int, int]:
        pairs = self.rdd.mapPartitions(_counts).collect()
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    def jobs(self) -> int:
        return self._jobs


class ResidentEngine(RegionalEngine):
    """A positive program's views kept in Spark by regional PSN (``--state spark``)."""

    def __init__(self, plan: Plan, facts: Iterable[Fact] = (), *,
                 spark: SparkSession | None = None, parts: int = 4, k: int = 2,
                 rng: random.Random | None = None, **regions: Any) -> None:
        """``regions``: SparkRegions' ``min_log`` and ``reuse``."""
        facts = list(facts)
        pmap = PartitionMap.from_facts([*plan.program.facts, *facts], parts)
        super().__init__(plan, SparkRegions(spark or get_spark(), plan, pmap, k, **regions),
                         rng=rng)
        if facts:
            self.load(facts)


def run_resident_batches(plan: Plan, facts: list[Fact], batches: list[list[tuple[str, Fact]]],
                         *, rng: random.Random | None = None) -> list[dict[str, list[Fact]]]:
    """The CLI's ``eval --engine spark --state spark``: views after loading, then after each
    batch (``rng`` shuffles each batch and every region's inbox)."""
    engine = ResidentEngine(plan, facts, rng=rng)
    out = [engine.views()]
    for batch in batches:
        if rng is not None:
            batch = list(batch)
            rng.shuffle(batch)
        engine.apply(batch)
        out.append(engine.views())
    return out
