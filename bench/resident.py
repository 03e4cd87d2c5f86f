"""Views kept in Spark (``--state spark``): single link down/up with every region's state in
executors, against from-scratch evaluation on the same Spark session and the driver-held hot
path, side by side in one run.

    python bench/resident.py --topology topohub:backbone/americas --events 5 --doc

Reports the initial materialisation (insert rounds from nothing), per event latency p50/p99,
rounds and Spark jobs per batch, stored records per view fact, and checks at the end that the
views kept in Spark equal a from-scratch evaluation (a read for the check, not the hot path).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import pct  # noqa: E402


def measure(plan, facts, spark, args, *, gang: bool) -> tuple:
    """Load, then link down/up events, rounds run as one gang job per batch or one job per
    round; the engine and its figures."""
    from netrules.engine.spark.resident import ResidentEngine

    way = "gang" if gang else "job"
    res: dict = {}
    t = time.perf_counter()
    eng = ResidentEngine(plan, facts, spark=spark, parts=args.parts, gang=gang)
    d = eng.loaded
    res["load_s"] = time.perf_counter() - t
    res["load_rounds"], res["load_jobs"] = d.stats.rounds, d.stats.spark_jobs
    n_facts, records = eng.regions.counts()
    res["view_facts"], res["state_ratio"] = n_facts, records / max(1, n_facts)
    print(f"resident load ({way}): {n_facts} facts in {res['load_s']:.1f} s, "
          f"{d.stats.rounds} rounds, {d.stats.spark_jobs} jobs; state ratio "
          f"{res['state_ratio']:.2f}", flush=True)

    rng = random.Random(args.seed)
    by_pair: dict = {}
    for f in facts:
        by_pair.setdefault(tuple(sorted((f.args[0], f.args[1]))), []).append(f)
    chosen = rng.sample(sorted(by_pair), min(args.events, len(by_pair)))
    lat, rounds, jobs, changed = [], [], [], []
    decoded = eng.regions.decodes.value
    for pair in chosen:
        for sign in "-+":
            t = time.perf_counter()
            d = eng.apply([(sign, f) for f in by_pair[pair]])
            lat.append(time.perf_counter() - t)
            rounds.append(d.stats.rounds)
            jobs.append(d.stats.spark_jobs)
            changed.append(d.stats.added + d.stats.removed)
            print(f"  {sign}{pair}: {lat[-1] * 1e3:.0f} ms, {d.stats.rounds} rounds, "
                  f"{d.stats.spark_jobs} jobs, {changed[-1]} changed, "
                  f"{eng.regions.decodes.value} snapshot decodes so far", flush=True)
    res["decodes_per_batch"] = (eng.regions.decodes.value - decoded) / max(1, len(lat))
    res["down_p50_s"], res["up_p50_s"] = pct(lat[0::2], 50), pct(lat[1::2], 50)
    res.update(events=len(lat), p50_s=pct(lat, 50), p99_s=pct(lat, 99),
               rounds_per_batch=statistics.mean(rounds), jobs_per_batch=statistics.mean(jobs),
               mean_changed=statistics.mean(changed))

    return eng, res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="topohub:backbone/americas")
    ap.add_argument("--program", default="reachability")
    ap.add_argument("--events", type=int, default=5, help="link down/up pairs")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", choices=["gang", "job", "both"], default="both",
                    help="one gang job per batch, one job per round, or both side by side")
    ap.add_argument("--out", default=None)
    ap.add_argument("--doc", action="store_true")
    ap.add_argument("--section", default=None,
                    help="docs/benchmarks.md section (default: engine-resident, with the "
                         "program's name appended unless it is reachability)")
    args = ap.parse_args(argv)

    from netrules import programs
    from netrules.engine.session import count_jobs, get_spark
    from netrules.engine.spark.fixpoint import frame_facts, spark_evaluate
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    G = load_topology(args.topology)
    facts = link_facts(G)
    plan = plan_program(programs.load(args.program))
    res: dict = {"topology": args.topology, "nodes": G.number_of_nodes(),
                 "links": G.number_of_edges(), "program": args.program, "parts": args.parts,
                 "machine": f"{platform.machine()} {platform.python_version()}"}
    print(f"{args.topology}: {res['nodes']} nodes, {res['links']} links", flush=True)
    spark = get_spark()
    spark.range(1).count()

    ways = ["gang", "job"] if args.rounds == "both" else [args.rounds]
    engines = {}
    for way in ways:
        engines[way], res[way] = measure(plan, facts, spark, args, gang=way == "gang")

    t = time.perf_counter()
    df, st = spark_evaluate(spark, plan, facts, parts=args.parts)
    with count_jobs(spark):
        df.count()
    res["spark_scratch_s"] = time.perf_counter() - t  # the check below is not timed
    fresh = {(f.relation, f.args) for f in frame_facts(df, plan)}
    res["spark_scratch_rounds"], res["spark_scratch_jobs"] = st.rounds, st.spark_jobs
    for way, eng in engines.items():
        r = res[way]
        r["exact"] = set(eng.regions.facts()) == fresh
        r["ratio"] = res["spark_scratch_s"] / r["p50_s"]
        print(f"{way}: resident p50 {r['p50_s'] * 1e3:.0f} ms p99 {r['p99_s'] * 1e3:.0f} ms, "
              f"{r['rounds_per_batch']:.1f} rounds and {r['jobs_per_batch']:.1f} jobs per "
              f"batch; from scratch {res['spark_scratch_s']:.1f} s, {st.rounds} rounds; ratio "
              f"{r['ratio']:.1f}x; views equal from scratch: {r['exact']}", flush=True)
    res["exact"] = all(res[way]["exact"] for way in engines)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(res, indent=2))
    if args.doc:
        from doc import replace_section

        section = args.section or ("engine-resident" if args.program == "reachability"
                                   else f"engine-resident-{args.program}")
        replace_section(section, markdown(res, argv if argv is not None else sys.argv[1:]))
    return 0 if res["exact"] else 1


WAYS = {"gang": "regional maintenance, state in Spark, one gang job per batch",
        "job": "regional maintenance, state in Spark, one job per round"}


def markdown(res: dict, argv: list[str]) -> str:
    ways = [w for w in WAYS if w in res]
    rows = [
        f"| {WAYS[w]} ({res[w]['events']} events) | {res[w]['load_s']:.1f} s, "
        f"{res[w]['load_rounds']} rounds | {res[w]['p50_s'] * 1e3:,.0f} ms | "
        f"{res[w]['p99_s'] * 1e3:,.0f} ms | {res[w]['rounds_per_batch']:.1f} | "
        f"{res[w]['jobs_per_batch']:.1f} | {res[w]['state_ratio']:.2f} |" for w in ways]
    notes = []
    for w in ways:
        r = res[w]
        notes += [
            f"* {WAYS[w]}: from scratch / resident p50 **{r['ratio']:.1f}x**; link down p50 "
            f"{r['down_p50_s'] * 1e3:,.0f} ms, link up p50 "
            f"{r['up_p50_s'] * 1e3:,.0f} ms; snapshots decoded per batch "
            f"{r['decodes_per_batch']:.2f}; views equal a from-scratch evaluation after the "
            f"run: **{r['exact']}**"]
    first = res[ways[0]]
    return "\n".join([
        f"## Views kept in Spark (`--state spark`) on `{res['topology']}` ({res['program']})",
        "",
        f"Regenerate: `python bench/resident.py {' '.join(argv)}`. {res['nodes']:,} nodes, "
        f"{res['links']:,} links, {res['parts']} regions; one run ({res['machine']}). Every "
        "region's facts and their supports, counts and aggregate groups live in Spark "
        "executors; the driver holds the base ledger and relays the messages of the round in "
        "flight. A positive stage's link down runs kill rounds until no region finds a new "
        "suspect, a rederive round, then insert rounds; a counting stage (aggregates) "
        "overdeletes, then iterates until no count moves.",
        "",
        "| contender | initial materialisation | per link event p50 | p99 | rounds / batch "
        "| Spark jobs / batch | stored records / view fact |",
        "|---|---|---|---|---|---|---|",
        *rows,
        f"| from scratch on Spark, same session | {res['spark_scratch_s']:.1f} s, "
        f"{res['spark_scratch_rounds']} rounds | = {res['spark_scratch_s']:.1f} s per event | "
        f"| {res['spark_scratch_rounds']} | {res['spark_scratch_jobs']} | – |",
        "",
        *notes,
        f"* {first['mean_changed']:.0f} changed view tuples per event on average",
    ]) + "\n"


if __name__ == "__main__":
    sys.exit(main())
