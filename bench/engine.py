"""Single link down/up on a real topology: incremental maintenance vs from-scratch evaluation,
side by side in one run (issue 3's benchmark).

Contenders on the same view (reachability, or any shipped program):
  * netrules incremental (each strategy asked for), the hot path of the Spark engine;
  * netrules from scratch on Spark (partitioned many-hops-per-job evaluator, same session);
  * networkx full recompute (all-pairs reachability, or all-pairs Dijkstra for routing
    views): what a Python user writes by hand.
Reports latency p50/p99 per event, Spark jobs per batch, state ratio (stored derivation
records per view fact), and writes a markdown table (``--out``).

    python bench/engine.py --topology topohub:backbone/americas --events 20
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

ROUTING = {"best_routes", "min_cost"}


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="topohub:backbone/americas")
    ap.add_argument("--program", default="reachability")
    ap.add_argument("--events", type=int, default=20, help="link down/up pairs")
    ap.add_argument("--strategies", default="psn,dred")
    ap.add_argument("--section", help="docs/benchmarks.md section to write (default: engine, "
                    "or engine-PROGRAM for another program)")
    ap.add_argument("--dred-events", type=int, default=3, help="DRed is slow: fewer events")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--spark-cap", type=float, default=None, metavar="SECONDS",
                    help="stop Spark's from-scratch evaluation after this long and report "
                    "it as a lower bound")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="write results as JSON here")
    ap.add_argument("--doc", action="store_true",
                    help="regenerate this topology's section of docs/benchmarks.md")
    args = ap.parse_args(argv)

    import networkx as nx

    from netrules import programs
    from netrules.engine.strategies import get
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    G = load_topology(args.topology)
    facts = link_facts(G)
    plan = plan_program(programs.load(args.program))
    rng = random.Random(args.seed)
    res: dict = {"topology": args.topology, "nodes": G.number_of_nodes(),
                 "links": G.number_of_edges(), "program": args.program,
                 "machine": f"{platform.machine()} {platform.python_version()}",
                 "strategies": {}}
    print(f"{args.topology}: {res['nodes']} nodes, {res['links']} links, "
          f"{len(facts)} link facts", flush=True)

    D = nx.DiGraph()
    for f in facts:
        D.add_edge(f.args[0], f.args[1], cost=f.args[2])
    t = time.perf_counter()
    if args.program in ROUTING:  # what the view holds: each pair's least cost and its path
        pairs = sum(len(dist) - 1 for _, (dist, _paths) in
                    nx.all_pairs_dijkstra(D, weight="cost"))
        what = "all-pairs shortest paths (Dijkstra, costs and paths)"
    else:
        pairs = sum(len(nx.descendants(D, n)) for n in D)
        what = "all-pairs reachability"
    res["networkx_full_s"] = time.perf_counter() - t
    res["networkx_what"] = what
    print(f"networkx {what}: {pairs} pairs in {res['networkx_full_s']:.2f} s", flush=True)

    # the same single-link events for every contender: each a cut (down) then a heal (up)
    undirected = sorted({tuple(sorted((f.args[0], f.args[1]))) for f in facts})
    chosen = rng.sample(undirected, min(args.events, len(undirected)))
    by_pair = {}
    for f in facts:
        by_pair.setdefault(tuple(sorted((f.args[0], f.args[1]))), []).append(f)

    for name in args.strategies.split(","):
        strat = get(name)
        t = time.perf_counter()
        state = strat.materialize(plan, facts)
        mat = time.perf_counter() - t
        view = state.fact_count()
        n_events = args.dred_events if name == "dred" else len(chosen)
        lat, changed = [], []
        for pair in chosen[:n_events]:
            for sign in "-+":
                d = strat.apply(state, [(sign, f) for f in by_pair[pair]])
                lat.append(d.stats.seconds)
                changed.append(d.stats.added + d.stats.removed)
        r = {"materialize_s": mat, "view_facts": view,
             "state_ratio": state.stored_records() / max(view, 1),
             "events": len(lat), "p50_s": pct(lat, 50), "p99_s": pct(lat, 99),
             "mean_changed": statistics.mean(changed) if changed else 0,
             "us_per_changed_tuple": 1e6 * sum(lat) / max(1, sum(changed))}
        res["strategies"][name] = r
        print(f"{name}: materialize {mat:.1f} s, {view} facts, state ratio "
              f"{r['state_ratio']:.2f}; {len(lat)} link events p50 {r['p50_s'] * 1e3:.1f} ms "
              f"p99 {r['p99_s'] * 1e3:.1f} ms, {r['mean_changed']:.0f} changed tuples/event, "
              f"{r['us_per_changed_tuple']:.1f} us/changed tuple", flush=True)
        del state

    if not args.no_spark:
        from netrules.engine.session import count_jobs, get_spark
        from netrules.engine.spark.engine import SparkEngine
        from netrules.engine.spark.fixpoint import spark_evaluate

        spark = get_spark()
        spark.range(1).count()  # warm the JVM and Python workers
        t = time.perf_counter()
        done = capped(args.spark_cap, spark,
                      lambda: spark_evaluate(spark, plan, facts, parts=args.parts))
        res["spark_scratch_s"] = time.perf_counter() - t
        if done is None:
            res["spark_scratch_capped"] = True
            print(f"spark from scratch: stopped after {res['spark_scratch_s']:.1f} s "
                  "(--spark-cap)", flush=True)
        else:
            df, st = done
            with count_jobs(spark):
                n = df.count()
            res["spark_scratch_s"] = time.perf_counter() - t
            res["spark_scratch_rounds"] = st.rounds
            res["spark_scratch_jobs"] = st.spark_jobs + 1
            print(f"spark from scratch: {n} facts in {res['spark_scratch_s']:.1f} s, "
                  f"{st.rounds} rounds, {st.spark_jobs + 1} jobs", flush=True)
        eng = SparkEngine(plan, spark=spark, parts=args.parts)
        eng.load(facts)
        jobs, lat = [], []
        for pair in chosen[: min(5, len(chosen))]:
            for sign in "-+":
                t = time.perf_counter()
                d = eng.apply([(sign, f) for f in by_pair[pair]])
                lat.append(time.perf_counter() - t)
                jobs.append(d.stats.spark_jobs)
        res["spark_engine_jobs_per_batch"] = statistics.mean(jobs)
        res["spark_engine_p50_s"] = pct(lat, 50)
        print(f"spark engine (hot path + mirror): {statistics.mean(jobs):.2f} jobs/batch, "
              f"p50 {pct(lat, 50) * 1e3:.1f} ms", flush=True)
        best = res["strategies"].get("psn") or next(iter(res["strategies"].values()))
        res["ratio_incremental_vs_spark_scratch"] = res["spark_scratch_s"] / best["p50_s"]
        print(f"ratio from-scratch(Spark) / incremental p50: "
              f"{'at least ' if res.get('spark_scratch_capped') else ''}"
              f"{res['ratio_incremental_vs_spark_scratch']:.0f}x", flush=True)
    best = res["strategies"].get("psn") or next(iter(res["strategies"].values()))
    res["ratio_networkx_vs_incremental"] = res["networkx_full_s"] / best["p50_s"]
    print(f"ratio networkx full recompute / incremental p50: "
          f"{res['ratio_networkx_vs_incremental']:.1f}x", flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=2))
    if args.doc:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from doc import replace_section

        section = args.section or (
            "engine" if args.program == "reachability" else f"engine-{args.program}")
        replace_section(section, markdown(res, argv if argv is not None else sys.argv[1:]))
    return 0


def capped(cap: float | None, spark, run):
    """``run()``, or None when it is still going after ``cap`` seconds: its Spark jobs are
    then cancelled until it gives up, so the session is free for the next contender."""
    if cap is None:
        return run()
    import threading

    box: dict = {}

    def target() -> None:
        try:
            box["out"] = run()
        except Exception as err:  # noqa: BLE001 - a cancelled job surfaces as any error
            box["err"] = err

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(cap)
    if not th.is_alive():
        if "err" in box:
            raise box["err"]
        return box["out"]
    while th.is_alive():
        spark.sparkContext.cancelAllJobs()
        th.join(1.0)
    return None


def markdown(res: dict, argv: list[str]) -> str:
    """The single-link section of docs/benchmarks.md, from one run's results."""
    ps = res["strategies"]
    lines = [
        f"## Single link down/up on `{res['topology']}` ({res['program']})",
        "",
        f"Regenerate: `python bench/engine.py {' '.join(argv)}`. {res['nodes']:,} nodes, "
        f"{res['links']:,} links; every contender measured in this one run "
        f"({res['machine']}).",
        "",
        "| contender | initial materialisation | per link event p50 | p99 | Spark jobs per batch "
        "| stored records / view fact |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in ps.items():
        lines.append(f"| netrules incremental `{name}` ({r['events']} events) | "
                     f"{r['materialize_s']:.1f} s | {r['p50_s'] * 1e3:,.1f} ms | "
                     f"{r['p99_s'] * 1e3:,.1f} ms | 0 | {r['state_ratio']:.2f} |")
    if "spark_scratch_s" in res:
        lines.append(f"| netrules `--engine spark` (hot path + Spark mirror) | – | "
                     f"{res['spark_engine_p50_s'] * 1e3:,.1f} ms | – | "
                     f"{res['spark_engine_jobs_per_batch']:.2f} | – |")
        if res.get("spark_scratch_capped"):
            lines.append(f"| netrules from scratch on Spark | not done after "
                         f"{res['spark_scratch_s']:,.0f} s (stopped) | "
                         f"> {res['spark_scratch_s']:,.0f} s per event | | – | – |")
        else:
            lines.append(f"| netrules from scratch on Spark | {res['spark_scratch_s']:.1f} s, "
                         f"{res['spark_scratch_rounds']} rounds, "
                         f"{res['spark_scratch_jobs']} jobs | "
                         f"= {res['spark_scratch_s']:.1f} s per event | | "
                         f"{res['spark_scratch_jobs']} | – |")
    lines.append(f"| networkx full recompute ({res.get('networkx_what', 'all-pairs')}) | "
                 f"{res['networkx_full_s']:.2f} s | "
                 f"= {res['networkx_full_s']:.2f} s per event | | – | – |")
    lines += ["", "Ratios measured in that run:"]
    if "ratio_incremental_vs_spark_scratch" in res:
        at_least = "at least " if res.get("spark_scratch_capped") else ""
        lines.append(f"* from scratch on Spark / incremental p50: {at_least}"
                     f"**{res['ratio_incremental_vs_spark_scratch']:,.0f}x**")
    else:
        lines.append("* from scratch on Spark: not run (`--no-spark`)")
    best = ps.get("psn") or next(iter(ps.values()))
    lines.append(f"* from scratch on the driver (the materialisation above) / incremental p50: "
                 f"**{best['materialize_s'] / best['p50_s']:,.0f}x**")
    lines.append(f"* networkx full recompute / incremental p50: "
                 f"**{res['ratio_networkx_vs_incremental']:.1f}x**")
    lines.append(f"* changed view tuples per event: {best['mean_changed']:.0f} on average; "
                 f"{best['us_per_changed_tuple']:,.0f} µs per changed tuple")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
