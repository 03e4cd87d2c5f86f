"""Peers and workloads: netrules against the tools an operator would otherwise use, on several
topologies and failure workloads, measured side by side in one run (issue 8's benchmark).

Why one command: every ratio in docs/benchmarks.md must come from contenders timed in the same
process on the same machine, so this script runs them all in lockstep, checks they agree, and
regenerates its own section of docs/benchmarks.md (between the ``peers`` markers; the rest of
the file is kept) and the plots under docs/img/.

Contenders on the same view (reachability):
  * netrules ``columnar`` (the default engine), and per-fact ``psn`` and ``dred`` (dred on
    small graphs only) for comparison;
  * ``rematerialize``: netrules' from-scratch reference path (recompute and diff per batch);
  * netrules engine ``--engine spark`` (psn hot path + Spark mirror): Spark jobs per batch;
  * netrules from scratch on Spark (``spark_evaluate``, partitioned, same session);
  * networkx full recompute (all-pairs ``descendants``) after every batch;
  * Spark SQL ``WITH RECURSIVE``: UNION ALL only, so it runs on an acyclic input (a fat-tree
    oriented upwards) and is reported as unable to answer on the cyclic ones.

Workloads (every one a sequence of down/up pairs, so each starts from the full topology):
initial materialisation; k = 1, 10, 100 links down at once then up; one link flapping 5
times; a node failure (all its links); a partition (every link across a breadth-first cut).

    python bench/peers.py --quick     # about 2 minutes
    python bench/peers.py             # about 15 minutes: adds americas and larger sizes
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
CTE_CYCLIC = "cannot answer (cycles need UNION, Spark SQL allows only UNION ALL)"

Batch = list[tuple[str, Any]]


# ---------------------------------------------------------------- measurement helpers

def pct(xs: list[float], p: float) -> float:
    """Nearest-rank percentile (p99 of a few batches is their maximum, said so in the docs)."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, max(0, math.ceil(p / 100 * len(xs)) - 1))]


def _status(key: str) -> int:
    """VmRSS / VmHWM of this process in bytes (Linux); 0 elsewhere."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def reset_peak() -> None:
    """Reset VmHWM so the next peak belongs to one contender (Linux clear_refs 5)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_growth(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, seconds, peak RSS growth in MiB): tracemalloc would slow Python code ~2x and
    distort the timing it sits next to, so peak resident memory is read from the kernel."""
    gc.collect()
    base = _status("VmRSS")
    reset_peak()
    t = time.perf_counter()
    out = fn()
    sec = time.perf_counter() - t
    return out, sec, max(0, _status("VmHWM") - base) / 2**20


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, seconds) of ``fn()`` with the cyclic collector paused, as ``timeit`` does.

    Why: the bench keeps networkx's answers (sets of a million tuples on a backbone) alive
    beside the contenders, so a full collection that happens to start inside a timed batch
    walks those millions of objects, a few hundred milliseconds charged to whichever
    contender allocated last; the engine itself holds few Python objects. Every contender
    is timed this way, and collections run between the timed calls."""
    was = gc.isenabled()
    gc.disable()
    try:
        t = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t
    finally:
        if was:
            gc.enable()


def ms(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x >= 10:
        return f"{x:,.1f} s"
    return f"{x * 1e3:,.1f} ms" if x < 1 else f"{x:,.2f} s"


# ---------------------------------------------------------------- workloads

@dataclass
class Workload:
    name: str
    pairs: list[tuple[Batch, Batch]]  # (down, up) batches

    @property
    def batches(self) -> list[Batch]:
        return [b for pair in self.pairs for b in pair]


def make_workloads(G: Any, facts: list, rng: random.Random, *, singles: int,
                   reps: dict[int, int]) -> list[Workload]:
    """The failure workloads on G, each a list of (down, up) pairs of signed link facts."""
    import networkx as nx

    by_pair: dict[tuple, list] = {}
    for f in facts:
        by_pair.setdefault(tuple(sorted((f.args[0], f.args[1]), key=str)), []).append(f)
    links = sorted(by_pair, key=str)

    def pair(chosen: list[tuple]) -> tuple[Batch, Batch]:
        fs = [f for lk in chosen for f in by_pair[lk]]
        return [("-", f) for f in fs], [("+", f) for f in fs]

    out = [Workload("k=1 (single link down/up)",
                    [pair([lk]) for lk in rng.sample(links, min(singles, len(links)))])]
    for k in (10, 100):
        if k <= len(links):
            out.append(Workload(f"k={k} links at once",
                                [pair(rng.sample(links, k)) for _ in range(reps.get(k, 1))]))
    flap = rng.choice(links)
    out.append(Workload("flap (1 link down/up ×5)", [pair([flap]) for _ in range(5)]))
    U = nx.Graph(G)
    degs = [n for n in sorted(U, key=str) if U.degree(n) >= 2] or sorted(U, key=str)
    node = rng.choice(degs)
    out.append(Workload(f"node failure ({U.degree(node)} links)",
                        [pair([lk for lk in links if node in lk])]))
    start = rng.choice(sorted(U, key=str))
    order = list(nx.bfs_tree(U, start))
    side = set(order[: len(order) // 2])
    cut = [lk for lk in links if (lk[0] in side) != (lk[1] in side)]
    out.append(Workload(f"partition ({len(cut)}-link cut)", [pair(cut)]))
    return out


# ---------------------------------------------------------------- contenders

class NetworkxFull:
    """What a Python user writes by hand: keep a DiGraph, recompute all-pairs reachability."""

    def __init__(self, facts: list) -> None:
        import networkx as nx

        self.D = nx.DiGraph()
        for f in facts:
            self.D.add_edge(f.args[0], f.args[1])

    def apply(self, batch: Batch) -> None:
        for sign, f in batch:
            if sign == "-":
                if self.D.has_edge(f.args[0], f.args[1]):
                    self.D.remove_edge(f.args[0], f.args[1])
            else:
                self.D.add_edge(f.args[0], f.args[1])

    def step(self, batch: Batch) -> set[tuple]:
        """One batch, then the recompute: what a timed networkx batch is."""
        self.apply(batch)
        return self.reachable()

    def reachable(self) -> set[tuple]:
        import networkx as nx

        out: set[tuple] = set()
        for n in self.D:
            desc = nx.descendants(self.D, n)
            out.update((n, d) for d in desc)
            if any(p == n or p in desc for p in self.D.predecessors(n)):
                out.add((n, n))  # n is on a cycle: reachable(@n,n) holds in NDlog
        return out


@dataclass
class Series:
    """Per-workload latencies, changed tuples and events of one contender."""

    lat: dict[str, list[float]] = field(default_factory=dict)
    changed: dict[str, list[int]] = field(default_factory=dict)
    events: dict[str, list[int]] = field(default_factory=dict)
    jobs: dict[str, list[int]] = field(default_factory=dict)

    def add(self, wl: str, sec: float, changed: int, events: int, jobs: int = 0) -> None:
        self.lat.setdefault(wl, []).append(sec)
        self.changed.setdefault(wl, []).append(changed)
        self.events.setdefault(wl, []).append(events)
        self.jobs.setdefault(wl, []).append(jobs)

    def summary(self, wl: str) -> dict[str, float] | None:
        lat = self.lat.get(wl)
        if not lat:
            return None
        tot = sum(lat)
        return {"batches": len(lat), "p50_s": pct(lat, 50), "p99_s": pct(lat, 99),
                "mean_s": tot / len(lat),
                "events_per_s": sum(self.events[wl]) / tot if tot else float("inf"),
                "us_per_changed": 1e6 * tot / max(1, sum(self.changed[wl])),
                "changed_per_batch": statistics.mean(self.changed[wl]),
                "jobs_per_batch": statistics.mean(self.jobs[wl])}


def reach_of(state: Any) -> set[tuple]:
    return set(state.db.rel.get("reachable", ()))


def bench_topology(label: str, spec: str, args: argparse.Namespace, spark: Any) -> dict:
    """Every contender on every workload of one topology, in lockstep, checked for agreement."""
    from netrules import programs
    from netrules.engine.strategies import get
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    G = load_topology(spec)
    facts = link_facts(G)
    plan = plan_program(programs.load("reachability"))
    n = G.number_of_nodes()
    large = n > args.large_nodes
    rng = random.Random(args.seed)
    wls = make_workloads(G, facts, rng, singles=args.singles if not large else args.singles_large,
                         reps={10: args.reps, 100: 1})
    res: dict[str, Any] = {"label": label, "spec": spec, "nodes": n,
                           "links": G.number_of_edges(), "link_facts": len(facts),
                           "workloads": [w.name for w in wls], "contenders": {}}
    print(f"\n== {label} ({spec}): {n} nodes, {G.number_of_edges()} links", flush=True)

    # which contenders run here, and how many (down, up) pairs of each workload they take
    strategies = ["columnar", "psn"]
    if n <= args.dred_max_nodes:
        strategies.append("dred")
    strategies.append("rematerialize")
    if args.strategies is not None:
        keep = set(args.strategies.split(","))
        strategies = [s for s in strategies if s in keep or s == "columnar"]
    cap = {"columnar": None, "psn": 3 if large else None, "dred": None,
           "rematerialize": 1 if large else None, "networkx": None if not large else 3}
    states: dict[str, Any] = {}
    series: dict[str, Series] = {}
    for name in strategies:
        strat = get(name)
        state, sec, mem = peak_growth(lambda s=strat: s.materialize(plan, facts))
        states[name] = state
        series[name] = Series()
        res["contenders"][name] = {
            "materialize_s": sec, "peak_rss_mib": mem, "view_facts": state.fact_count(),
            "records_per_fact": state.stored_records() / max(1, state.fact_count()),
            "workloads": {}}
        print(f"  {name}: materialize {sec:.2f} s, {state.fact_count()} facts, "
              f"records/fact {res['contenders'][name]['records_per_fact']:.2f}, "
              f"peak RSS +{mem:.0f} MiB", flush=True)
    nxf, sec, mem = peak_growth(lambda: NetworkxFull(facts))
    want, sec2, mem2 = peak_growth(nxf.reachable)
    res["contenders"]["networkx"] = {"materialize_s": sec + sec2, "peak_rss_mib": max(mem, mem2),
                                     "view_facts": len(want), "workloads": {}}
    series["networkx"] = Series()
    exact = reach_of(states["columnar"]) == want
    if "psn" in states:
        exact &= reach_of(states["psn"]) == want
    res["reachable_pairs"] = len(want)
    print(f"  networkx: all-pairs {len(want)} pairs in {sec + sec2:.2f} s; netrules == networkx: "
          f"{exact}", flush=True)

    # the Spark engine (psn hot path + mirror) on the single-link workload: jobs per batch
    spark_engine = None
    if spark is not None and not large:
        from netrules.engine.spark.engine import SparkEngine

        spark_engine = SparkEngine(plan, spark=spark, parts=args.parts)
        spark_engine.load(facts)
        series["spark_engine"] = Series()

    from netrules.engine.session import count_jobs

    def runs(name: str, wl: Workload, i: int) -> bool:
        """Whether ``name`` takes pair ``i`` of ``wl`` (and so is checked after it)."""
        if cap[name] is not None and i >= cap[name]:
            return False
        # a from-scratch batch on a large graph: single links only
        return not (name == "rematerialize" and large and wl is not wls[0])

    for wl in wls:
        for i, (down, up) in enumerate(wl.pairs):
            for half, batch in (("down", down), ("up", up)):
                for name in strategies:
                    if not runs(name, wl, i):
                        continue
                    d, sec = timed(partial(get(name).apply, states[name], batch))
                    series[name].add(wl.name, sec, d.stats.added + d.stats.removed, len(batch))
                if cap["networkx"] is None or i < cap["networkx"]:
                    got, sec = timed(partial(nxf.step, batch))
                    series["networkx"].add(wl.name, sec, 0, len(batch))
                    if half == "down" and i == 0:
                        for name in strategies:
                            if runs(name, wl, i):
                                exact &= reach_of(states[name]) == got
                else:
                    nxf.apply(batch)
                if spark_engine is not None and wl is wls[0]:
                    with count_jobs(spark) as jobs:
                        d, sec = timed(partial(spark_engine.apply, batch))
                    series["spark_engine"].add(wl.name, sec, d.stats.added + d.stats.removed,
                                               len(batch), d.stats.spark_jobs or jobs.jobs)
        line = [f"  {wl.name}:"]
        for name in [*strategies, "networkx"]:
            s = series[name].summary(wl.name)
            if s:
                line.append(f"{name} p50 {ms(s['p50_s'])} p99 {ms(s['p99_s'])}")
        print(" | ".join(line), flush=True)
    if spark_engine is not None:
        with count_jobs(spark) as jobs:
            n_mirror = spark_engine.views_frame().count()
        res["spark_engine_final_read_jobs"] = jobs.jobs
        res["spark_engine_mirror_rows"] = n_mirror
        res["contenders"]["spark_engine"] = {"workloads": {}}
    for name, s in series.items():
        for wl in wls:
            summ = s.summary(wl.name)
            if summ:
                res["contenders"][name]["workloads"][wl.name] = summ
    res["exact"] = exact
    del states
    gc.collect()

    # netrules from scratch on Spark, same session: its cost does not depend on the batch
    if spark is not None and (not large or args.spark_large):
        from netrules.engine.spark.fixpoint import spark_evaluate

        t = time.perf_counter()
        df, st = spark_evaluate(spark, plan, facts, parts=args.parts)
        with count_jobs(spark) as jobs:  # (spark_evaluate counts its own jobs)
            nrows = df.filter("rel = 'reachable'").count()
        sec = time.perf_counter() - t
        res["contenders"]["spark_scratch"] = {"materialize_s": sec, "rounds": st.rounds,
                                              "jobs": st.spark_jobs + jobs.jobs,
                                              "view_facts": nrows}
        res["exact"] &= nrows == len(want)
        print(f"  spark from scratch: {sec:.1f} s, {st.rounds} rounds, "
              f"{res['contenders']['spark_scratch']['jobs']} jobs, "
              f"{nrows} reachable (== networkx: {nrows == len(want)})", flush=True)
    elif spark is not None:
        res["contenders"]["spark_scratch"] = {"skipped": "large graph; --spark-large runs it"}
    res["cte"] = CTE_CYCLIC
    return res


def bench_cte(spark: Any, k: int) -> dict:
    """Spark SQL WITH RECURSIVE on an acyclic input (fat-tree k, links oriented up towards the
    core), against netrules psn and networkx on the same facts."""
    import networkx as nx

    from netrules import programs
    from netrules.engine.session import count_jobs
    from netrules.engine.strategies import get
    from netrules.facts import Fact
    from netrules.plan import plan_program
    from topologies import fat_tree

    G = fat_tree(k)
    layer = {n: (2 if n.startswith("c") else 1 if "a" in n else 0) for n in G}
    edges = [(u, v) if layer[u] < layer[v] else (v, u) for u, v in G.edges()]
    facts = [Fact("link", (u, v, 1)) for u, v in edges]
    D = nx.DiGraph(edges)
    t = time.perf_counter()
    want = {(n, d) for n in D for d in nx.descendants(D, n)}
    nx_s = time.perf_counter() - t
    plan = plan_program(programs.load("reachability"))
    t = time.perf_counter()
    st = get("psn").materialize(plan, facts)
    psn_s = time.perf_counter() - t
    got_psn = reach_of(st)
    out: dict[str, Any] = {"k": k, "nodes": D.number_of_nodes(), "edges": len(edges),
                           "pairs": len(want), "networkx_s": nx_s, "psn_s": psn_s,
                           "psn_equal": got_psn == want}
    if spark is None:
        out["cte"] = "not run (--no-spark)"
        return out
    spark.createDataFrame(edges, "src string, dst string").createOrReplaceTempView("e")
    sql = ("WITH RECURSIVE r(src, dst) AS (SELECT src, dst FROM e UNION ALL "
           "SELECT r.src, e.dst FROM r JOIN e ON r.dst = e.src) SELECT DISTINCT src, dst FROM r")
    try:
        t = time.perf_counter()
        with count_jobs(spark) as jobs:
            rows = spark.sql(sql).collect()
        out["cte_s"] = time.perf_counter() - t
        out["cte_jobs"] = jobs.jobs
        out["cte_equal"] = {(r.src, r.dst) for r in rows} == want
    except Exception as e:  # noqa: BLE001 - report what Spark said, whatever it was
        out["cte"] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
    print(f"\n== WITH RECURSIVE on fat-tree k={k} oriented upwards: {out}", flush=True)
    return out


def size_point(n: int, m: int, seed: int, singles: int) -> dict:
    """One sizing measurement (run in its own interpreter by :func:`bench_sizing`)."""
    from netrules import programs
    from netrules.engine.strategies import get
    from netrules.plan import plan_program
    from topologies import barabasi_albert, link_facts

    plan = plan_program(programs.load("reachability"))
    G = barabasi_albert(n, m, seed=seed)
    facts = link_facts(G)
    state, sec, mem = peak_growth(lambda: get("psn").materialize(plan, facts))
    rng = random.Random(seed)
    links = sorted({tuple(sorted((f.args[0], f.args[1]), key=str)) for f in facts}, key=str)
    lat = []
    for lk in rng.sample(links, min(singles, len(links))):
        fs = [f for f in facts if tuple(sorted((f.args[0], f.args[1]), key=str)) == lk]
        for sign in "-+":
            t = time.perf_counter()
            get("psn").apply(state, [(sign, f) for f in fs])
            lat.append(time.perf_counter() - t)
    return {"nodes": n, "links": G.number_of_edges(), "facts": state.fact_count(),
            "materialize_s": sec, "peak_rss_mib": mem,
            "bytes_per_fact": mem * 2**20 / max(1, state.fact_count()),
            "event_p50_s": pct(lat, 50), "event_p99_s": pct(lat, 99)}


def bench_sizing(sizes: list[int], m: int, seed: int, singles: int) -> dict:
    """psn materialisation time and memory on preferential-attachment graphs of growing size
    (AS-level graphs are heavy-tailed), fitted as power laws for docs/deploy.md's sizing."""

    import subprocess

    rows = []
    for n in sizes:
        # a fresh interpreter per size: freed memory of earlier graphs would otherwise be
        # reused and hide the growth
        point = f"{n},{m},{seed},{singles}"
        out = subprocess.run([sys.executable, __file__, "--size-point", point],
                             capture_output=True, text=True, check=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        rows.append(row)
        print(f"  sizing ba({n},{m}): {row['facts']} facts, materialize "
              f"{row['materialize_s']:.1f} s, +{row['peak_rss_mib']:.0f} MiB "
              f"({row['bytes_per_fact']:.0f} B/fact), event p50 {ms(row['event_p50_s'])}",
              flush=True)

    def fit(ys: list[float]) -> tuple[float, float]:
        xs = [math.log(r["nodes"]) for r in rows]
        ls = [math.log(max(y, 1e-9)) for y in ys]
        mx, my = statistics.mean(xs), statistics.mean(ls)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ls, strict=True)) / max(
            1e-12, sum((x - mx) ** 2 for x in xs))
        return math.exp(my - b * mx), b

    target = 75_000
    fits = {}
    for key in ("materialize_s", "peak_rss_mib", "facts", "event_p50_s"):
        a, b = fit([r[key] for r in rows])
        fits[key] = {"a": a, "b": b, "at_75k": a * target**b}
    return {"m": m, "rows": rows, "fits": fits, "target_nodes": target}


# ---------------------------------------------------------------- report

CONTENDER_LABEL = {
    "columnar": "netrules `columnar` (default)",
    "psn": "netrules `psn` (per fact)", "dred": "netrules `dred`",
    "rematerialize": "netrules `rematerialize` (from scratch, driver)",
    "spark_engine": "netrules `--engine spark` (psn + mirror)",
    "spark_scratch": "netrules from scratch on Spark", "networkx": "networkx full recompute",
}


def render(results: dict) -> str:
    """The "Peers and workloads" section of docs/benchmarks.md, from one run's results."""
    r = results
    L = [BEGIN, "## Peers and workloads", "",
         f"Regenerate with `{r['command']}` ({r['elapsed_s'] / 60:.1f} minutes on "
         f"{r['machine']}; this section and `docs/img/peers_*.png` are rewritten, the rest of "
         "this file is kept). Every number below was printed by that one run: contenders run "
         "in lockstep on the same batches in one process (Spark: the same local session), and "
         "after the first down batch of every workload each contender's `reachable` view is "
         "compared with networkx's. Every batch of every contender is timed with Python's "
         "cyclic collector paused, as `timeit` does (networkx's answers, a million tuples on "
         "a backbone, stay alive beside them, and a collection starting inside a batch walked "
         "them all). p99 is the nearest-rank 99th percentile, i.e. the slowest "
         "batch when a workload has fewer than 100 batches; with two batches (one down, one "
         "up) the p50 is the cheaper of the two, for networkx a recompute of the graph the "
         "down batch left, so each workload is also compared whole: the ratio of mean batch "
         "times over its down and up batches (the ratio of total times where both contenders "
         "ran every batch). Peak memory is the growth of the "
         "process's peak resident set (VmHWM) while materialising, not tracemalloc, which would "
         "slow the timed code; in this shared process freed memory is reused, so it is a lower "
         "bound (the sizing table measures each size in a fresh interpreter). Spark from "
         "scratch runs in the JVM and Python workers: its memory is not in that column. No "
         "test asserts a time.", ""]
    for t in r["topologies"]:
        c = t["contenders"]
        L += [f"### {t['label']}: `{t['spec']}`", "",
              f"{t['nodes']:,} nodes, {t['links']:,} links ({t['link_facts']:,} directed link "
              f"facts), {t['reachable_pairs']:,} reachable pairs. All contenders agree: "
              f"**{'yes' if t['exact'] else 'NO'}**.", "",
              "| contender | initial materialisation | stored records / view fact "
              "| peak RSS growth (lower bound) | Spark jobs per batch |",
              "|---|---|---|---|---|"]
        for name in ("columnar", "psn", "dred", "rematerialize", "networkx", "spark_engine",
                     "spark_scratch"):
            if name not in c:
                continue
            x = c[name]
            if "skipped" in x:
                L.append(f"| {CONTENDER_LABEL[name]} | not run: {x['skipped']} | | | |")
                continue
            mat = ms(x.get("materialize_s")) if "materialize_s" in x else "(loads psn's)"
            if name == "spark_scratch":
                mat += f", {x['rounds']} rounds"
            rec = f"{x['records_per_fact']:.2f}" if "records_per_fact" in x else "–"
            mem = f"{x['peak_rss_mib']:,.0f} MiB" if "peak_rss_mib" in x else "–"
            if name == "spark_engine":
                w = next(iter(x["workloads"].values()), None)
                jobs = f"{w['jobs_per_batch']:.2f}" if w else "–"
                jobs += f" (+{t.get('spark_engine_final_read_jobs', 0)} to read the mirror)"
            elif name == "spark_scratch":
                jobs = f"{x['jobs']} (one evaluation)"
            else:
                jobs = "0 (in process)"
            L.append(f"| {CONTENDER_LABEL[name]} | {mat} | {rec} | {mem} | {jobs} |")
        L += ["| Spark SQL `WITH RECURSIVE` | " + t["cte"] + " | | | |", ""]
        names = [n for n in ("columnar", "psn", "dred", "rematerialize", "spark_engine",
                             "networkx") if n in c and "workloads" in c[n]]
        head = "| workload | batches | changed tuples / batch | " + " | ".join(
            f"{CONTENDER_LABEL[n]} p50 / p99" for n in names)
        head += (" | networkx / columnar p50 | networkx / columnar, whole workload "
                 "| from scratch on Spark | columnar events/s | columnar µs / changed tuple |")
        L += [head, "|" + "---|" * (7 + len(names) + 1)]
        sc = c.get("spark_scratch", {})
        sc_cell = f"= {ms(sc['materialize_s'])}" if "materialize_s" in sc else "not run"
        for wl in t["workloads"]:
            p = c["columnar"]["workloads"].get(wl)
            if not p:
                continue
            nxw = c.get("networkx", {}).get("workloads", {}).get(wl)
            vs_nx = f"**{nxw['p50_s'] / p['p50_s']:,.1f}x**" if nxw and p["p50_s"] else "–"
            whole = f"**{nxw['mean_s'] / p['mean_s']:,.1f}x**" if nxw and p["mean_s"] else "–"
            cells = []
            for n in names:
                w = c[n]["workloads"].get(wl)
                if not w:
                    cells.append("–")
                    continue
                cell = f"{ms(w['p50_s'])} / {ms(w['p99_s'])}"
                if w["batches"] < p["batches"]:
                    cell += f" ({w['batches']} batches)"
                cells.append(cell)
            L.append(f"| {wl} | {p['batches']} | {p['changed_per_batch']:,.0f} | "
                     + " | ".join(cells) + f" | {vs_nx} | {whole} | {sc_cell} | "
                     f"{p['events_per_s']:,.0f} | "
                     f"{p['us_per_changed']:,.1f} |")
        k1 = t["workloads"][0]
        p50 = c["columnar"]["workloads"][k1]["p50_s"]
        ratios = []
        for n in ("networkx", "psn", "rematerialize", "dred"):
            w = c.get(n, {}).get("workloads", {}).get(k1)
            if w:
                ratios.append(f"{CONTENDER_LABEL[n]} / columnar p50: "
                              f"**{w['p50_s'] / p50:,.1f}x**")
        if "materialize_s" in sc:
            ratios.append(f"from scratch on Spark / columnar p50: "
                          f"**{sc['materialize_s'] / p50:,.0f}x**")
        L += ["", "Ratios on single link events (this run): " + "; ".join(ratios) + ".", ""]
    cte = r.get("cte")
    if cte:
        L += ["### Spark SQL `WITH RECURSIVE` on an acyclic input", "",
              f"A fat-tree k={cte['k']} with every link oriented towards the core "
              f"({cte['nodes']} switches, {cte['edges']} directed links, {cte['pairs']:,} "
              "reachable pairs) is a DAG, so UNION ALL terminates (it enumerates paths, "
              "then `DISTINCT`). On every cyclic topology above it cannot answer: set-semantics "
              "closure needs UNION, which Spark SQL refuses in a recursive CTE.", "",
              "| contender | time | answer equals networkx |", "|---|---|---|",
              f"| networkx descendants | {ms(cte['networkx_s'])} | (reference) |",
              f"| netrules `psn` materialise | {ms(cte['psn_s'])} | "
              f"{'yes' if cte['psn_equal'] else 'NO'} |"]
        if "cte_s" in cte:
            L.append(f"| Spark SQL `WITH RECURSIVE` (UNION ALL + DISTINCT) | {ms(cte['cte_s'])}, "
                     f"{cte['cte_jobs']} Spark jobs | {'yes' if cte['cte_equal'] else 'NO'} |")
        else:
            L.append(f"| Spark SQL `WITH RECURSIVE` | {cte.get('cte')} | – |")
        L.append("")
    sz = r.get("sizing")
    if sz:
        L += ["### Sizing: psn materialisation on growing preferential-attachment graphs", "",
              f"`barabasi_albert(n, {sz['m']})` graphs (heavy-tailed like AS-level graphs); "
              "used by `docs/deploy.md`. The last row is a power-law **extrapolation** "
              "(least squares on log-log), not a measurement.", "",
              "| nodes | links | facts | psn materialise | peak RSS growth | bytes / fact "
              "| single link event p50 / p99 |", "|---|---|---|---|---|---|---|"]
        for row in sz["rows"]:
            L.append(f"| {row['nodes']:,} | {row['links']:,} | {row['facts']:,} | "
                     f"{ms(row['materialize_s'])} | {row['peak_rss_mib']:,.0f} MiB | "
                     f"{row['bytes_per_fact']:,.0f} | {ms(row['event_p50_s'])} / "
                     f"{ms(row['event_p99_s'])} |")
        f = sz["fits"]
        L.append(f"| **{sz['target_nodes']:,} (extrapolated)** | | {f['facts']['at_75k']:,.3g} | "
                 f"{f['materialize_s']['at_75k'] / 3600:,.3g} h | "
                 f"{f['peak_rss_mib']['at_75k'] / 2**20:,.3g} TiB | | "
                 f"{ms(f['event_p50_s']['at_75k'])} |")
        L += ["", "Fitted exponents (time or size ∝ nodes^b): " + ", ".join(
            f"{k} b = {v['b']:.2f}" for k, v in f.items()) + ".", ""]
    if r.get("world"):
        L += [f"### backbone/world: {r['world']}", ""]
    L += ["![p50 latency per workload](img/peers_latency.png)", "",
          "![initial materialisation](img/peers_materialize.png)", ""]
    if sz:
        L += ["![sizing](img/peers_sizing.png)", ""]
    L.append(END)
    return "\n".join(L)


def write_section(doc: Path, section: str) -> None:
    """Replace the peers section of docs/benchmarks.md, or append it; keep everything else."""
    text = doc.read_text(encoding="utf-8") if doc.exists() else "# Benchmarks\n"
    if BEGIN in text and END in text:
        pre, rest = text.split(BEGIN, 1)
        post = rest.split(END, 1)[1]
        text = pre + section + post
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text, encoding="utf-8")


def plot(results: dict, img: Path) -> list[str]:
    """p50 latency per workload and contender (one panel per topology), materialisation time
    per contender, and the sizing fit."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: pip install matplotlib (plots skipped)")
        return []
    img.mkdir(parents=True, exist_ok=True)
    tops = results["topologies"]
    names = ["columnar", "psn", "dred", "rematerialize", "networkx"]
    fig, axes = plt.subplots(1, len(tops), figsize=(4.2 * len(tops), 4.2), squeeze=False)
    for ax, t in zip(axes[0], tops, strict=True):
        wls = t["workloads"]
        width = 0.8 / len(names)
        for i, n in enumerate(names):
            ws = t["contenders"].get(n, {}).get("workloads", {})
            ys = [ws[w]["p50_s"] * 1e3 if w in ws else 0 for w in wls]
            ax.bar([j + i * width for j in range(len(wls))], ys, width, label=n)
        ax.set_yscale("log")
        ax.set_title(f"{t['label']} ({t['nodes']} nodes)", fontsize=9)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(wls))])
        ax.set_xticklabels([w.split(" (")[0] for w in wls], rotation=45, ha="right", fontsize=7)
        ax.set_ylabel("p50 latency per batch (ms, log)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    out = [str(img / "peers_latency.png")]
    fig.savefig(out[0], dpi=90)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for n in ["columnar", "psn", "dred", "rematerialize", "networkx", "spark_scratch"]:
        pts = [(t["reachable_pairs"], t["contenders"][n]["materialize_s"]) for t in tops
               if "materialize_s" in t["contenders"].get(n, {})]
        if pts:
            ax.plot(*zip(*sorted(pts), strict=True), marker="o", label=n)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("reachable pairs")
    ax.set_ylabel("initial materialisation (s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.append(str(img / "peers_materialize.png"))
    fig.savefig(out[-1], dpi=90)
    plt.close(fig)

    sz = results.get("sizing")
    if sz:
        fig, ax = plt.subplots(figsize=(6, 4))
        xs = [r["nodes"] for r in sz["rows"]]
        for key, lab in (("materialize_s", "psn materialise (s)"),
                         ("peak_rss_mib", "peak RSS growth (MiB)")):
            f = sz["fits"][key]
            ax.plot(xs, [r[key] for r in sz["rows"]], "o", label=lab)
            grid = [xs[0] * (sz["target_nodes"] / xs[0]) ** (i / 20) for i in range(21)]
            ax.plot(grid, [f["a"] * x ** f["b"] for x in grid], "--",
                    label=f"fit ∝ n^{f['b']:.2f} (extrapolation)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"nodes (barabasi_albert, m={sz['m']})")
        ax.legend(fontsize=8)
        fig.tight_layout()
        out.append(str(img / "peers_sizing.png"))
        fig.savefig(out[-1], dpi=90)
        plt.close(fig)
    return out


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="about 2 minutes: small graphs only")
    ap.add_argument("--topologies", default=None,
                    help="comma-separated label=spec (default: zoo, caida, fat-tree, americas)")
    ap.add_argument("--singles", type=int, default=10, help="single-link down/up pairs")
    ap.add_argument("--singles-large", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3, help="repetitions of the k=10 batch")
    ap.add_argument("--large-nodes", type=int, default=500,
                    help="above this, rematerialize and networkx take fewer batches and the "
                         "Spark contenders are skipped unless --spark-large")
    ap.add_argument("--dred-max-nodes", type=int, default=200)
    ap.add_argument("--strategies", default=None,
                    help="comma-separated netrules contenders besides columnar (psn, dred, "
                         "rematerialize); default all: a quick A/B of the default engine "
                         "against networkx is --strategies '' --no-spark --no-doc")
    ap.add_argument("--spark-large", action="store_true",
                    help="also run from-scratch Spark on large graphs (americas: ~6 min)")
    ap.add_argument("--no-spark", action="store_true")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--sizes", default=None, help="sizing graph sizes, e.g. 100,200,400,800")
    ap.add_argument("--world", action="store_true",
                    help="last: psn materialisation on backbone/world (>10 min, ~10 GB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--doc", default=str(ROOT / "docs" / "benchmarks.md"))
    ap.add_argument("--img", default=str(ROOT / "docs" / "img"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "peers.json"))
    ap.add_argument("--no-doc", action="store_true", help="print only; leave docs untouched")
    ap.add_argument("--size-point", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.size_point:
        print(json.dumps(size_point(*map(int, args.size_point.split(",")))))
        return 0
    t0 = time.perf_counter()

    if args.topologies:
        tops = [tuple(x.split("=", 1)) for x in args.topologies.split(",")]
    elif args.quick:
        tops = [("Topology Zoo", "topohub:topozoo/Uninett2011"),
                ("CAIDA router level", "topohub:caida/2024-08/6327"),
                ("fat-tree", "fattree:4")]
    else:
        tops = [("Topology Zoo", "topohub:topozoo/TataNld"),
                ("CAIDA router level", "topohub:caida/2024-08/852"),
                ("fat-tree", "fattree:8"),
                ("backbone", "topohub:backbone/americas")]
    if args.quick:
        args.singles, args.reps = min(args.singles, 4), min(args.reps, 2)
    sizes = [int(s) for s in (args.sizes or ("50,100,200" if args.quick
                                             else "100,200,400,800")).split(",")]

    spark = None
    if not args.no_spark:
        from netrules.engine.session import get_spark

        spark = get_spark()
        spark.range(1).count()  # warm the JVM and the Python workers

    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, 2 cores, Python {platform.python_version()}",
        "command": "python bench/peers.py" + (" --quick" if args.quick else "")
                   + (f" --sizes {args.sizes}" if args.sizes else ""),
        "topologies": []}
    for label, spec in tops:
        results["topologies"].append(bench_topology(label, spec, args, spark))
    results["cte"] = bench_cte(spark, 4 if args.quick else 8)
    print("\n== sizing", flush=True)
    results["sizing"] = bench_sizing(sizes, 2, args.seed, 2 if args.quick else 3)
    if args.world:
        results["world"] = bench_world()
    results["elapsed_s"] = time.perf_counter() - t0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2, default=str))
    section = render(results)
    print("\n" + section)
    if not args.no_doc:
        write_section(Path(args.doc), section)
        print("\nplots:", ", ".join(plot(results, Path(args.img))))
    print(f"done in {results['elapsed_s'] / 60:.1f} min", flush=True)
    return 0


def bench_world() -> str:
    """psn materialisation of reachability on backbone/world: one attempt, reported as is."""
    from netrules import programs
    from netrules.engine.strategies import get
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    facts = link_facts(load_topology("topohub:backbone/world"))
    plan = plan_program(programs.load("reachability"))
    try:
        state, sec, mem = peak_growth(lambda: get("psn").materialize(plan, facts))
    except MemoryError:
        return "psn materialisation ran out of memory"
    return (f"psn materialisation of {state.fact_count():,} facts in {sec:,.0f} s, peak RSS "
            f"growth {mem / 1024:,.1f} GiB, {state.stored_records() / state.fact_count():.2f} "
            "records per fact")


if __name__ == "__main__":
    sys.exit(main())
