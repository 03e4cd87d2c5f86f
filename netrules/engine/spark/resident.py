"""Views kept in Spark: each region's state lives in an executor; a batch is one job.

The state is an RDD with one record per region: the path of the pickled region (a
``regional.columnar.ColumnarRegion``, or a per-fact ``RegionState`` for programs with counting
stages) as of the last compaction (the snapshot, a file in ``snapshot_dir``: local disk in
local mode, a directory every executor mounts on a cluster, as Spark's own reliable
checkpoints need) and the changes logged since (a columnar region logs its rounds' inputs,
replayed by running them again), one pickled chunk per job that changed it, each stamped
(sequence number, random token). Records stay small, so a job moves kilobytes to megabytes, not the
views. The new state RDD is persisted (memory, spilling to disk) and locally checkpointed, so
lineage never grows and views larger than the driver's memory stay in executors. Nothing on
this path collects a view.

Two ways to run a batch's rounds (``regional/rounds.py``, the same loop):
* **gang** (the default): one barrier job per batch. Spark starts all its tasks at once (no
  more tasks than task slots, several regions per task); each runs every round of the batch
  over its regions, swapping outboxes with the others through the driver's relay
  (``relay.py``) after each round, and yields its regions' new records once. A round costs a
  relay swap (about a millisecond) instead of a job (0.25 s), and a batch that fails changes
  no region.
* **job** (``gang=False``): one job per round, the driver running the loop: the round's
  payload is broadcast (the facts that died, the suspects, each region's messages) and only
  the outboxes are collected. It needs no simultaneous slots.

Decoding a region's snapshot costs far more than its round's work, and Spark does not pin a
partition to a Python worker, so each worker keeps a decoded copy of every region it ran, with
the stamp it was at: a current copy is used as is, one a few rounds behind replays the chunks
it missed, and only a copy from another history (or none) decodes the snapshot. Any worker may
run any region, and a lost worker costs time, not correctness. In local mode that is up to one
copy per worker (2 on local[2]). The log is folded into a new snapshot once its bytes pass a
quarter of the snapshot's (``COMPACT_SHARE``) or 16 MB (``MAX_LOG``: every round carries the
log), keeping the last chunks, up to 1 MB, for workers that fell behind. Carrying snapshot
bytes, or a load's whole log, in the records cost americas 8-10 s a round, messages or not.

Costs: one Spark job per batch (gang) or per round (job). The rounds are those of
``regional/rounds.py``: per positive stage, kill rounds until no new suspect, a rederive
round and insert rounds; per counting stage (aggregates, negation), overdeletion rounds and
one round per iteration until no count moves. ``docs/engine.md`` quotes measured
figures.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import pickle
import random
import re
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark import BarrierTaskContext, StorageLevel
from pyspark.sql import SparkSession

from netrules import errors
from netrules.engine.firing import FactKey
from netrules.engine.regional.columnar import bind
from netrules.engine.regional.driver import (
    Region,
    RegionalEngine,
    new_region,
    query_rows,
    run_step,
    shuffler,
)
from netrules.engine.regional.rounds import Outcome, run_rounds
from netrules.engine.regional.steps import Outbox, Program, check_resident_plan
from netrules.engine.runner import views_after
from netrules.engine.session import count_jobs, get_spark
from netrules.engine.spark.fixpoint import locator
from netrules.engine.spark.partition import PartitionMap
from netrules.engine.spark.relay import Link, Relay, Ticket
from netrules.errors import NetrulesError
from netrules.facts import Fact
from netrules.plan import Plan

__all__ = ["SparkRegions", "ResidentEngine", "run_resident_batches", "COMPACT_SHARE",
           "MIN_LOG"]

# When the log (pickled bytes since the snapshot) is folded into a new snapshot: past this share
# of the snapshot's size, or past MAX_LOG whatever the size (every round carries the log), but
# not below MIN_LOG
COMPACT_SHARE = 0.25
MIN_LOG = 256 << 10
MAX_LOG = 16 << 20
KEEP_BYTES = 1 << 20  # changes kept past a snapshot, for workers that fell behind

# per Python worker: programs by engine id, and the regions this worker holds decoded
_PROGRAMS: dict[str, Program] = {}
_HELD: dict[tuple[str, int], tuple[Stamp, Region]] = {}
_ENGINES: dict[str, None] = {}  # engines with held regions, least recently used first
HELD_ENGINES = 4  # a long-lived worker drops the copies of older engines past this many

# A stamp names one version of a region: (sequence number, random token), so a copy left by a
# task whose output was lost is never taken for the version a rerun produced.
Stamp = tuple[int, str]
Chunk = tuple[Stamp, bytes]  # the pickled changes of one round
# region, snapshot files (the current one last), its stamp, the chunks of the rounds since
# (and a few before), bytes logged since
Record = tuple[int, list[str], Stamp, list[Chunk], int]


@contextlib.contextmanager
def _task_errors() -> Iterator[None]:
    """A netrules error raised inside a task (a builtin given the wrong type by a fact) comes
    back as Spark's job failure; raise it as itself, named, with what it means for the state."""
    try:
        yield
    except Py4JJavaError as err:
        found = re.search(r"netrules\.errors\.(\w+): (.*)", str(err))
        cls = getattr(errors, found.group(1), None) if found else None
        if found is None or not (isinstance(cls, type) and issubclass(cls, NetrulesError)):
            raise
        raise cls(f"{found.group(2)} [raised in a Spark task; the batch was not applied]"
                  ) from None


_RELAYS: dict[str, Relay] = {}  # on the driver: one relay per address, shared by engines


def _relay(sc: Any) -> Relay:
    """The driver's relay, listening on this machine only in local mode, else on the driver's
    address (the one executors already reach); started on first use, then shared, so
    engines come and go without leaving servers behind."""
    host = ("127.0.0.1" if sc.master.startswith("local")
            else sc.getConf().get("spark.driver.host", socket.gethostname()))
    if host not in _RELAYS:
        _RELAYS[host] = Relay(host)
    return _RELAYS[host]


def _program(eid: str, shipped: Any) -> Program:
    prog = _PROGRAMS.get(eid)
    if prog is None:
        plan, pmap, k, report, columnar = shipped.value
        prog = _PROGRAMS[eid] = Program(plan, locator(plan, pmap), k, report_supports=report,
                                        columnar=columnar)
    return prog


def _round_fn(eid: str, shipped: Any, payload: Any, min_log: int, reuse: bool,
              decodes: Any):
    """The task of one round (round mode): run the region if it has work, pass its record on
    if not. ``reuse`` False makes every round rebuild from the snapshot (tests). Everything a
    task returns is pickled here with C pickle: PySpark's own serializer (cloudpickle) took
    most of a large round's time."""

    def run(records: Iterator[Record]) -> Iterator[tuple[str, Any]]:
        for rec in records:
            step, batch, targets, common, per_region = payload.value
            g = rec[0]
            if g not in targets:
                yield ("s", rec)
                continue
            prog = _program(eid, shipped)
            state = _open(eid, rec, reuse, decodes, prog)
            mine = per_region.get(g)
            out = run_step(state, prog, step, batch, common.value,
                           None if mine is None else mine.value)
            yield ("s", _finish(eid, rec, state, min_log))
            yield ("o", (g, pickle.dumps(out, 5)))

    return run


def _gang_fn(eid: str, shipped: Any, payload: Any, ticket: Ticket, min_log: int, reuse: bool,
             decodes: Any):
    """The task of a gang job: every round of the batch over this task's regions, swapping
    outboxes with the other tasks through the relay after each round (``rounds.py``: all
    tasks see the same outboxes, so all take the same decisions). Yields the regions' new
    records and this task's share of the outcome."""

    def run(records: Iterator[Record]) -> Iterator[tuple[str, Any]]:
        ctx = BarrierTaskContext.get()
        number, regions, gone, new, seed = payload.value
        prog = _program(eid, shipped)
        me = ctx.partitionId()
        link = Link(ticket, me, ctx.taskAttemptId())
        # which task runs which region is settled here, not by the partitioning: Spark does
        # not pin a partition to a Python worker, so every task says what its worker holds
        held = _held(eid)
        mine = ({rec[0]: rec for rec in records}, held)
        tables = [pickle.loads(b) for b in link.swap(pickle.dumps(mine, 5))]
        tables.insert(me, mine)
        owner = _assign(tables) if reuse else {g: t for t, (rs, _h) in enumerate(tables)
                                                for g in rs}
        recs = {g: rec for rs, _h in tables for g, rec in rs.items() if owner[g] == me}
        opened: dict[int, Region] = {}

        def exchange(step: tuple[str, int], targets: list[int], common: Any,
                     per_region: dict[int, Any]) -> dict[int, Outbox]:
            ran = {}
            for g in targets:
                if g in recs:
                    if g not in opened:
                        opened[g] = _open(eid, recs[g], reuse, decodes, prog)
                    ran[g] = run_step(opened[g], prog, step, number, common, per_region.get(g))
            # others need only what steers the loop and what is addressed to them
            shared = {g: o.shared() for g, o in ran.items()}
            outs = dict(ran)
            for blob in link.swap(pickle.dumps(shared, 5)):
                outs.update(pickle.loads(blob))
            return outs

        rng = None if seed is None else random.Random(seed + ctx.partitionId())
        shuffle = None if rng is None else (lambda _dest, msgs: rng.shuffle(msgs))
        try:
            outcome = run_rounds(exchange, regions, prog.stages, gone, new, prog.part_of,
                                 shuffle)
        except BaseException as err:
            link.close(err)
            raise
        link.close()
        for g, rec in recs.items():
            yield ("s", _finish(eid, rec, opened[g], min_log) if g in opened else rec)
        yield ("o", pickle.dumps(outcome, 5))

    return run


def _assign(tables: list[tuple[dict[int, Record], dict[int, Stamp]]]) -> dict[int, int]:
    """Region -> the task that runs it this batch: one whose worker holds a copy it can bring
    up to date (the least loaded of them), else the task whose partition carries its record.
    Every task computes this from the same tables, so all agree; a region is decoded only
    where no worker holds it, and no worker ends up with a second copy of a region."""
    owner: dict[int, int] = {}
    load = [0] * len(tables)
    records = {g: (t, rec) for t, (rs, _h) in enumerate(tables) for g, rec in rs.items()}
    for g in sorted(records):
        home, (_g, _snaps, snap_at, chunks, _n) = records[g]
        usable = {snap_at, *(c[0] for c in chunks)}
        holders = [t for t, (_r, held) in enumerate(tables) if held.get(g) in usable]
        t = min(holders, key=lambda t: (load[t], t)) if holders else home
        owner[g] = t
        load[t] += 1
    return owner


def _open(eid: str, rec: Record, reuse: bool, decodes: Any, prog: Program) -> Region:
    """The region of ``rec`` as of its last chunk, logging from now on. Decoding runs with the
    cycle collector off: unpickling a region allocates millions of containers, and the
    collections they trigger doubled the time (a 2.4M-fact region: 34 s, 17 s without)."""
    g, snaps, snap_at, chunks, _pending = rec
    gc.disable()
    try:
        state = _current(eid, g, snap_at, chunks, reuse, prog)
        if state is None:
            decodes.add(1)
            state = _rebuild(snaps[-1], snap_at, chunks, prog)
    finally:
        gc.enable()
    state.log = []
    return state


def _finish(eid: str, rec: Record, state: Region, min_log: int) -> Record:
    """The region's new record: the changes logged since ``_open`` as one stamped chunk,
    compacted into a new snapshot when the log has grown; this worker keeps the copy."""
    g, snaps, snap_at, chunks, pending = rec
    ops, state.log = state.log, None
    at = chunks[-1][0] if chunks else snap_at
    if ops:
        at = (at[0] + 1, uuid.uuid4().hex)
        blob = pickle.dumps(ops, 5)
        chunks, pending = [*chunks, (at, blob)], pending + len(blob)
    if pending > min(MAX_LOG, max(min_log, COMPACT_SHARE * os.path.getsize(snaps[-1]))):
        snaps, snap_at, pending = _write(snaps, state, f"{eid}-{g}-{at[0]}-{at[1]}"), at, 0
        chunks = _recent(chunks)
    _keep(eid, g, at, state)
    return (g, snaps, snap_at, chunks, pending)


def _held(eid: str) -> dict[int, Stamp]:
    """The regions this worker holds and their stamps (module-level, as ``_keep``)."""
    return {g: at for (e, g), (at, _s) in _HELD.items() if e == eid}


def _keep(eid: str, g: int, at: Stamp, state: Region) -> None:
    """Hold ``state`` in this worker. A module-level function on purpose: the round's closure
    is pickled by value, so a global it named itself would be a fresh copy in every task.

    PySpark's daemon runs a full ``gc.collect()`` after every task of a reused worker, which
    walked every object of the held regions: 7 s a round on americas with nothing to do.
    ``gc.freeze`` moves what exists now out of the collector's sight (reference counting
    still frees a copy that is dropped). Copies of the ``HELD_ENGINES`` engines used last
    are kept; an older engine's would otherwise stay for the worker's life (a dropped copy
    costs a decode, never a wrong answer)."""
    _HELD[(eid, g)] = (at, state)
    _ENGINES.pop(eid, None)
    _ENGINES[eid] = None
    while len(_ENGINES) > HELD_ENGINES:  # an engine long gone: its copies only cost memory
        old = next(iter(_ENGINES))
        del _ENGINES[old]
        _PROGRAMS.pop(old, None)
        for key in [k for k in _HELD if k[0] == old]:
            del _HELD[key]
    gc.freeze()


def _recent(chunks: list[Chunk]) -> list[Chunk]:
    """The last chunks, up to ``KEEP_BYTES``, kept past a snapshot for workers a few rounds
    behind; every round carries them, so a load's large chunks must not stay."""
    kept: list[Chunk] = []
    size = 0
    for chunk in reversed(chunks):
        size += len(chunk[1])
        if size > KEEP_BYTES:
            break
        kept.append(chunk)
    return kept[::-1]


def _write(snaps: list[str], state: Region, name: str) -> list[str]:
    """Write a snapshot next to the last one; keep the one before (a rerun of this round reads
    it) and delete older ones."""
    path = os.path.join(os.path.dirname(snaps[-1]), name + ".pkl")
    with open(path + ".part", "wb") as f:
        pickle.dump(state, f, 5)
    os.replace(path + ".part", path)
    for old in snaps[:-1]:
        with contextlib.suppress(OSError):
            os.remove(old)
    return [snaps[-1], path]


def _current(eid: str, g: int, snap_at: Stamp, chunks: list[Chunk], reuse: bool,
             prog: Program) -> Region | None:
    """The region as of its last chunk from this worker's copy: as it is, or brought up to
    date with the chunks it missed (when the chunk it stopped at is still there, stamp and
    all); None when the snapshot must be decoded."""
    latest = chunks[-1][0] if chunks else snap_at
    held = _HELD.pop((eid, g), None) if reuse else None
    if held is not None:
        at, state = held
        if at == latest:
            return state
        stamps = [c[0] for c in chunks]
        if at in stamps or at == snap_at:
            bind(state, prog)
            for stamp, chunk in chunks:
                if stamp[0] > at[0]:
                    state.replay(pickle.loads(chunk))
            return state
        del state  # another history or too far behind: free it before decoding
    return None


def _rebuild(snap: str, snap_at: Stamp, chunks: list[Chunk], prog: Program) -> Region:
    with open(snap, "rb") as f:
        state: Region = bind(pickle.load(f), prog)
    for stamp, chunk in chunks:
        if stamp[0] > snap_at[0]:
            state.replay(pickle.loads(chunk))
    return state


def _visible_fn(eid: str, shipped: Any):
    def run(records: Iterator[Record]) -> Iterator[FactKey]:
        prog = _program(eid, shipped)
        for _g, snaps, snap_at, chunks, _n in records:
            yield from _rebuild(snaps[-1], snap_at, chunks, prog).visible()

    return run


def _query_fn(eid: str, shipped: Any, atom: Any, region: int | None):
    """The task of a query: matching rows of the regions asked, read from this worker's
    copy when it is current (no decode), else from snapshot + log; the copy is left as is."""

    def run(records: Iterator[Record]) -> Iterator[tuple]:
        for rec in records:
            g, snaps, snap_at, chunks, _n = rec
            if region is not None and g != region:
                continue
            held = _HELD.get((eid, g))
            latest = chunks[-1][0] if chunks else snap_at
            state = held[1] if held is not None and held[0] == latest else \
                _rebuild(snaps[-1], snap_at, chunks, _program(eid, shipped))
            yield from query_rows(state, atom)

    return run


def _counts_fn(eid: str, shipped: Any):
    def run(records: Iterator[Record]) -> Iterator[tuple[int, int]]:
        prog = _program(eid, shipped)
        for _g, snaps, snap_at, chunks, _n in records:
            state = _rebuild(snaps[-1], snap_at, chunks, prog)
            yield state.facts(), state.records()

    return run


class SparkRegions:
    """Regions in Spark executors (see the module docstring): one gang job per batch, or with
    ``gang`` False one job per round."""

    def __init__(self, spark: SparkSession, plan: Plan, pmap: PartitionMap, k: int = 2, *,
                 min_log: int = MIN_LOG, reuse: bool = True, snapshot_dir: str | None = None,
                 gang: bool = True, report_supports: bool = False,
                 columnar: bool = True) -> None:
        """``columnar`` False keeps every region per fact (``RegionState``), as before
        regions held columns: for comparison."""
        check_resident_plan(plan)
        self.min_log, self.reuse, self.gang = min_log, reuse, gang
        self.spark, self.sc = spark, spark.sparkContext
        self.parts = pmap.parts
        self.prog = Program(plan, locator(plan, pmap), k, report_supports=report_supports,
                            columnar=columnar)
        self.eid = uuid.uuid4().hex
        self._shipped = self.sc.broadcast((plan, pmap, k, report_supports, columnar))
        self.dir = snapshot_dir or tempfile.mkdtemp(prefix="netrules-regions-")
        if snapshot_dir is None:
            atexit.register(shutil.rmtree, self.dir, True)
        empty = []
        for g in range(self.parts):
            path = os.path.join(self.dir, f"{self.eid}-{g}-0.pkl")
            with open(path, "wb") as f:
                pickle.dump(new_region(self.prog, g), f, 5)
            empty.append((g, [path], (0, "0"), [], 0))
        # a gang's tasks must all run at once: no more tasks than task slots
        self.tasks = min(self.parts, self.sc.defaultParallelism) if gang else self.parts
        self.relay = _relay(self.sc) if gang else None
        self.rdd = self.sc.parallelize(empty, self.tasks)
        self._jobs = 0
        self._persisted: Any = None  # the last job's output, persisted and checkpointed
        self.decodes = self.sc.accumulator(0)  # snapshots decoded by rounds, all workers

    def batch(self, number: int, gone: list[FactKey], new: list[FactKey],
              rng: random.Random | None) -> Outcome:
        if not self.gang:
            def exchange(step: tuple[str, int], targets: list[int], common: Any,
                         per_region: dict[int, Any]) -> dict[int, Outbox]:
                return self.run(step, number, targets, common, per_region)

            return run_rounds(exchange, self.parts, self.prog.stages, gone, new,
                              self.prog.part_of, shuffler(rng))
        seed = None if rng is None else rng.getrandbits(48)
        assert self.relay is not None
        ticket = self.relay.ticket(self.tasks)
        payload = self.sc.broadcast((number, self.parts, gone, new, seed))
        fn = _gang_fn(self.eid, self._shipped, payload, ticket, self.min_log, self.reuse,
                      self.decodes)
        try:
            with _task_errors():
                outs = self._step(self.rdd.barrier().mapPartitions(
                    fn, preservesPartitioning=True))
        finally:
            payload.unpersist()
            self.relay.forget(ticket)
        outcome = Outcome()
        for blob in outs:
            outcome.merge(pickle.loads(blob))
        return outcome

    def _step(self, nxt: Any) -> list[Any]:
        """Run the job that makes ``nxt`` (records and outputs), keep its records as the
        state and return its outputs. The state is persisted and locally checkpointed, so
        lineage never grows; the job before's blocks are freed."""
        nxt.persist(StorageLevel.MEMORY_AND_DISK)  # not pipelined into what reads it
        nxt.localCheckpoint()
        with count_jobs(self.spark) as jobs:
            outs = nxt.filter(lambda r: r[0] == "o").map(lambda r: r[1]).collect()
        self._jobs += jobs.jobs
        if self._persisted is not None:
            self._persisted.unpersist()
        self._persisted = nxt
        self.rdd = nxt.filter(lambda r: r[0] == "s").map(lambda r: r[1])
        return outs

    def run(self, step: tuple[str, int], batch: int, targets: Iterable[int], common: Any,
            per_region: dict[int, Any]) -> dict[int, Outbox]:
        """One round as one job (round mode)."""
        # one broadcast for what every region reads, one per region for its own messages: a
        # task loads only the broadcasts it reads
        shared = self.sc.broadcast(common)
        own = {g: self.sc.broadcast(v) for g, v in per_region.items()}
        payload = self.sc.broadcast((step, batch, frozenset(targets), shared, own))
        fn = _round_fn(self.eid, self._shipped, payload, self.min_log, self.reuse,
                       self.decodes)
        try:
            outs = self._step(self.rdd.mapPartitions(fn, preservesPartitioning=True))
        finally:
            for b in (payload, shared, *own.values()):
                b.unpersist()  # the next round's closure still names them: not destroy()
        return {g: pickle.loads(blob) for g, blob in outs}

    def facts(self) -> Iterable[FactKey]:
        """Every visible fact, streamed partition by partition (a read, not the hot path)."""
        rdd = self.rdd.mapPartitions(_visible_fn(self.eid, self._shipped))
        # a barrier stage runs all its partitions in one job: no streaming one by one
        return rdd.collect() if self.gang else rdd.toLocalIterator()

    def query(self, atom: Any, region: int | None) -> list[tuple]:
        """Rows matching ``atom`` in ``region`` (None: all), one job."""
        with count_jobs(self.spark) as jobs:
            rows = self.rdd.mapPartitions(_query_fn(self.eid, self._shipped, atom,
                                                    region)).collect()
        self._jobs += jobs.jobs
        return sorted(set(rows), key=repr)

    def counts(self) -> tuple[int, int]:
        pairs = self.rdd.mapPartitions(_counts_fn(self.eid, self._shipped)).collect()
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    def jobs(self) -> int:
        return self._jobs


class ResidentEngine(RegionalEngine):
    """A program's views kept in Spark, region by region (``--state spark``)."""

    def __init__(self, plan: Plan, facts: Iterable[Fact] | None = None, *,
                 spark: SparkSession | None = None, parts: int = 4, k: int = 2,
                 rng: random.Random | None = None, **regions: Any) -> None:
        """Regions are cut from the topology ``facts`` draw, loaded here (``loaded`` is the
        load's delta); with ``facts`` None, from the topology the first batch draws (the
        pipeline makes its engine before the first batch, which is the topology load).
        ``regions``: SparkRegions' ``min_log``, ``reuse``, ``snapshot_dir``, ``gang``,
        ``report_supports`` (on: ``explain`` works, for the pipeline's derivations) and
        ``columnar``."""
        check_resident_plan(plan)
        self.spark, self.parts, self.k, self._options = spark, parts, k, regions
        super().__init__(plan, None, rng=rng)
        self.loaded = None if facts is None else self.load(facts)

    def _place(self, batch: list[tuple]) -> SparkRegions:
        facts = [*self.plan.program.facts, *(u[1] for u in batch if u[0] == "+")]
        pmap = PartitionMap.from_facts(facts, self.parts)
        return SparkRegions(self.spark or get_spark(), self.plan, pmap, self.k,
                            **self._options)


def run_resident_batches(plan: Plan, facts: list[Fact], batches: list[list[tuple[str, Fact]]],
                         *, rng: random.Random | None = None) -> list[dict[str, list[Fact]]]:
    """The CLI's ``eval --engine spark --state spark``: views after loading, then after each
    batch (``rng`` shuffles each batch and every region's inbox)."""
    engine = ResidentEngine(plan, facts, rng=rng)
    return [engine.views(), *views_after(engine, batches, rng)]
