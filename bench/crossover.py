"""Paper 003's crossover on our workloads: time of each maintenance strategy as the deleted
share of links grows, all strategies on the same batches in one run.

    python bench/crossover.py --topology topohub:backbone/north_america --repeats 3 \
        --out bench/out/crossover.json --plot docs/img/crossover.png --doc

For every fraction the same links (seeded) are deleted in one batch. Each (fraction,
strategy) point is the median of ``--repeats`` batches, every one from a freshly
materialised state (materialising is not timed; repeats of one fraction interleave the
strategies, so a burst of load from elsewhere hits all of them alike). A strategy whose batch
exceeds ``--cap`` seconds is interrupted and recorded as "> cap". The default strategy
(``auto``) should stay within 1.5x of the best at every point.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

FRACTIONS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5]
TOPOLOGY = "topohub:backbone/north_america"
PREFERRED = ["psn", "dred", "fbf", "counting", "rematerialize", "auto"]


class _Capped(Exception):
    """Raised by the alarm when a batch runs past the cap."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Capped


def default_strategies() -> list[str]:
    """Every registered strategy, known ones first: a strategy added later (``counting``)
    joins the benchmark without an edit here."""
    from netrules.engine.strategies import STRATEGIES

    return [n for n in PREFERRED if n in STRATEGIES] + sorted(
        n for n in STRATEGIES if n not in PREFERRED)


def timed_batch(strat: Any, state: Any, batch: list, cap: float) -> tuple[float | None, str]:
    """Wall time of one ``apply`` (None past ``cap``) and the path the strategy reports."""
    gc.collect()
    signal.setitimer(signal.ITIMER_REAL, cap)
    t0 = time.perf_counter()
    try:
        delta = strat.apply(state, batch)
    except _Capped:
        return None, ""
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return time.perf_counter() - t0, delta.stats.strategy


def fmt_s(x: float) -> str:
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def cell(r: dict, n: str, cap: float) -> str:
    m = r["median"].get(n)
    if m is None:
        return f"> {cap:g} s"
    lo, hi = r["min"][n], r["max"][n]
    return f"{fmt_s(m)} ({lo:.3g}–{hi:.3g})" if hi > lo else fmt_s(m)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default=TOPOLOGY)
    ap.add_argument("--program", default="reachability")
    ap.add_argument("--strategies", default=None,
                    help="comma-separated (default: every registered strategy)")
    ap.add_argument("--fractions", default=",".join(map(str, FRACTIONS)))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cap", type=float, default=60.0,
                    help="seconds one batch may take before it is interrupted")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--plot", default=None, help="write a PNG plot here (needs matplotlib)")
    ap.add_argument("--doc", action="store_true",
                    help="regenerate the crossover section of docs/benchmarks.md")
    args = ap.parse_args(argv)

    from netrules import programs
    from netrules.engine.strategies import get
    from netrules.plan import plan_program
    from topologies import link_facts, load_topology

    t_start = time.perf_counter()
    G = load_topology(args.topology)
    facts = link_facts(G)
    plan = plan_program(programs.load(args.program))
    pairs: dict[tuple, list] = {}
    for f in facts:
        pairs.setdefault(tuple(sorted(map(str, f.args[:2]))), []).append(f)
    keys = sorted(pairs)
    order = random.Random(args.seed).sample(keys, len(keys))
    names = args.strategies.split(",") if args.strategies else default_strategies()
    fractions = [float(x) for x in args.fractions.split(",")]
    signal.signal(signal.SIGALRM, _on_alarm)

    materialize_s: dict[str, float] = {}
    for n in names:
        t0 = time.perf_counter()
        view_facts = get(n).materialize(plan, facts).fact_count()
        materialize_s[n] = time.perf_counter() - t0
    head = (f"{args.topology}: {G.number_of_nodes()} nodes, {len(keys)} links "
            f"({len(facts)} link facts), {view_facts:,} facts; median of {args.repeats}")
    print(head)
    print(f"{'deleted':>8} {'links':>6} " + " ".join(f"{n:>14}" for n in names) + "  best",
          flush=True)

    rows = []
    for frac in fractions:
        k = max(1, round(frac * len(keys)))
        batch = [("-", f) for key in order[:k] for f in pairs[key]]
        samples: dict[str, list[float | None]] = {n: [] for n in names}
        paths: dict[str, list[str]] = {n: [] for n in names}
        for _ in range(args.repeats):
            for n in names:
                if None in samples[n]:
                    continue  # capped once at this point: do not pay the cap again
                secs, path = timed_batch(get(n), get(n).materialize(plan, facts),
                                         batch, args.cap)
                samples[n].append(secs)
                paths[n].append(path)
        done = {n: [s for s in v if s is not None] for n, v in samples.items()
                if None not in v}
        row = {"fraction": frac, "links": k, "samples": samples, "paths": paths,
               "median": {n: statistics.median(v) for n, v in done.items()},
               "min": {n: min(v) for n, v in done.items()},
               "max": {n: max(v) for n, v in done.items()}}
        row["best"] = min(row["median"], key=row["median"].get)
        rows.append(row)
        print(f"{frac:>8.1%} {k:>6} " + " ".join(
            f"{row['median'][n]:>13.3f}s" if n in row["median"] else f"{'>' + str(args.cap):>14}"
            for n in names) + f"  {row['best']}", flush=True)

    worst = None
    if "auto" in names:
        for r in rows:
            r["auto_ratio"] = (r["median"]["auto"] / r["median"][r["best"]]
                               if "auto" in r["median"] else float("inf"))
        worst = max(r["auto_ratio"] for r in rows)
        print(f"auto / best, worst point: {worst:.2f}x")
        for r in rows:
            print(f"  {r['fraction']:.1%}: auto {r['auto_ratio']:.2f}x, {r['paths']['auto'][0]}")
    minutes = (time.perf_counter() - t_start) / 60
    print(f"{minutes:.1f} minutes")

    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(
            {"topology": args.topology, "nodes": G.number_of_nodes(), "links": len(keys),
             "facts": view_facts, "repeats": args.repeats, "cap": args.cap,
             "materialize_s": materialize_s, "rows": rows}, indent=2))
    if args.plot:
        plot(rows, names, args.topology, args.plot)
    if args.doc:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from doc import replace_section

        cmd = " ".join(argv if argv is not None else sys.argv[1:])
        md = [f"## Crossover: maintenance vs rematerialisation on `{args.topology}`", "",
              f"Regenerate: `python bench/crossover.py {cmd}` ({minutes:.0f} minutes on "
              f"{platform.machine()}, Python {platform.python_version()}). "
              f"{G.number_of_nodes()} nodes, {len(keys)} links ({len(facts)} directed link "
              f"facts), {view_facts:,} facts after materialising `{args.program}`; the North "
              "American part of the americas backbone the single-link benchmark uses, large "
              "enough that a batch takes 0.01-10 s and small enough that every strategy "
              "finishes. The links of each fraction are deleted in one batch, the same "
              "batches for every strategy. Each cell is the median wall time of "
              f"{args.repeats} batches, each from a freshly materialised state, with the "
              "fastest and slowest in brackets; a batch past "
              f"{args.cap:g} s is interrupted (\"> {args.cap:g} s\").", "",
              "| deleted | links | " + " | ".join(f"`{n}`" for n in names)
              + " | best | `auto` / best | `auto` ran |",
              "|---|---|" + "---|" * len(names) + "---|---|---|"]
        for r in rows:
            ran = r["paths"].get("auto", [""])[0] if "auto" in names else ""
            md.append(f"| {r['fraction']:.1%} | {r['links']} | "
                      + " | ".join(cell(r, n, args.cap) for n in names)
                      + f" | {r['best']} | {r.get('auto_ratio', float('nan')):.2f}x | {ran} |")
        if worst is not None:
            md += ["", "`auto` (the default) against the best strategy, worst point: "
                       f"**{worst:.2f}x** (goal: within 1.5x)."]
        if args.plot:
            p = Path(args.plot)
            rel = p.relative_to("docs") if p.parts[0] == "docs" else p
            md += ["", f"![crossover]({rel})"]
        replace_section("crossover", "\n".join(md))
    return 0


def plot(rows: list[dict], names: list[str], topology: str, out: str) -> None:
    """Median batch time per strategy against the deleted share, fastest-slowest as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n in names:
        pts = [r for r in rows if n in r["median"]]
        xs = [r["fraction"] * 100 for r in pts]
        med = [r["median"][n] for r in pts]
        err = [[m - r["min"][n] for m, r in zip(med, pts, strict=True)],
               [r["max"][n] - m for m, r in zip(med, pts, strict=True)]]
        ax.errorbar(xs, med, yerr=err, marker="o", capsize=3, label=n,
                    linewidth=2.5 if n == "auto" else 1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("links deleted in one batch (%)")
    ax.set_ylabel("batch time (s), median")
    ax.set_title(f"maintenance vs rematerialisation, {topology}")
    ax.legend()
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
