"""One peers workload's down/up batch pair, repeated: a steady figure for an A/B of the
columnar engine's big batches (docs/engine.md, "Fixed costs of a big small-graph batch").

``bench/peers.py`` runs each big pair once, so its figure for a two-batch workload moves
with the machine by 15% or more. This runs the same pair (same seed, same workload draw)
``--reps`` times in one process, networkx in lockstep as peers runs it (each contender's
batch evicts the other's data from the caches, as it does there), and prints the first run
and the least, 25th percentile and median of each half. Alternate two checkouts to compare them:

    python bench/batch_pairs.py                      # this checkout
    python /other/checkout/bench/batch_pairs.py      # another tree, same harness
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

#: the workloads peers lost on the small graphs when this was written
DEFAULT = ("topohub:topozoo/TataNld=k=100,topohub:caida/2024-08/852=partition,"
           "fattree:8=partition")


def timed(fn, *args) -> float:
    """Seconds of ``fn(*args)`` with the cyclic collector paused, as peers times a batch."""
    gc.disable()
    try:
        t = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t
    finally:
        gc.enable()


def summary(xs: list[float]) -> str:
    """The first run (what peers measures: it runs each big pair once), then the least,
    25th percentile and median of all."""
    q = sorted(xs)
    return (f"{1e3 * xs[0]:.2f} first, {1e3 * q[0]:.2f} / {1e3 * q[len(q) // 4]:.2f} / "
            f"{1e3 * statistics.median(q):.2f}")


def main(argv: list[str] | None = None) -> int:
    from peers import NetworkxFull, make_workloads

    from netrules import programs
    from netrules.engine.strategies import get
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default=DEFAULT,
                    help="comma-separated topology=workload-prefix (peers' workload names)")
    ap.add_argument("--reps", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1, help="peers' seed (its workload draw)")
    ap.add_argument("--no-networkx", action="store_true")
    args = ap.parse_args(argv)

    plan = plan_program(programs.load("reachability"))
    columnar = get("columnar")
    print("ms: the first run, then least / 25th percentile / median of each half")
    for item in args.pairs.split(","):
        spec, prefix = item.split("=", 1)
        G = load_topology(spec)
        facts = link_facts(G)
        wls = make_workloads(G, facts, random.Random(args.seed), singles=10,
                             reps={10: 3, 100: 1})
        wl = next(w for w in wls if w.name.startswith(prefix))
        down, up = wl.pairs[0]
        state = columnar.materialize(plan, facts)
        nxf = None if args.no_networkx else NetworkxFull(facts)
        times: dict[str, list[float]] = {k: [] for k in ("cd", "cu", "nd", "nu")}
        for _ in range(args.reps):
            times["cd"].append(timed(columnar.apply, state, down))
            if nxf is not None:
                times["nd"].append(timed(nxf.step, down))
            times["cu"].append(timed(columnar.apply, state, up))
            if nxf is not None:
                times["nu"].append(timed(nxf.step, up))
        line = (f"{spec} {wl.name}: columnar down {summary(times['cd'])}, "
                f"up {summary(times['cu'])}")
        if nxf is not None:
            line += f"; networkx down {summary(times['nd'])}, up {summary(times['nu'])}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
