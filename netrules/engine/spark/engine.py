"""The Spark-backed engine: exact incremental maintenance on a hot path sized to the change,
with the views mirrored into Spark and Spark doing every from-scratch evaluation.

Per batch the maintenance strategy (PSN with bounded supports by default) touches only the
affected facts, in memory on the driver; the net change is appended to the Spark mirror as a
local relation, which runs no Spark job, and the mirror's lineage is cut by a local checkpoint
every ``checkpoint_every`` batches (one job). Initial materialisation, the rematerialisation
path and consistency audits run on Spark with the partitioned many-hops-per-job evaluator.

The hot-path state (facts and kept supports) lives on the driver here, so a view must fit in
driver memory; ``spark/resident.py`` (``--state spark``) keeps it in executors instead.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from pyspark.sql import DataFrame, SparkSession

from netrules.engine.engine import Engine
from netrules.engine.runner import views_after
from netrules.engine.session import count_jobs, get_spark
from netrules.engine.spark.fixpoint import (
    SCHEMA,
    SparkRunStats,
    encode_args,
    frame_facts,
    locator,
    spark_evaluate,
)
from netrules.engine.spark.partition import PartitionMap
from netrules.engine.strategies.base import Delta
from netrules.facts import Fact
from netrules.plan import Plan

__all__ = ["SparkEngine", "run_spark_batches"]


class SparkEngine(Engine):
    """Engine whose views are mirrored in Spark; see the module docstring for the split."""

    def __init__(self, plan: Plan, strategy: str = "auto", *, spark: SparkSession | None = None,
                 rng: random.Random | None = None, parts: int = 4,
                 checkpoint_every: int = 20) -> None:
        from netrules.engine.spark.fixpoint import check_spark_plan

        check_spark_plan(plan)
        super().__init__(plan, strategy, rng=rng)
        self.spark = spark or get_spark()
        self.parts = parts
        self.checkpoint_every = checkpoint_every
        self.pmap: PartitionMap | None = None
        self.mirror: DataFrame = self.spark.createDataFrame([], SCHEMA)
        self._since_checkpoint = 0
        self._pending: dict[tuple[str, tuple], bool] = {}

    def _rows(self, d: dict[str, set[tuple]]) -> list[tuple]:
        assert self.pmap is not None
        part_of = locator(self.plan, self.pmap)
        return [(part_of(rel, row), rel, encode_args(row), False)
                for rel, rows in d.items() for row in rows]

    def apply(self, batch: Iterable[tuple[str, Fact]]) -> Delta:
        """Maintain on the hot path; the mirror takes the net change when next read, or every
        ``checkpoint_every`` batches, so a batch costs no Spark job and no Py4J round trip."""
        batch = list(batch)
        if self.pmap is None:
            self.pmap = PartitionMap.from_facts([u[1] for u in batch], self.parts)
        delta = super().apply(batch)
        for change, present in ((delta.removed, False), (delta.added, True)):
            for rel, rows in change.items():
                for row in rows:
                    if (rel, row) in self._pending:  # an earlier opposite change: they cancel
                        del self._pending[(rel, row)]
                    else:
                        self._pending[(rel, row)] = present
        self._since_checkpoint += 1
        if self._since_checkpoint >= self.checkpoint_every:
            with count_jobs(self.spark) as jobs:
                self._flush(checkpoint=True)
            delta.stats.spark_jobs += jobs.jobs
        return delta

    def _flush(self, checkpoint: bool = False) -> None:
        """Fold pending net changes into the mirror (no job unless ``checkpoint``)."""
        if self._pending:
            gone = {r: set() for r, _ in self._pending}
            new = {r: set() for r, _ in self._pending}
            for (rel, row), present in self._pending.items():
                (new if present else gone)[rel].add(row)
            gone_rows, new_rows = self._rows(gone), self._rows(new)
            if gone_rows:
                g = self.spark.createDataFrame(gone_rows, SCHEMA).select("rel", "args")
                self.mirror = self.mirror.join(g, ["rel", "args"], "left_anti").select(
                    "part", "rel", "args", "new")
            if new_rows:
                self.mirror = self.mirror.unionByName(self.spark.createDataFrame(new_rows,
                                                                                 SCHEMA))
            self._pending.clear()
        if checkpoint:
            self.mirror = self.mirror.localCheckpoint(eager=True)
            self._since_checkpoint = 0

    def views_frame(self) -> DataFrame:
        """Every fact as a Spark DataFrame ``(part, rel, args, new)``."""
        self._flush()
        return self.mirror

    def evaluate_from_scratch(self) -> tuple[DataFrame, SparkRunStats]:
        """Recompute every view on Spark from the current base facts (same session)."""
        base = self.state.ledger.present()
        return spark_evaluate(self.spark, self.plan, base, parts=self.parts, pmap=self.pmap)

    def audit(self) -> list[str]:
        """Differences between the maintained views and a from-scratch Spark evaluation."""
        df, _ = self.evaluate_from_scratch()
        fresh = {(f.relation, f.args) for f in frame_facts(df, self.plan)}
        kept = {(r, row) for r, rows in self.state.db.rel.items() for row in rows}
        return sorted(f"+{r}{a}" for r, a in kept - fresh) + \
            sorted(f"-{r}{a}" for r, a in fresh - kept)


def run_spark_batches(plan: Plan, facts: list[Fact], batches: list[list[tuple[str, Fact]]], *,
                      strategy: str | None = None, rng: random.Random | None = None
                      ) -> list[dict[str, list[Fact]]]:
    """The CLI's ``eval --engine spark``: initial views from Spark, then maintained batches."""
    engine = SparkEngine(plan, strategy or "auto", rng=rng)
    engine.pmap = PartitionMap.from_facts(facts, engine.parts)
    df, _ = spark_evaluate(engine.spark, plan, facts, parts=engine.parts, pmap=engine.pmap)
    initial: dict[str, list[Fact]] = {}
    for f in frame_facts(df, plan):
        initial.setdefault(f.relation, []).append(f)
    engine.load(facts)
    return [initial, *views_after(engine, batches, rng)]
