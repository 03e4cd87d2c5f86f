"""The streaming driver: Spark Structured Streaming over the event-log directory, one engine
batch per micro-batch in ``foreachBatch``.

Exactly-once across crashes comes from three pieces that each cover a gap of the others:
Spark's checkpoint (offsets are logged before a batch runs, so a replay sees the same files
under the same batch id), the store's idempotent ``write_batch`` (a replayed batch id that
was committed is skipped), and applied event ids (an event is never applied twice, whatever
the batching). Inside ``foreachBatch`` the only Spark job is the collect of the micro-batch's
lines, which are small; views never leave the engine.

Caveat: Spark picks new files by modification time, so segments must be written in order
(:mod:`netrules.pipeline.sources` makes their mtimes strictly increasing); rows of one
micro-batch are re-sorted by segment name and line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from netrules.pipeline.batch import BatchProcessor
from netrules.pipeline.recover import parse_lines, stream_base

__all__ = ["StreamResult", "run_stream"]


@dataclass
class StreamResult:
    batches: int = 0
    replayed: int = 0
    events: int = 0
    spark_jobs: list[int] = field(default_factory=list)
    bad_lines: list[str] = field(default_factory=list)


def run_stream(processor: BatchProcessor, events_dir: str, checkpoint: str, *,
               spark_master: str | None = None, max_files_per_trigger: int = 1,
               trigger_seconds: float = 1.0, follow: bool = False,
               timeout: float | None = None,
               on_bad_line: Callable[[str], None] | None = None) -> StreamResult:
    """Run the streaming query until the log is drained (``follow=False``: Spark's
    availableNow trigger) or forever/``timeout`` seconds (``follow=True``)."""
    from netrules.engine.session import count_jobs, get_spark  # pyspark stays in engine/

    spark = get_spark(spark_master)
    Path(events_dir).mkdir(parents=True, exist_ok=True)
    base = stream_base(processor.store, checkpoint)
    result = StreamResult()
    lines = (spark.readStream.format("text")
             .option("maxFilesPerTrigger", max(1, max_files_per_trigger))
             .option("pathGlobFilter", "events-*.jsonl")
             .load(str(Path(events_dir).resolve()))
             .selectExpr("value", "_metadata.file_name AS file"))

    def each(batch_df, spark_batch_id: int) -> None:
        bid = base + int(spark_batch_id)
        if processor.last_batch is not None and bid <= processor.last_batch:
            result.replayed += 1  # committed before a crash; Spark replays it: skip unread
            return
        with count_jobs(spark) as jobs:
            rows = batch_df.collect()
        numbered: list[tuple[str, int, str]] = []
        line_no: dict[str, int] = {}
        for r in rows:  # rows of one file arrive in file order: number them as they come
            line_no[r.file] = line_no.get(r.file, 0) + 1
            numbered.append((str(Path(events_dir) / r.file), line_no[r.file], r.value or ""))
        numbered.sort(key=lambda x: (x[0], x[1]))
        events, bad = parse_lines(numbered)
        for msg in bad:
            result.bad_lines.append(msg)
            if on_bad_line:
                on_bad_line(msg)
        rec = processor.process(bid, events, bad_lines=bad,
                                extra_stats={"spark_jobs": jobs.jobs,
                                             "spark_batch_id": int(spark_batch_id)})
        if rec is not None:
            result.batches += 1
            result.events += len(rec.events)
            result.spark_jobs.append(int(rec.stats.get("spark_jobs", 0)))

    writer = (lines.writeStream.foreachBatch(each)
              .option("checkpointLocation", checkpoint)
              .queryName("netrules"))
    writer = (writer.trigger(processingTime=f"{trigger_seconds} seconds") if follow
              else writer.trigger(availableNow=True))
    query = writer.start()
    try:
        if timeout is None:
            query.awaitTermination()
        else:
            query.awaitTermination(timeout)
    except KeyboardInterrupt:
        pass
    finally:
        query.stop()
    return result
