"""The one module that builds SparkSessions, and a counter of the Spark jobs a piece of work ran.

Local mode (``local[2]``) is the embedded default; ``spark://host:7077`` is the scale-out path.
A Spark job costs about 0.2 s here, so every hot path reports how many it ran.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

__all__ = ["get_spark", "JobCounter", "count_jobs"]

_lock = threading.Lock()


def get_spark(master: str | None = None, app_name: str = "netrules") -> SparkSession:
    """A SparkSession tuned for small, latency-bound work: UI off, few shuffle partitions."""
    master = master or os.environ.get("NETRULES_SPARK_MASTER", "local[2]")
    driver_host = os.environ.get("NETRULES_DRIVER_HOST", "127.0.0.1")
    os.environ.setdefault("SPARK_LOCAL_IP", driver_host)  # bind to loopback unless told
    with _lock:
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.default.parallelism", "2")
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            # loopback unless told: a real cluster sets NETRULES_DRIVER_HOST to an address
            # its executors can reach (docs/deploy.md)
            .config("spark.driver.bindAddress", os.environ.get("NETRULES_DRIVER_BIND",
                                                               driver_host))
            .config("spark.driver.host", driver_host)
            .config("spark.python.worker.reuse", "true")
            .config("spark.driver.memory", os.environ.get("NETRULES_DRIVER_MEMORY", "4g"))
        )
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        return spark


class JobCounter:
    """Counts the Spark jobs started inside a ``with`` block, by job group."""

    _seq = 0

    def __init__(self, spark: SparkSession) -> None:
        self.sc = spark.sparkContext
        JobCounter._seq += 1
        self.group = f"netrules-{os.getpid()}-{JobCounter._seq}"
        self.jobs = 0

    def __enter__(self) -> JobCounter:
        self.sc.setJobGroup(self.group, "netrules", interruptOnCancel=False)
        return self

    def __exit__(self, *exc: object) -> None:
        self.jobs = len(self.sc.statusTracker().getJobIdsForGroup(self.group))
        self.sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]


@contextmanager
def count_jobs(spark: SparkSession) -> Iterator[JobCounter]:
    counter = JobCounter(spark)
    with counter:
        yield counter
