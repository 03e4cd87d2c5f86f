"""Scale-out: the end-to-end run and the Spark evaluator on a real standalone cluster give
exactly what local mode and the reference evaluator give, and so do views kept in the
executors (``--state spark``), whose gang jobs span both workers.

Why a subprocess for the cluster driver: a Python process holds one SparkContext, and the rest
of the suite shares a session-scoped ``local[2]`` one; the cluster driver therefore runs in its
own interpreter (this file, run as a script) and reports back as JSON. It drives the real CLI
(``netrules run ... --spark-master spark://...``) and then ``spark_evaluate`` in the same
session, whose ``applyInPandas`` rounds import ``netrules`` inside the executors' Python
workers. The store is written by the driver, so the cluster needs no access to it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

RUN_ARGS = ["run", "reachability", "--simulate", "ring:8", "--fail-link", "n1", "n2",
            "--engine", "spark", "--once"]
DRIVER_TIMEOUT_S = 240


def _cluster_driver(master: str, store: str, events: str, out: str) -> None:
    """Runs in the subprocess: the CLI on the cluster, then spark_evaluate vs the reference."""
    from pyspark.sql import SparkSession

    from netrules import programs
    from netrules.cli import main
    from netrules.engine.reference import evaluate_program
    from netrules.engine.session import get_spark
    from netrules.engine.spark.fixpoint import frame_facts, spark_evaluate
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    t0 = time.perf_counter()
    main([*RUN_ARGS, "--store", store, "--events-dir", events, "--spark-master", master],
         standalone_mode=False)
    run_s = time.perf_counter() - t0
    spark = SparkSession.getActiveSession() or get_spark(master)
    sc = spark.sparkContext
    plan = plan_program(programs.load("reachability"))
    facts = link_facts(load_topology("ring:8"))
    df, stats = spark_evaluate(spark, plan, facts, parts=2)
    got: dict[str, list] = {}
    for f in frame_facts(df, plan):
        got.setdefault(f.relation, []).append(list(f.args))
    want = {r: sorted(list(f.args) for f in fs)
            for r, fs in evaluate_program(plan, facts).items() if fs}
    # views kept in the executors (--state spark): one gang job per batch, its tasks on both
    # workers swapping outboxes through the driver's relay
    from netrules.engine.spark.resident import ResidentEngine

    eng = ResidentEngine(plan, facts, spark=spark, parts=2)
    cut = [f for f in facts if {f.args[0], f.args[1]} == {"n1", "n2"}]
    d = eng.apply([("-", f) for f in cut])
    kept = {r: sorted(list(f.args) for f in fs) for r, fs in eng.views().items() if fs}
    after = {r: sorted(list(f.args) for f in fs)
             for r, fs in evaluate_program(plan, set(facts) - set(cut)).items() if fs}
    # which executors ran the Python workers (proves the work left the driver)
    # (a Python worker's cwd is its executor's directory under the worker's work dir)
    execs = sorted(set(sc.parallelize(range(16), 8).map(
        lambda _: __import__("os").getcwd()).collect()))
    Path(out).write_text(json.dumps({
        "master": sc.master,
        "executors": [e.host() for e in sc._jsc.sc().statusTracker().getExecutorInfos()],
        "task_dirs": execs,
        "run_s": run_s,
        "rounds": stats.rounds,
        "spark_jobs": stats.spark_jobs,
        "spark_equal_reference": {r: sorted(v) for r, v in got.items()} == want,
        "view_sizes": {r: len(v) for r, v in want.items()},
        "resident_equal_reference": kept == after,
        "resident_jobs": d.stats.spark_jobs,
        "resident_rounds": d.stats.rounds,
    }))
    spark.stop()



def _beside_the_cluster(cluster, driver_argv: list[str], cli_args: list[str],
                        out: Path) -> dict:
    """Run this file as the cluster's driver (``driver_argv``) while the CLI runs
    ``cli_args`` in process (the two overlap: each mostly waits on its own JVM); both must
    succeed. Returns the driver's JSON report."""
    from click.testing import CliRunner

    from netrules.cli import main

    with subprocess.Popen([sys.executable, __file__, *driver_argv], env=cluster.env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            res = CliRunner().invoke(main, cli_args)
            output, _ = proc.communicate(timeout=DRIVER_TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert res.exit_code == 0, res.output
    assert proc.returncode == 0, (f"cluster driver failed:\n{output[-3000:]}\n"
                                  f"{cluster.log_tail()}")
    return json.loads(out.read_text())

def test_standalone_cluster_matches_local(standalone_cluster, spark, tmp_path: Path) -> None:
    """Same CLI run on 2 workers and in local mode: identical store views; spark_evaluate on
    the cluster equals the reference evaluator."""

    from netrules.store import open_store

    out = tmp_path / "driver.json"
    cluster_store = tmp_path / "cluster.db"
    # the cluster driver and the local run overlap: each mostly waits on its own JVM
    local_store = tmp_path / "local.db"
    report = _beside_the_cluster(
        standalone_cluster, [standalone_cluster.master, str(cluster_store),
                             str(tmp_path / "events-cluster"), str(out)],
        [*RUN_ARGS, "--store", str(local_store), "--events-dir", str(tmp_path / "events-local"),
         "--spark-master", "local[2]"], out)
    print("cluster driver:", json.dumps(report))
    assert report["master"] == standalone_cluster.master
    assert len(report["executors"]) == 1 + 2  # the driver and one executor per worker
    work = str(standalone_cluster.work)
    assert len(report["task_dirs"]) == 2, report  # tasks ran in both workers' executors
    assert all(d.startswith(work) for d in report["task_dirs"]), report
    assert report["spark_equal_reference"], report
    assert report["resident_equal_reference"], report
    assert report["resident_jobs"] == 1 < report["resident_rounds"], report

    cluster_views = open_store(str(cluster_store), read_only=True).snapshot()
    local_views = open_store(str(local_store), read_only=True).snapshot()
    assert cluster_views == local_views
    # ring:8 minus one bidirectional link is a line: 8 nodes all still reach each other
    assert len(cluster_views["reachable"]) == 64
    assert len(cluster_views["link"]) == 14


RESIDENT_ARGS = ["run", "reachability", "--simulate", "line:5", "--scenario",
                 str(Path(__file__).parents[2] / "examples" / "line-failure.scenario"),
                 "--once", "-q"]


def _resident_driver(master: str, store: str, events: str, out: str) -> None:
    """Runs in the subprocess: the pipeline with its views in the cluster's executors."""
    from pyspark.sql import SparkSession

    from netrules.cli import main
    from netrules.store import open_store

    t0 = time.perf_counter()
    main([*RESIDENT_ARGS, "--store", store, "--events-dir", events, "--engine", "spark",
          "--state", "spark", "--spark-master", master], standalone_mode=False)
    run_s = time.perf_counter() - t0
    sc = SparkSession.getActiveSession().sparkContext  # type: ignore[union-attr]
    with open_store(store, read_only=True) as s:
        jobs = [b.stats.get("spark_jobs") for b in s.batches(limit=100)]
    Path(out).write_text(json.dumps({
        "master": sc.master, "run_s": run_s, "jobs": jobs,
        "executors": [e.host() for e in sc._jsc.sc().statusTracker().getExecutorInfos()]}))


def test_run_state_spark_on_the_cluster_equals_in_process(standalone_cluster,
                                                          tmp_path: Path) -> None:
    """``netrules run --engine spark --state spark`` on the cluster, a link failing and
    recovering: the store's views, its change log and the alerts equal the in-process run's
    (``--engine reference``), one Spark job per batch."""

    from netrules.store import open_store
    from tests.pipeline.test_resident_run import alerts_of

    out, store = tmp_path / "resident.json", tmp_path / "resident.db"
    ref = tmp_path / "ref.db"
    report = _beside_the_cluster(
        standalone_cluster, ["resident", standalone_cluster.master, str(store),
                             str(tmp_path / "events-resident"), str(out)],
        [*RESIDENT_ARGS, "--store", str(ref), "--events-dir", str(tmp_path / "events-ref"),
         "--engine", "reference"], out)
    print("resident run on the cluster:", json.dumps(report))
    assert report["master"] == standalone_cluster.master
    assert report["jobs"] == [1, 1, 1], report
    assert len(report["executors"]) == 1 + 2  # the driver and one executor per worker
    with open_store(str(ref), read_only=True) as a, open_store(str(store), read_only=True) as b:
        assert a.snapshot() == b.snapshot()
        assert [c[:2] + c[3:] for c in a.changes()] == [c[:2] + c[3:] for c in b.changes()]
    alerts = alerts_of(store)
    assert alerts == alerts_of(ref)
    assert {a[2] for a in alerts} == {"cleared"} and len(alerts) == 12  # the line split, healed


if __name__ == "__main__":
    if sys.argv[1] == "resident":
        _resident_driver(*sys.argv[2:6])
    else:
        _cluster_driver(*sys.argv[1:5])
