"""Where a link event's time goes in the running pipeline: the engine, the derivations and
alerts, and the store write, batch by batch.

Why: the engine benches time the engine alone, but an operator waits for the whole batch:
the engine's delta, the alert rules, the derivations ``why`` reads, and the store write of
every changed fact and its change-log row. On a backbone's best routes a single link event
changes tens of thousands of route facts, and the engine is a small part of the batch. This
runs the real pipeline (``run_pipeline --once``: event log, engine, SQLite store) on a
topology's load and then random single-link failures and recoveries, and prints per batch
the three parts, side by side in one run, with the batch over the engine's time.

    python bench/pipeline.py                                 # americas best routes, ~2 min
    python bench/pipeline.py --program reachability --pairs 20
    python bench/pipeline.py --doc                           # and docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from churn import link_pairs  # noqa: E402

from netrules import programs  # noqa: E402
from netrules.eventlog import EventLog  # noqa: E402
from netrules.pipeline.run import RunOptions, run_pipeline  # noqa: E402
from netrules.pipeline.sources import append_new, simulation  # noqa: E402
from netrules.plan import plan_program  # noqa: E402
from netrules.store import open_store  # noqa: E402
from topologies import link_facts, load_topology  # noqa: E402


def scenario(topology: str, pairs: int, seed: int) -> str:
    """``pairs`` random links, each failed and recovered ten seconds apart, one at a time."""
    chosen = link_pairs(link_facts(load_topology(topology)))
    rng = random.Random(seed)
    lines = []
    for i in range(pairs):
        a, b = (shlex.quote(str(n)) for n in chosen[rng.randrange(len(chosen))][0].args[:2])
        lines += [f"at {10 + 20 * i} fail link {a} {b}", f"at {20 + 20 * i} recover link {a} {b}"]
    return "\n".join(lines) + "\n"


def run(topology: str, program: str, pairs: int, seed: int) -> list[dict]:
    """Every batch's parts, in seconds: the load first, then one batch per link event."""
    batches: list[dict] = []

    def on_batch(rec, written: bool) -> None:
        st = rec.stats
        plus, minus = rec.counts()
        total = st["seconds_total"]
        batches.append({"engine": st["engine_seconds"],
                        "rest": st["seconds"] - st["engine_seconds"],
                        "store": total - st["seconds"], "total": total,
                        "changed": sum(plus.values()) + sum(minus.values()),
                        "alerts": len(rec.alerts_raised) + len(rec.alerts_cleared)})

    with tempfile.TemporaryDirectory() as d:
        scen = Path(d) / "flaps.scenario"
        scen.write_text(scenario(topology, pairs, seed))
        log = EventLog(Path(d) / "events")
        append_new(log, simulation(topology, str(scen)).events)
        plan = plan_program(programs.load(program))
        store = open_store(str(Path(d) / "s.db"))
        try:
            run_pipeline(plan, store, RunOptions(store=str(Path(d) / "s.db"),
                                                 events_dir=str(log.directory), once=True),
                         on_batch=on_batch)
        finally:
            store.close()
    return batches


def report(topology: str, program: str, batches: list[dict]) -> str:
    load, links = batches[0], batches[1:]
    out = [f"`python bench/pipeline.py --topology {topology} --program {program} "
           f"--pairs {len(links) // 2}` ({time.strftime('%Y-%m-%d')}): the real pipeline "
           f"(`run_pipeline --once`, SQLite store), its load and then {len(links)} link "
           "events, one batch each.", "",
           "| batches | facts changed | engine | derivations and alerts | store write | "
           "batch | batch / engine |", "|---|---|---|---|---|---|---|"]

    def row(label: str, bs: list[dict], pick) -> str:
        v = {k: pick([b[k] for b in bs]) for k in ("engine", "rest", "store", "total",
                                                   "changed")}
        return (f"| {label} | {v['changed']:,.0f} | {v['engine']:.2f} s | {v['rest']:.2f} s | "
                f"{v['store']:.2f} s | {v['total']:.2f} s | "
                f"{v['total'] / max(v['engine'], 1e-6):.1f}x |")

    out.append(row("the load", [load], lambda xs: xs[0]))
    if links:
        out.append(row(f"link events, median of {len(links)}", links, statistics.median))
        out.append(row(f"link events, all {len(links)}", links, sum))
        share = sum(b["store"] for b in links) / max(1e-9, sum(b["total"] for b in links))
        out += ["", f"The store write is {share:.0%} of the link events' time; "
                f"{sum(b['alerts'] for b in links):,} alerts raised or cleared."]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="topohub:backbone/americas")
    ap.add_argument("--program", default="best_routes")
    ap.add_argument("--pairs", type=int, default=10, help="link failures, each recovered")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--doc", action="store_true", help="rewrite docs/benchmarks.md's section")
    args = ap.parse_args(argv)
    text = report(args.topology, args.program,
                  run(args.topology, args.program, args.pairs, args.seed))
    print(text)
    if args.doc:
        from doc import replace_section

        replace_section("pipeline", "## A link event in the running pipeline\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
