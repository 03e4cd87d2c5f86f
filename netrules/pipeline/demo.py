"""``netrules demo``: the whole pipeline on Abilene in a few seconds, into ``./netrules-demo``.

Simulator -> event log -> engine (path_vector) -> store, printing alerts as they fire: the
first failure only reroutes, the second cuts Seattle off (every route to and from it is lost),
the recoveries clear the alerts. The scenario is carried here (and copied to
``examples/abilene-failure.scenario``) so the demo runs from an installed wheel too.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netrules import programs
from netrules.eventlog import EventLog
from netrules.pipeline.run import RunOptions, check_program, run_pipeline
from netrules.pipeline.sources import append_new, simulation, topology_rows
from netrules.plan import plan_program
from netrules.store import open_store

__all__ = ["DEMO_SCENARIO", "run_demo"]

DEMO_SCENARIO = """\
# The netrules demo: Abilene (11 nodes, 14 links) under path-vector routing.
# Seattle has two links; losing one reroutes, losing both cuts it off.
at 10 fail link Seattle Denver        # reroute via Sunnyvale: no route is lost
at 20 fail link Seattle Sunnyvale     # Seattle is cut off: every route to and from it is lost
at 30 recover link Seattle Sunnyvale  # routes come back, the alerts clear
at 40 recover link Seattle Denver
"""

_STEPS = {0.0: "initial topology: every link up",
          10.0: "t=10 fail link Seattle-Denver (reroute via Sunnyvale)",
          20.0: "t=20 fail link Seattle-Sunnyvale (Seattle is cut off)",
          30.0: "t=30 recover link Seattle-Sunnyvale",
          40.0: "t=40 recover link Seattle-Denver"}


def run_demo(directory: str = "netrules-demo", *, once: bool = True, keep: bool = False,
             echo: Callable[[str], Any] = print,
             on_batch: Callable[[Any, bool], None] | None = None) -> Path:
    """Run the demo into ``directory``; returns the store path."""
    t0 = time.perf_counter()
    root = Path(directory)
    store_path = root / "netrules.db"
    events_dir = root / "events"
    if not keep:  # remove only what an earlier demo wrote
        for p in (store_path, Path(f"{store_path}-wal"), Path(f"{store_path}-shm")):
            p.unlink(missing_ok=True)
        for d in (events_dir, Path(f"{events_dir}.checkpoint")):
            shutil.rmtree(d, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    scenario_file = root / "abilene-failure.scenario"
    scenario_file.write_text(DEMO_SCENARIO, encoding="utf-8")

    prog = programs.load("path_vector")
    plan = plan_program(prog)
    sim = simulation("abilene", str(scenario_file))
    g = sim.graph
    echo(f"netrules demo: Abilene ({g.number_of_nodes()} nodes, {g.number_of_edges()} links), "
         f"program path_vector, {'--once' if once else 'Spark Structured Streaming'}")
    n = append_new(EventLog(events_dir), sim.events)
    echo(f"simulator -> event log {events_dir}: {n} events in "
         f"{len(EventLog(events_dir).segments())} segments")

    def batch(rec: Any, written: bool) -> None:
        step = _STEPS.get(rec.time, f"t={rec.time:g}")
        counts = {r: len(v) for r, v in rec.added.items() if r in plan.visible}
        gone = {r: len(v) for r, v in rec.removed.items() if r in plan.visible}
        echo(f"[batch {rec.batch_id}] {step}: +{sum(counts.values())} "
             f"-{sum(gone.values())} facts, {len(rec.alerts_raised)} alerts raised, "
             f"{len(rec.alerts_cleared)} cleared ({rec.stats.get('seconds', 0):.2f} s)")
        if on_batch:
            on_batch(rec, written)

    with open_store(str(store_path)) as store:
        check_program(store, "path_vector", prog.source)
        store.set_meta("events_dir", str(events_dir.resolve()))
        if not store.topology()[0]:
            store.set_topology(*topology_rows(g))
        opts = RunOptions(store=str(store_path), events_dir=str(events_dir), once=once)
        summary = run_pipeline(plan, store, opts, on_batch=batch, on_compile=echo)
        active = store.alerts(active_only=True)
        total = store.alerts()
        example = store.read_view("bestPath", where={0: "Seattle", 1: "New York"})
    s = str(store_path)
    echo(f"done in {time.perf_counter() - t0:.1f} s: {summary.batches} batches, "
         f"{len(total)} alerts raised, {len(active)} still active; store {s}")
    echo("next:")
    echo(f"  netrules traceroute --store {s} 'New York' Seattle")
    if example:  # capitalised names are quoted in NDlog ("Seattle"), or they are variables
        echo(f"  netrules why --store {s} '{example[0]}'")
    echo(f"  netrules alerts --store {s}")
    echo(f"  netrules dashboard --store {s}")
    return store_path
