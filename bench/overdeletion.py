"""Overdeletion: the facts a batch hides and derives again for each tuple whose truth changes.

Why: peers.py's per-tuple line divides a batch's time by the tuples that changed, but a
rank-based engine works on its *suspects*: facts whose every kept support used a lost fact,
hidden, then derived again where they still hold (docs/engine.md, "What a small batch costs").
On a sparse graph most suspects come back, so the batch costs its suspects, not its change.
This prints, per topology and peers.py workload (drawn as peers.py draws them), the columnar
engine's own counters (tuples changed, suspects) and its batch time, as µs per changed tuple
and per suspect, so the two are measured side by side. Each pair runs once, in peers.py's
order, each batch after other work (the last batch's simulation or a collection: cold, as in
peers.py). Once only: a pair repeated gets cheaper, since the up batch leaves the facts kept
supports that avoid the links it restored, and the same down then kills almost nothing.

For reachability's down batches it also simulates the alternative a different rank would
allow: ranks as a total order (breadth-first level, then discovery order) with a suspect
rescued by *any* standing neighbour of lower order, processed in that order (the most
suspects such ranks could spare; the engine's ranks are levels, and a fact's kept supports
are its shortest-path predecessors). The simulation is plain Python over the graph, not the
engine; it counts facts, it times nothing.

    python bench/overdeletion.py                         # TataNld, CAIDA AS852, fattree:8
    python bench/overdeletion.py --topologies am=topohub:backbone/americas
    python bench/overdeletion.py --doc   # and americas: docs/benchmarks.md's section
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from doc import replace_section  # noqa: E402
from peers import make_workloads  # noqa: E402

from netrules import programs  # noqa: E402
from netrules.engine.strategies import get  # noqa: E402
from netrules.plan import plan_program  # noqa: E402
from topologies import link_facts, load_topology  # noqa: E402

DEFAULT = ("tata=topohub:topozoo/TataNld,caida=topohub:caida/2024-08/852,"
           "fattree=fattree:8")


def _order(into: dict, dest: object, dead: set) -> dict:
    """Breadth-first discovery order of the nodes that reach ``dest`` over live links
    (``into[v]``: the nodes with a link to v)."""
    order = {dest: 0}
    queue = [dest]
    for v in queue:
        for u in into.get(v, ()):
            if u not in order and (u, v) not in dead:
                order[u] = len(order)
                queue.append(u)
    return order


def simulate(facts: list, down: list) -> tuple[int, int]:
    """(suspects under total-order ranks with in-order rescue, pairs that stop holding) of
    reachability's down batch ``down``, summed over destinations; pairs (d, d) are left out
    of both."""
    succ: dict = {}
    into: dict = {}
    for f in facts:
        s, d = f.args[0], f.args[1]
        succ.setdefault(s, []).append(d)
        into.setdefault(d, []).append(s)
    dead = {(f.args[0], f.args[1]) for _, f in down}
    killed_all = lost = 0
    for dest in sorted(into, key=str):
        old = _order(into, dest, set())
        new = _order(into, dest, dead)
        killed: set = set()
        for s in sorted(old, key=old.__getitem__):
            if s == dest:
                continue
            if not any((s, z) not in dead and (z == dest or (z in old and old[z] < old[s]
                                                              and z not in killed))
                       for z in succ.get(s, ())):
                killed.add(s)
        killed_all += len(killed)
        lost += sum(1 for s in old if s != dest and s not in new)
    return killed_all, lost


def run_topology(label: str, spec: str, seed: int) -> list[dict]:
    plan = plan_program(programs.load("reachability"))
    col = get("columnar")
    G = load_topology(spec)
    facts = link_facts(G)
    state = col.materialize(plan, facts)
    prog = state.extra["program"]
    # peers.py's draw: its seed, its single-link pairs (fewer above 500 nodes), three k=10s
    singles = 10 if G.number_of_nodes() <= 500 else 5
    wls = make_workloads(G, facts, random.Random(seed), singles=singles, reps={10: 3, 100: 1})
    rows = []
    gc.disable()
    try:
        for wl in wls:
            for i, pair in enumerate(wl.pairs):
                for side, batch in zip(("down", "up"), pair, strict=True):
                    before = dict(prog.stats)
                    t = time.perf_counter()
                    delta = col.apply(state, batch)
                    sec = time.perf_counter() - t
                    rows.append({"topology": label, "workload": wl.name, "pair": i,
                                 "side": side,
                                 "changed": delta.stats.added + delta.stats.removed,
                                 "suspects": prog.stats["suspects"] - before["suspects"],
                                 "afresh": prog.stats.get("afresh", 0) > before.get("afresh", 0),
                                 "us": sec * 1e6,
                                 "sim": simulate(facts, batch) if side == "down" else None})
                gc.collect()
    finally:
        gc.enable()
    print(f"{label} ({spec}): {G.number_of_nodes()} nodes, {len(facts)} links, "
          f"{prog.fact_count():,} facts", flush=True)
    return rows


def table(rows: list[dict]) -> list[str]:
    out = ["| workload | batch | tuples changed | suspects | suspects per changed tuple | "
           "batch µs | µs per changed tuple | µs per suspect | "
           "total-order ranks, rescued in order: suspects (simulated) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ch, su = r["changed"], r["suspects"]
        sim = "" if r["sim"] is None else f"{r['sim'][0]:,}"
        how = " (derived afresh)" if r["afresh"] else ""
        per_ch = f"{r['us'] / ch:.1f}" if ch else ""
        per_su, ratio = (f"{r['us'] / su:.2f}", f"{su / ch:.1f}" if ch else "") if su else ("", "")
        out.append(f"| {r['workload']} #{r['pair'] + 1} | {r['side']}{how} | {ch:,} | {su:,} | "
                   f"{ratio} | {r['us']:,.0f} | {per_ch} | {per_su} | {sim} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topologies", default=None,
                    help=f"comma-separated label=spec (default: {DEFAULT}; with --doc, and "
                         "americas)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--doc", action="store_true",
                    help="rewrite docs/benchmarks.md's overdeletion section")
    args = ap.parse_args(argv)
    tops = args.topologies or (DEFAULT + ",americas=topohub:backbone/americas" if args.doc
                               else DEFAULT)
    t0 = time.perf_counter()
    parts = []
    for item in tops.split(","):
        label, spec = item.split("=", 1)
        rows = run_topology(label, spec, args.seed)
        lines = table(rows)
        # the summary: the batches the per-tuple line misses on small graphs (ten links at
        # once, a node failure), where the stratum is maintained (afresh it counts no
        # suspects)
        downs = [r for r in rows if r["side"] == "down" and r["suspects"] and not r["afresh"]
                 and r["workload"].startswith(("k=10 ", "node failure"))]
        summary = ""
        if downs:
            ratio = statistics.median(r["suspects"] / max(r["changed"], 1) for r in downs)
            per = statistics.median(r["us"] / r["suspects"] for r in downs)
            spared = statistics.median(1 - r["sim"][0] / r["suspects"] for r in downs)
            summary = (f"Ten links down and a node failure (where not derived afresh): a "
                       f"median **{ratio:.1f} suspects per changed tuple** and "
                       f"{per:.2f} µs per suspect; ranks as a total order, rescued in order, "
                       f"would spare a median **{spared:.0%}** of the suspects (simulated).")
        print("\n".join(lines), "\n", summary, "\n", flush=True)
        parts.append(f"### {label}: `{spec}`\n\n" + "\n".join(lines) + "\n\n" + summary)
    if args.doc:
        head = ("## Overdeletion: suspects per changed tuple (reachability, columnar)\n\n"
                f"Regenerate with `python bench/overdeletion.py --doc` "
                f"({(time.perf_counter() - t0) / 60:.1f} minutes on {platform.machine()}, "
                f"Python {platform.python_version()}). peers.py's workloads as it draws them "
                "(its seed), each pair once in its order, each batch timed once after other "
                "work (the last batch's simulation or a collection: cold, as in peers.py). "
                "A suspect is a fact whose every kept "
                "support used a lost fact: hidden, then derived again where it still holds "
                "(docs/engine.md, \"What a small batch costs\"). The last column is a "
                "simulation over the graph, not the engine.")
        replace_section("overdeletion", head + "\n\n" + "\n\n".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
