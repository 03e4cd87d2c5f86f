"""Cold batches: what a small batch costs after other work has run, and why.

Why: the peers bench runs four contenders between two columnar batches, and a small graph's
batch there costs two to eight times what it costs in a loop. This measures, in one process,
(1) the first call of each kind of call after Python-object churn against the same call
again, and (2) the columnar engine's batches of a topology's workloads two ways: after the
churn, and after the churn plus a warm-up batch on a separate tiny state (the machinery warm,
this state's data cold). The difference is the cost of the code a batch runs, not of the rows
it touches (docs/engine.md, "Cold batches"). (3) The floor: a batch that changes nothing,
after the churn and again, beside each workload's tuples changed and the budget the
per-tuple line of bench/peers.py allows it (2 µs a changed tuple).

    python bench/cold.py                       # fattree:8 and TataNld, about a minute
    python bench/cold.py --topologies fattree:8 --trials 20
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from peers import make_workloads  # noqa: E402

from netrules import programs  # noqa: E402
from netrules.engine.columnar import kernels  # noqa: E402
from netrules.engine.columnar.sets import distinct  # noqa: E402
from netrules.engine.strategies import get  # noqa: E402
from netrules.plan import plan_program  # noqa: E402
from topologies import link_facts, load_topology  # noqa: E402

_STRINGS = [str(i) for i in range(200_000)]


def churn() -> None:
    """What a Python-heavy contender leaves behind: a dictionary of 200,000 strings built and
    dropped (no page faults; it evicts the caches)."""
    d = dict.fromkeys(_STRINGS, 1)
    del d


def first_calls(trials: int) -> list[tuple[str, float, float]]:
    """(call, µs the first time after the churn, µs the same call again), medians; the calls
    run in this order, so each is the first of its kind but not the first call."""
    x = np.arange(20, dtype=np.int64)
    idx, mask = np.arange(0, 20, 3), x > 3
    alive, before = np.ones(64, bool), np.zeros(64, bool)
    sup = np.zeros((4, 2), np.int32)
    kernels.net_rows(x, alive, before)
    kernels.copy_supports(x[:0], x[:0], idx.astype(np.int32), alive, sup, alive)
    kernels.base_rows(x, np.zeros(64, np.int32), x)
    calls: list[tuple[str, Callable[[], object]]] = [
        ("`ndarray.min` of 20 ints", lambda: x.min()),
        ("`ndarray.max` after it", lambda: x.max()),
        ("`np.concatenate`", lambda: np.concatenate([x, x])),
        ("a gather `x[idx]`", lambda: x[idx]),
        ("a boolean mask `x[m]`", lambda: x[mask]),
        ("a comparison `x == 3`", lambda: x == 3),
        ("`astype(np.int32)`", lambda: x.astype(np.int32)),
        ("`np.full`", lambda: np.full(20, -1, np.int64)),
        ("`np.flatnonzero`", lambda: np.flatnonzero(mask)),
        ("`np.argsort`", lambda: np.argsort(x)),
        ("`np.searchsorted`", lambda: np.searchsorted(x, idx)),
        ("`sets.distinct` (the engine's dedupe: a sort)", lambda: distinct(x)),
        ("a Numba kernel returning a tuple of arrays (`net_rows`)",
         lambda: kernels.net_rows(x, alive, before)),
        ("another kernel (`copy_supports`)",
         lambda: kernels.copy_supports(x[:0], x[:0], idx.astype(np.int32), alive, sup,
                                       alive)),
        ("a third (`base_rows`)", lambda: kernels.base_rows(x, np.zeros(64, np.int32), x)),
    ]
    return _first_and_again(calls, trials, churn_each=False)


def _first_and_again(calls: list[tuple[str, Callable[[], object]]], trials: int, *,
                     churn_each: bool) -> list[tuple[str, float, float]]:
    """(call, µs the first time after the churn, µs the same call right after), medians
    over ``trials``; the churn comes before every call (``churn_each``), or once a trial
    before them all, in order."""
    first: dict[str, list[float]] = {}
    again: dict[str, list[float]] = {}
    for _ in range(trials):
        if not churn_each:
            churn()
        for name, call in calls:
            if churn_each:
                churn()
            for times in (first, again):
                t0 = time.perf_counter()
                call()
                times.setdefault(name, []).append(time.perf_counter() - t0)
    return [(name, 1e6 * statistics.median(first[name]), 1e6 * statistics.median(again[name]))
            for name, _ in calls]


def floor(spec: str, trials: int) -> list[tuple[str, float, float]]:
    """(batch, µs after the churn, µs again), medians: what a batch that changes nothing
    costs, the floor under every batch's cost in peers' lockstep (an empty batch; one
    insertion of a link already held, which the ledger reads and the strata then skip)."""
    plan = plan_program(programs.load("reachability"))
    col = get("columnar")
    facts = link_facts(load_topology(spec))
    state = col.materialize(plan, facts)
    held = [("+", facts[0])]
    return _first_and_again([("an empty batch", lambda: col.apply(state, [])),
                             ("one insertion of a link already held",
                              lambda: col.apply(state, held))], trials, churn_each=True)


def batches(spec: str, trials: int) -> dict[tuple[str, str], tuple[float, float, int]]:
    """Per (workload, down/up): medians of the batch's time after the churn, and after the
    churn and a warm-up batch on a separate tiny state, and the tuples it changes. Two
    states take the same batches, each once (a pair repeated on one state would find less
    to kill the second time)."""
    plan = plan_program(programs.load("reachability"))
    col = get("columnar")
    graph = load_topology(spec)
    facts = link_facts(graph)
    cold_state, warmed_state = col.materialize(plan, facts), col.materialize(plan, facts)
    tiny_graph = load_topology("fattree:4")
    tiny_facts = link_facts(tiny_graph)
    tiny = col.materialize(plan, tiny_facts)
    tiny_wl = make_workloads(tiny_graph, tiny_facts, random.Random(7), singles=1,
                             reps={10: 1, 100: 1})
    tiny_pair = next(w for w in tiny_wl if w.name.startswith("k=10 ")).pairs[0]
    times: dict[tuple[str, str], list[tuple[float, float, int]]] = {}
    for trial in range(trials):
        wls = make_workloads(graph, facts, random.Random(100 + trial), singles=1,
                             reps={10: 1, 100: 1})
        for wl in wls:
            if wl.name.startswith(("k=1 ", "flap")):
                continue
            for half, batch, warmup in zip(("down", "up"), wl.pairs[0], tiny_pair,
                                           strict=True):
                churn()
                t0 = time.perf_counter()
                delta = col.apply(cold_state, batch)
                cold = time.perf_counter() - t0
                churn()
                col.apply(tiny, warmup)
                t0 = time.perf_counter()
                col.apply(warmed_state, batch)
                warmed = time.perf_counter() - t0
                changed = delta.stats.added + delta.stats.removed
                times.setdefault((wl.name.split(" (")[0], half), []).append(
                    (cold, warmed, changed))
    return {k: (1e6 * statistics.median(c for c, _, _ in v),
                1e6 * statistics.median(w for _, w, _ in v),
                int(statistics.median(n for _, _, n in v))) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topologies", default="fattree:8,topohub:topozoo/TataNld")
    ap.add_argument("--trials", type=int, default=10)
    args = ap.parse_args(argv)
    gc.disable()  # as peers times a batch: no collection inside one
    print("| first call of its kind after the churn | µs | the same call again, µs |")
    print("|---|---|---|")
    for name, first, again in first_calls(max(args.trials, 20)):
        print(f"| {name} | {first:.1f} | {again:.1f} |")
    for spec in args.topologies.split(","):
        print(f"\n`{spec}`, reachability, columnar (µs, median of {args.trials}):\n")
        print("| a batch that changes nothing | after the churn | the same batch again |")
        print("|---|---|---|")
        for name, first, again in floor(spec, args.trials):
            print(f"| {name} | {first:,.0f} | {again:,.0f} |")
        print("\n| workload | tuples changed | 2 µs a changed tuple | after the churn "
              "| after the churn and a warm-up batch elsewhere | cold code (the two apart) |")
        print("|---|---|---|---|---|---|")
        for (wl, half), (cold, warmed, changed) in batches(spec, args.trials).items():
            print(f"| {wl} {half} | {changed:,} | {2 * changed:,} | {cold:,.0f} "
                  f"| {warmed:,.0f} | {cold - warmed:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
