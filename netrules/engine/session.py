"""The one module that builds SparkSessions, and a counter of the Spark jobs a piece of work ran.

Local mode (``local[2]``) is the embedded default; ``spark://host:7077`` is the scale-out path.
A Spark job costs about 0.2 s here, so every hot path reports how many it ran.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

__all__ = ["get_spark", "spark_log_path", "JobCounter", "count_jobs"]

_lock = threading.Lock()

# log4j2 for the driver JVM: everything to one file, nothing on the console, so a command's
# output is its own (NETRULES_VERBOSE=1, the CLI's --verbose, keeps Spark's console logging).
_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
# WARN, Spark's own default for PySpark: any other level makes it print "Setting default log
# level" on the console
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
"""


def spark_log_path() -> Path:
    """Where Spark's and the JVM's logs go: $NETRULES_SPARK_LOG, else a per-user temp file."""
    env = os.environ.get("NETRULES_SPARK_LOG")
    if env:
        return Path(env).resolve()
    return Path(tempfile.gettempdir()) / f"netrules-{os.getuid()}" / "spark.log"


def _log_to_file() -> str:
    """Write the log4j2 properties beside the log; the -D option naming them."""
    log = spark_log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    props = log.with_name(log.name + ".log4j2.properties")
    props.write_text(_LOG4J2.format(path=str(log).replace("\\", "/")), encoding="utf-8")
    return f"-Dlog4j2.configurationFile={props.as_uri()}"


def get_spark(master: str | None = None, app_name: str = "netrules") -> SparkSession:
    """A SparkSession tuned for small, latency-bound work: UI off, few shuffle partitions."""
    master = master or os.environ.get("NETRULES_SPARK_MASTER", "local[2]")
    driver_host = os.environ.get("NETRULES_DRIVER_HOST", "127.0.0.1")
    os.environ.setdefault("SPARK_LOCAL_IP", driver_host)  # bind to loopback unless told
    # Python workers run this interpreter, not whatever python3 is first on PATH (a venv's
    # netrules started without activating the venv would give workers without lark).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    verbose = os.environ.get("NETRULES_VERBOSE", "") not in ("", "0")
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
        if not verbose:
            builder = builder.config("spark.driver.extraJavaOptions", _log_to_file())
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
