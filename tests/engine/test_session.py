"""How a SparkSession is built: workers run netrules' interpreter, and logs stay off the console.

Both run in a fresh process, because the JVM's options and the workers' interpreter are fixed
when the first session starts (the suite's shared session would hide either defect).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

_JOB = """
import sys
from netrules.engine.session import get_spark
spark = get_spark()
worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__('sys').executable)
print("WORKER", worker.collect()[0])
spark.stop()
"""


def _run(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    # A bare venv's python3 first on PATH: it has no pyspark, so a worker started from PATH
    # fails, as one without lark did for a venv's netrules run without activating the venv.
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "NETRULES_VERBOSE")}
    env.update(PATH=f"{bare / 'bin'}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=str(ROOT), NETRULES_SPARK_LOG=str(tmp_path / "spark.log"))
    return subprocess.run([sys.executable, "-c", _JOB], env=env, capture_output=True,
                          text=True, timeout=300)


def test_workers_use_netrules_interpreter_and_logs_go_to_a_file(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"WORKER {sys.executable}" in done.stdout
    # Spark's console chatter (log4j lines such as "WARN NativeCodeLoader" or "Setting default
    # log level") went to the file instead.
    assert not [line for line in done.stderr.splitlines()
                if " WARN " in line or " INFO " in line or "log level" in line], done.stderr
    log = tmp_path / "spark.log"
    assert log.is_file()  # the appender opens it at start-up, even with nothing to say yet
