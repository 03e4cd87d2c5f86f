"""Memory under churn: what a live engine holds after many link flaps, reclaiming or not.

Why: a monitor runs for weeks, and every flap that changes a best route's path leaves a dead
row and new list cells behind. This loads a program on a topology, then takes random
single-link down/up pairs, and every ``--every`` pairs prints the engine's bytes per fact
(facts + supports + indexes + dictionaries, as ``ColumnarProgram.nbytes`` counts them), two
ways side by side, each in its own process for its own peak RSS:

  * reclaiming: the default engine, which compacts a relation's dead rows
    (``columnar/compaction.py``) and makes the program again once its dictionaries double
    (``strategies/columnar.renew``);
  * kept: the same with both off (what the engine did before them).

It also prints each way's batch times (p50 / p99 / max: the batches that compact or renew
pay for it) and how many compactions and renewals there were.

    python bench/churn.py                                   # americas best routes, ~5 min
    python bench/churn.py --topology topohub:topozoo/TataNld --pairs 300
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def run(topology: str, program: str, pairs: int, every: int, reclaim: bool, seed: int
        ) -> dict:
    """One way, in this process: bytes per fact after the load and every ``every`` pairs."""
    from netrules import programs
    from netrules.engine.engine import Engine
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    plan = plan_program(programs.load(program))
    links = link_facts(load_topology(topology))
    chosen = link_pairs(links)
    eng = Engine(plan, "columnar")
    eng.apply([("+", f) for f in links])

    def program_now():
        prog = eng.state.extra["program"]
        if not reclaim:
            prog.compact_at = prog.renew_at = 1 << 62
        return prog

    def bytes_per_fact() -> float:
        prog = program_now()
        return sum(prog.nbytes().values()) / max(1, prog.fact_count())

    out = {"facts": program_now().fact_count(), "series": [(0, bytes_per_fact())],
           "batches": []}
    rng = random.Random(seed)
    for i in range(1, pairs + 1):
        fs = rng.choice(chosen)
        for batch in ([("-", f) for f in fs], [("+", f) for f in fs]):
            program_now()
            t0 = time.perf_counter()
            eng.apply(batch)
            out["batches"].append(time.perf_counter() - t0)
        if i % every == 0:
            out["series"].append((i, bytes_per_fact()))
    stats = program_now().stats
    out["compactions"] = stats.get("compactions", 0)
    out["renewals"] = stats.get("renewals", 0)
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def link_pairs(links: list) -> list[list]:
    """The link facts of each pair of nodes (both directions of a link), in name order, so a
    seeded draw picks the same links every run."""
    by_pair: dict[frozenset, list] = {}
    for f in links:
        by_pair.setdefault(frozenset(f.args[:2]), []).append(f)
    return sorted(by_pair.values(), key=lambda fs: sorted(map(str, fs[0].args[:2])))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="topohub:backbone/americas")
    ap.add_argument("--program", default="best_routes")
    ap.add_argument("--pairs", type=int, default=150)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--way", choices=["reclaiming", "kept"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.way:  # a child: one way, its result as JSON on stdout
        print(json.dumps(run(args.topology, args.program, args.pairs, args.every,
                             args.way == "reclaiming", args.seed)))
        return 0
    res = {}
    for way in ("reclaiming", "kept"):
        cmd = [sys.executable, __file__, "--topology", args.topology, "--program",
               args.program, "--pairs", str(args.pairs), "--every", str(args.every),
               "--seed", str(args.seed), "--way", way]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        res[way] = json.loads(done.stdout.strip().splitlines()[-1])
    a, b = res["reclaiming"], res["kept"]
    print(f"`{args.program}` on `{args.topology}`: {a['facts']:,} facts, {args.pairs} random "
          f"single-link down/up pairs (seed {args.seed})\n")
    print("| pairs | bytes / fact, reclaiming | bytes / fact, kept | kept / reclaiming |")
    print("|---|---|---|---|")
    for (i, x), (_, y) in zip(a["series"], b["series"], strict=True):
        print(f"| {i} | {x:.0f} | {y:.0f} | {y / x:.2f} |")
    print("\n| way | batch p50 | p99 | max | compactions | renewals | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for way, r in res.items():
        lat = r["batches"]
        print(f"| {way} | {pct(lat, 50) * 1e3:.0f} ms | {pct(lat, 99):.2f} s "
              f"| {max(lat):.2f} s | {r['compactions']} | {r['renewals']} "
              f"| {r['peak_rss_mib']:,.0f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
