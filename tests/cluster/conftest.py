"""A throwaway Spark standalone cluster on 127.0.0.1: one master and two 1-core/1g workers.

Why processes and not ``local-cluster[...]``: the scale-out path users take is a standalone (or
Kubernetes) master with separate worker JVMs, so the test launches exactly those daemons with
the pyspark package's own launcher (``pyspark/bin/spark-class``; the pip package ships no
``sbin/start-master.sh`` / ``start-worker.sh``). Every daemon runs in its own process group and
is killed in the fixture finalizer, even when the test fails. When the daemons cannot start
(no Java, a port race, a sandbox forbidding sockets) the test is skipped with the reason and
the tail of the daemon logs, never silently; under ``CI=true`` it fails instead, since a
skipped cluster test in CI would hide a broken cluster setup.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1g"
START_TIMEOUT_S = 60.0


def unavailable(reason: str) -> None:
    """Skip the cluster tests for ``reason``; fail them when CI is set (``CI=true``): there the
    cluster must come up, and a skip would let a broken setup pass unnoticed."""
    if os.environ.get("CI", "").lower() in ("true", "1", "yes"):
        pytest.fail(f"CI: {reason}", pytrace=False)
    pytest.skip(reason)


@dataclass
class Cluster:
    """What a test needs to use the cluster: its master URL and the environment to run in."""

    master: str
    ui: str
    env: dict[str, str]
    logs: Path
    work: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    def alive_workers(self) -> int:
        """ALIVE workers as the master reports them (its JSON endpoint, loopback only)."""
        with urllib.request.urlopen(self.ui + "/json/", timeout=2) as r:  # noqa: S310
            state = json.load(r)
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for f in sorted(self.logs.glob("*.log")):
            text = f.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {f.name}\n" + "\n".join(text))
        return "\n".join(out)


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the daemon binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def cluster_env(tmp: Path) -> dict[str, str]:
    """Environment for daemons and drivers: loopback only, logs and scratch under ``tmp``."""
    conf = tmp / "conf"
    conf.mkdir(exist_ok=True)  # an empty conf dir: no stray spark-defaults.conf leaks in
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONF_DIR": str(conf),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
        "SPARK_LOG_DIR": str(tmp / "logs"),
        "SPARK_WORKER_DIR": str(tmp / "work"),
        "SPARK_LOCAL_DIRS": str(tmp / "scratch"),
        "SPARK_DAEMON_MEMORY": "512m",
        # the master's REST submission server listens on the fixed port 6066: keep it off so
        # concurrent runs on one machine cannot collide
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        # executors start Python workers with the driver's interpreter: same venv, so
        # ``import netrules`` works on them (docs/deploy.md says how to ship it elsewhere)
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "NETRULES_DRIVER_MEMORY": "1g",
    })
    env.pop("NETRULES_SPARK_MASTER", None)
    return env


def _kill(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each daemon's process group (it owns the executors), then SIGKILL stragglers."""
    for p in procs:
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=5)


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Start master + workers, wait until both workers registered, yield, tear down."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("Spark standalone cluster: no Java on PATH and no JAVA_HOME")
    spark_class = spark_home() / "bin" / "spark-class"
    if not spark_class.exists():
        unavailable(f"Spark standalone cluster: {spark_class} is not in the pyspark package")
    tmp = tmp_path_factory.mktemp("standalone")
    env = cluster_env(tmp)
    logs = tmp / "logs"
    for d in ("logs", "work", "scratch"):
        (tmp / d).mkdir()
    port, ui_port = free_port(), free_port()
    master = f"spark://127.0.0.1:{port}"
    cluster = Cluster(master, f"http://127.0.0.1:{ui_port}", env, logs, tmp / "work")

    def launch(name: str, *args: str) -> None:
        log = open(logs / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        cluster.procs.append(subprocess.Popen(
            [str(spark_class), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True))
        log.close()

    try:
        launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
               "--port", str(port), "--webui-port", str(ui_port))
        for i in range(WORKERS):
            launch(f"worker{i + 1}", "org.apache.spark.deploy.worker.Worker",
                   "--host", "127.0.0.1", "--port", str(free_port()),
                   "--webui-port", str(free_port()), "--cores", str(WORKER_CORES),
                   "--memory", WORKER_MEMORY, "--work-dir", str(tmp / "work" / f"w{i + 1}"),
                   master)
        deadline = time.monotonic() + START_TIMEOUT_S
        alive = 0
        while time.monotonic() < deadline:
            dead = [p for p in cluster.procs if p.poll() is not None]
            if dead:
                break
            try:
                alive = cluster.alive_workers()
            except OSError:
                alive = 0
            if alive >= WORKERS:
                break
            time.sleep(0.5)
        if alive < WORKERS:
            reason = (f"Spark standalone cluster did not come up ({alive}/{WORKERS} workers "
                      f"alive after {START_TIMEOUT_S:.0f} s)\n{cluster.log_tail()}")
            _kill(cluster.procs)
            unavailable(reason)
        yield cluster
    finally:
        _kill(cluster.procs)
