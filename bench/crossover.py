"""Paper 003's crossover on our workloads: time of each maintenance strategy as the deleted
share of links grows, all strategies on the same batches in one run.

    python bench/crossover.py --topology grid:12x12 --out bench/out/crossover.json [--plot F]

For every fraction the same links (seeded) are deleted in one batch from a freshly
materialised state; the time is the batch's own (``BatchStats.seconds``). The default strategy
(``auto``) should stay within 1.5x of the best at every point.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

FRACTIONS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default="grid:12x12")
    ap.add_argument("--program", default="reachability")
    ap.add_argument("--strategies", default="psn,dred,rematerialize,auto")
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

    G = load_topology(args.topology)
    facts = link_facts(G)
    plan = plan_program(programs.load(args.program))
    pairs: dict[tuple, list] = {}
    for f in facts:
        pairs.setdefault(tuple(sorted(map(str, f.args[:2]))), []).append(f)
    keys = sorted(pairs)
    rng = random.Random(args.seed)
    order = rng.sample(keys, len(keys))
    names = args.strategies.split(",")
    rows = []
    print(f"{args.topology}: {G.number_of_nodes()} nodes, {len(keys)} links")
    print(f"{'deleted':>8} {'links':>6} " + " ".join(f"{n:>14}" for n in names) + "  best")
    for frac in FRACTIONS:
        k = max(1, round(frac * len(keys)))
        batch = [("-", f) for key in order[:k] for f in pairs[key]]
        times = {}
        for n in names:
            strat = get(n)
            state = strat.materialize(plan, facts)
            d = strat.apply(state, batch)
            times[n] = d.stats.seconds
        best = min(times, key=times.get)
        rows.append({"fraction": frac, "links": k, "seconds": times, "best": best})
        print(f"{frac:>8.1%} {k:>6} " + " ".join(f"{times[n]:>13.3f}s" for n in names)
              + f"  {best}", flush=True)
    worst = None
    if "auto" in names:
        worst = max(r["seconds"]["auto"] / min(r["seconds"].values()) for r in rows)
        print(f"auto / best, worst point: {worst:.2f}x")
    if args.doc:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from doc import replace_section

        md = [f"## Crossover: maintenance vs rematerialisation on `{args.topology}`", "",
              f"Regenerate: `python bench/crossover.py {' '.join(argv or sys.argv[1:])}`. "
              "All links of each fraction deleted in one batch from a fresh state; batch "
              "time per strategy, same run.", "",
              "| deleted | links | " + " | ".join(names) + " | best |",
              "|---|---|" + "---|" * len(names) + "---|"]
        for r in rows:
            md.append(f"| {r['fraction']:.1%} | {r['links']} | " + " | ".join(
                f"{r['seconds'][n]:.3f} s" for n in names) + f" | {r['best']} |")
        if worst is not None:
            md += ["", f"`auto` (the default) against the best strategy, worst point: "
                       f"**{worst:.2f}x** (goal 1.5x)."]
        if args.plot:
            md += ["", f"![crossover]({Path(args.plot).relative_to('docs') if args.plot.startswith('docs/') else args.plot})"]
        replace_section("crossover", "\n".join(md))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"topology": args.topology, "rows": rows},
                                             indent=2))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for n in names:
            ax.plot([r["fraction"] * 100 for r in rows], [r["seconds"][n] for r in rows],
                    marker="o", label=n)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("links deleted in one batch (%)")
        ax.set_ylabel("batch time (s)")
        ax.set_title(f"maintenance vs rematerialisation, {args.topology}")
        ax.legend()
        fig.tight_layout()
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
