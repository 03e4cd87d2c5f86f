"""Cheapest first: best routes' link events with each arg-min fed its routes cheapest first,
and as they come, side by side in one process.

Why: after a link down the iterated stratum derives the lost routes again, and fed every route
as it comes a best path explores (a long detour, then a shorter one a sweep later, each
travelling upstream in turn). ``IteratedStage._cheapest`` holds the dearer routes back
(docs/engine.md, "Cheapest first"). Two states of the same program take the same random
single-link down/up pairs, alternated event by event, one with the schedule and one without
(``iterated.CHEAPEST_FROM`` set past any batch); printed per way: batch p50 / p90 / p99 / max,
total time and sweeps, and whether the two ended with the same views.

    python bench/cheapest.py                                    # americas, ~10 minutes
    python bench/cheapest.py --topology topohub:topozoo/TataNld --pairs 200
    python bench/cheapest.py --costs 1,100                      # random integer link costs
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from churn import link_pairs, pct  # noqa: E402

WAYS = ("cheapest first", "as they come")


def sweeps(engine) -> int:
    """Sweeps the engine's iterated strata have run (the load's included)."""
    return sum(s.iterations for s in engine.state.extra["program"].stages.values())


def _digest(engine, relation: str) -> tuple[int, int]:
    """(facts, an order-free hash of their canonical texts) of one view: the two ways' ids
    differ, and decoding millions of facts into objects to compare them took gigabytes."""
    prog = engine.state.extra["program"]
    rel = prog.rels[relation]
    rows = rel.alive_rows()
    h = 0
    for start in range(0, len(rows), 100_000):
        cols = rel.cols[rows[start:start + 100_000]]
        texts = [prog.values.json_column(cols[:, j].astype("int64"))
                 for j in range(cols.shape[1])]
        h += sum(map(hash, zip(*texts, strict=True)))
    return len(rows), h % (1 << 64)


def main(argv: list[str] | None = None) -> int:
    from netrules import programs
    from netrules.engine.columnar import iterated
    from netrules.engine.engine import Engine
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="topohub:backbone/americas")
    ap.add_argument("--program", default="best_routes")
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--costs", help="LO,HI: random integer link costs (default: the topology's)")
    ap.add_argument("--cheapest-from", type=int,
                    help="rows that must wait before any is held (iterated.CHEAPEST_FROM)")
    args = ap.parse_args(argv)

    graph = load_topology(args.topology)
    if args.costs:
        lo, hi = map(int, args.costs.split(","))
        rng = random.Random(9)
        for _, _, data in graph.edges(data=True):
            data["cost"] = rng.randint(lo, hi)
    links = link_facts(graph)
    chosen = link_pairs(links)
    plan = plan_program(programs.load(args.program))
    default = iterated.CHEAPEST_FROM
    on = default if args.cheapest_from is None else args.cheapest_from
    engines, loaded = {}, {}
    for way in WAYS:
        engines[way] = Engine(plan, "columnar")
        engines[way].apply([("+", f) for f in links])
        loaded[way] = sweeps(engines[way])
    times: dict[str, dict[str, list[float]]] = {w: {"down": [], "up": []} for w in WAYS}
    rng = random.Random(args.seed)
    gc.disable()  # a collection inside one way's batch would be charged to it
    try:
        for _ in range(args.pairs):
            fs = rng.choice(chosen)
            for half, sign in (("down", "-"), ("up", "+")):
                for way in WAYS:
                    iterated.CHEAPEST_FROM = on if way == WAYS[0] else 1 << 62
                    t0 = time.perf_counter()
                    engines[way].apply([(sign, f) for f in fs])
                    times[way][half].append(time.perf_counter() - t0)
            gc.collect()
    finally:
        iterated.CHEAPEST_FROM = default
        gc.enable()
    print(f"`{args.program}` on `{args.topology}`"
          f"{f' (link costs {args.costs})' if args.costs else ''}: {args.pairs} random "
          f"single-link down/up pairs (seed {args.seed}), the two ways alternated; rows held "
          f"once {on} wait\n")
    print("| way | batches | p50 | p90 | p99 | max | total | sweeps |")
    print("|---|---|---|---|---|---|---|---|")
    for way in WAYS:
        for half in ("down", "up", "all"):
            xs = (times[way]["down"] + times[way]["up"]) if half == "all" else times[way][half]
            swept = sweeps(engines[way]) - loaded[way] if half == "all" else ""
            print(f"| {way} | {half} ({len(xs)}) | {1e3 * pct(xs, 50):,.0f} ms "
                  f"| {1e3 * pct(xs, 90):,.0f} ms | {1e3 * pct(xs, 99):,.0f} ms "
                  f"| {1e3 * max(xs):,.0f} ms | {sum(xs):,.1f} s | {swept} |")
    same = all(_digest(engines[WAYS[0]], r) == _digest(engines[WAYS[1]], r)
               for r in plan.derived)
    print(f"\nthe two ways' views at the end: {'the same' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
