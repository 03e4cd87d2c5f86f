"""The columnar engine against its contenders, side by side in one run (issue 19).

On one topology and program, each contender computes the same view:
  * netrules columnar: materialise, then single link down/up events (p50/p99 of process CPU
    time and of wall time per event), bytes per stored fact, µs per changed tuple;
  * netrules per fact (``psn``, the engine before this one), materialise and events
    (``--events-psn``; skipped with 0);
  * DuckDB ``WITH RECURSIVE ... UNION`` (reachability) from scratch;
  * networkx full recompute: all-pairs reachability, or all-pairs Dijkstra for routes;
  * scipy csgraph BFS / Dijkstra from scratch.
A from-scratch contender answers a link event by recomputing, so its per-event time is its
materialisation time; ratios are printed as contender / columnar.

    python bench/columnar.py --topology topohub:backbone/americas --program reachability
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


def timed(fn):  # (result, wall s, cpu s)
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def events(engine, pairs, n: int, seed: int) -> dict:
    rng = random.Random(seed)
    wall, cpu, tuples = [], [], 0
    for _ in range(n):
        fs = rng.choice(pairs)
        for sign in "-+":
            d, w, c = timed(lambda s=sign, fs=fs: engine.apply([(s, f) for f in fs]))
            wall.append(w)
            cpu.append(c)
            tuples += d.stats.added + d.stats.removed
    return {"events": len(wall), "p50_ms": pct(wall, 50) * 1e3, "p99_ms": pct(wall, 99) * 1e3,
            "cpu_p50_ms": pct(cpu, 50) * 1e3, "cpu_p99_ms": pct(cpu, 99) * 1e3,
            "us_per_tuple": sum(cpu) / max(1, tuples) * 1e6, "tuples_per_event": tuples / len(wall)}


def duckdb_reach(edges: list[tuple[int, int]]) -> tuple[int, float]:
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE TABLE e(s INTEGER, d INTEGER)")
    con.executemany("INSERT INTO e VALUES (?, ?)", edges)
    t = time.perf_counter()
    n = con.execute("WITH RECURSIVE r(s, d) AS (SELECT s, d FROM e UNION "
                    "SELECT e.s, r.d FROM e JOIN r ON e.d = r.s) SELECT count(*) FROM r"
                    ).fetchone()[0]
    return int(n), time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="topohub:backbone/americas")
    ap.add_argument("--program", default="reachability")
    ap.add_argument("--events", type=int, default=50, help="link down/up pairs (columnar)")
    ap.add_argument("--events-psn", type=int, default=3, help="pairs for per-fact psn (0: skip)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--doc", action="store_true", help="rewrite this run's docs section")
    ap.add_argument("--sizing", help="comma-separated node counts: reachability on "
                    "preferential-attachment graphs of each size, extrapolated to 75,000")
    ap.add_argument("--sizing-one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.sizing_one:
        print(json.dumps(sizing_one(args.sizing_one)))
        return 0
    if args.sizing:
        sizing([int(x) for x in args.sizing.split(",")], args.doc)
        return 0

    import networkx as nx
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, dijkstra

    from netrules import programs
    from netrules.engine.engine import Engine
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    plan = plan_program(programs.load(args.program))
    g = load_topology(args.topology)
    links = link_facts(g)
    pairs: dict[frozenset, list] = {}
    for f in links:
        pairs.setdefault(frozenset(f.args[:2]), []).append(f)
    link_pairs = list(pairs.values())
    routing = args.program in ("best_routes", "min_cost", "path_vector")
    res: dict = {"topology": args.topology, "program": args.program,
                 "nodes": g.number_of_nodes(), "links": len(pairs),
                 "machine": f"{platform.machine()}, {platform.python_version()}"}

    # the compiled kernels load once per process (numba); a run pays it once, so it is
    # timed apart from the materialisation, on a three-node ring
    ring = [("+", f) for f in link_facts(load_topology("ring:3"))]
    _, kernels_s, _ = timed(lambda: Engine(plan, "columnar").apply(ring))
    eng = Engine(plan, "columnar")
    d, w, c = timed(lambda: eng.apply([("+", f) for f in links]))
    prog = eng.state.extra["program"]
    nbytes = prog.nbytes()
    res["columnar"] = {"materialise_s": w, "materialise_cpu_s": c, "kernels_load_s": kernels_s,
                       "facts": prog.fact_count(),
                       "bytes_per_fact": sum(nbytes.values()) / max(1, prog.fact_count()),
                       "bytes": nbytes}
    res["columnar"].update(events(eng, link_pairs, args.events, args.seed))
    # after the events too: a live process holds what its events grew (new rows, array
    # slack, the supports index's runs), not only what the load made
    res["columnar"]["bytes_per_fact_after"] = (sum(prog.nbytes().values())
                                               / max(1, prog.fact_count()))
    res["columnar"]["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    view = "bestPath" if routing else "reachable"
    res["columnar"]["view_rows"] = int(prog.rels[view].count)
    del eng, prog

    # from scratch contenders on the same graph (directed, both directions as the links are)
    dg = nx.DiGraph()
    for f in links:
        dg.add_edge(f.args[0], f.args[1], weight=f.args[2])
    if routing:
        _, w, _ = timed(lambda: dict(nx.all_pairs_dijkstra_path_length(dg)))
        res["networkx"] = {"name": "all-pairs Dijkstra", "s": w}
    else:
        out, w, _ = timed(lambda: sum(len(nx.descendants(dg, v)) for v in dg))
        res["networkx"] = {"name": "all-pairs reachability (descendants)", "s": w}
    idx = {v: i for i, v in enumerate(dg)}
    src = [idx[a] for a, b in dg.edges]
    dst = [idx[b] for a, b in dg.edges]
    wts = [dg.edges[a, b]["weight"] for a, b in dg.edges]
    m = sp.csr_matrix((wts, (src, dst)), shape=(len(idx), len(idx)))
    if routing:
        _, w, _ = timed(lambda: dijkstra(m))
        res["scipy"] = {"name": "csgraph all-pairs Dijkstra", "s": w}
    else:
        _, w, _ = timed(lambda: sum(len(breadth_first_order(m, i, return_predecessors=False))
                                    for i in range(len(idx))))
        res["scipy"] = {"name": "csgraph BFS from every node", "s": w}
        n, w = duckdb_reach(list(zip(src, dst, strict=True)))
        res["duckdb"] = {"name": "WITH RECURSIVE ... UNION", "s": w, "rows": n}

    if args.events_psn:
        eng = Engine(plan, "psn")
        _, w, c = timed(lambda: eng.apply([("+", f) for f in links]))
        res["psn"] = {"materialise_s": w, "materialise_cpu_s": c}
        res["psn"].update(events(eng, link_pairs, args.events_psn, args.seed))
        del eng

    col = res["columnar"]
    lines = [f"`python bench/columnar.py --topology {args.topology} --program {args.program} "
             f"--events {args.events} --events-psn {args.events_psn}`: {res['nodes']:,} nodes, "
             f"{res['links']:,} links, {col['facts']:,} facts ({col['view_rows']:,} {view} "
             f"rows), {col['events']} link events ({res['machine']}).", "",
             "| contender | from scratch | per link event p50 / p99 | vs columnar p50 |",
             "|---|---|---|---|",
             f"| netrules columnar | {col['materialise_s']:.2f} s | {col['p50_ms']:.1f} ms / "
             f"{col['p99_ms']:.1f} ms (CPU {col['cpu_p50_ms']:.1f} / {col['cpu_p99_ms']:.1f} "
             "ms) | 1x |"]
    if "psn" in res:
        p = res["psn"]
        lines.append(f"| netrules per fact (psn) | {p['materialise_s']:.2f} s | "
                     f"{p['p50_ms']:.1f} ms / {p['p99_ms']:.1f} ms ({p['events']} events) | "
                     f"{p['p50_ms'] / col['p50_ms']:.1f}x |")
    for key in ("duckdb", "networkx", "scipy"):
        if key in res:
            r = res[key]
            lines.append(f"| {key} {r['name']} | {r['s']:.2f} s | {r['s'] * 1e3:.0f} ms "
                         f"(recompute) | {r['s'] * 1e3 / col['p50_ms']:.1f}x |")
    fastest = min(res[k]["s"] for k in ("duckdb", "networkx", "scipy") if k in res)
    lines += ["", f"Columnar materialisation vs the fastest from-scratch contender: "
              f"{col['materialise_s'] / fastest:.1f}x its time. Bytes per stored fact (facts, "
              f"supports, indexes): "
              f"{col['bytes_per_fact']:.0f} after the load, "
              f"{col.get('bytes_per_fact_after', col['bytes_per_fact']):.0f} after the events; "
              "µs per changed tuple (CPU): "
              f"{col['us_per_tuple']:.1f} at {col['tuples_per_event']:.0f} changed tuples per "
              f"event; peak RSS {col['peak_rss_mb']:.0f} MB. The compiled kernels' one-time "
              f"load per process (numba, not in the figures above): "
              f"{col['kernels_load_s']:.2f} s."]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    if args.doc:
        from doc import replace_section

        name = f"columnar-{args.program}-{args.topology.split('/')[-1].split(':')[-1]}"
        replace_section(name, f"## Columnar engine: {args.program} on `{args.topology}`\n\n"
                        + text)
    return 0



def sizing_one(n: int, events_n: int = 20) -> dict:
    """One preferential-attachment graph of ``n`` nodes: reachability materialised and
    maintained by the columnar engine, in this (fresh) process."""
    from netrules import programs
    from netrules.engine.engine import Engine
    from netrules.plan import plan_program
    from topologies import link_facts
    from topologies.generate import barabasi_albert

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    links = link_facts(barabasi_albert(n, 2))
    pairs: dict[frozenset, list] = {}
    for f in links:
        pairs.setdefault(frozenset(f.args[:2]), []).append(f)
    eng = Engine(plan_program(programs.load("reachability")), "columnar")
    _, w, _ = timed(lambda: eng.apply([("+", f) for f in links]))
    prog = eng.state.extra["program"]
    out = {"nodes": n, "links": len(pairs), "facts": prog.fact_count(), "materialise_s": w,
           "bytes_per_fact": sum(prog.nbytes().values()) / prog.fact_count()}
    out.update(events(eng, list(pairs.values()), events_n, 1))
    out["rss_growth_mib"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
    return out


def sizing(sizes: list[int], doc: bool) -> None:
    import subprocess

    import numpy as np

    rows = []
    for n in sizes:
        out = subprocess.run([sys.executable, __file__, "--sizing-one", str(n)],
                             capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    lines = ["`python bench/columnar.py --sizing " + ",".join(map(str, sizes)) + "`: "
             "reachability on `barabasi_albert(n, 2)` graphs, the columnar engine, each size "
             "in a fresh process. The last row is a power-law **extrapolation** (least squares "
             "on log-log), not a measurement.", "",
             "| nodes | links | facts | materialise | peak RSS growth | bytes / fact | "
             "single link event p50 / p99 |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['nodes']:,} | {r['links']:,} | {r['facts']:,} | "
                     f"{r['materialise_s']:.2f} s | {r['rss_growth_mib']:,.0f} MiB | "
                     f"{r['bytes_per_fact']:.0f} | {r['p50_ms']:.1f} ms / {r['p99_ms']:.1f} ms |")
    x = np.log([r["nodes"] for r in rows])
    fit = {}
    for key in ("materialise_s", "rss_growth_mib", "facts", "p50_ms"):
        b, a = np.polyfit(x, np.log([max(r[key], 1e-9) for r in rows]), 1)
        fit[key] = (b, float(np.exp(a + b * np.log(75_000))))
    lines.append(f"| **75,000 (extrapolated)** | | {fit['facts'][1]:.1e} | "
                 f"{fit['materialise_s'][1] / 3600:.1f} h | "
                 f"{fit['rss_growth_mib'][1] / 2**20:.2f} TiB | | "
                 f"{fit['p50_ms'][1]:,.0f} ms |")  # (tens of ms: seconds printed 0.0)
    lines += ["", "Fitted exponents (time or size ∝ nodes^b): "
              + ", ".join(f"{k} b = {v[0]:.2f}" for k, v in fit.items()) + "."]
    text = "\n".join(lines)
    print(text)
    if doc:
        from doc import replace_section

        replace_section("columnar-sizing", "## Sizing the columnar engine\n\n" + text)


if __name__ == "__main__":
    raise SystemExit(main())
