#!/usr/bin/env bash
# Regenerate every measured section of docs/benchmarks.md and its plots (about 1.5 hours on
# 2 cores; run on an otherwise idle machine). Each script rewrites only its own section.
set -euo pipefail
cd "$(dirname "$0")/.."
# the columnar engine against per-fact psn, DuckDB, networkx and scipy (about 5 minutes)
python bench/columnar.py --topology topohub:backbone/americas --program reachability \
  --events 50 --events-psn 3 --out bench/out/columnar_reach_americas.json --doc
python bench/columnar.py --topology topohub:backbone/americas --program best_routes \
  --events 10 --events-psn 0 --out bench/out/columnar_best_americas.json --doc
python bench/columnar.py --topology topohub:topozoo/TataNld --program best_routes \
  --events 10 --events-psn 3 --out bench/out/columnar_best_tatanld.json --doc
python bench/engine.py --topology topohub:backbone/americas --events 20 --dred-events 1 \
  --out bench/out/americas.json --doc
# world (3,815 nodes, 14.6 M facts): about 35 minutes and 14 GB on the driver
python bench/engine.py --topology topohub:backbone/world --events 5 --strategies psn \
  --section engine-world --out bench/out/engine_world.json --doc
# recursion through a_MIN: best routes against all-pairs Dijkstra (about 10 minutes)
python bench/engine.py --topology topohub:topozoo/TataNld --program best_routes --events 10 \
  --dred-events 3 --strategies psn,dred --out bench/out/engine_best_routes.json --doc
# best routes on americas: 4.65 M facts, 3.7 GB (about 25 minutes); Spark from scratch runs
# for over half an hour here, so it is stopped at 15 minutes and reported as a lower bound
python bench/engine.py --topology topohub:backbone/americas --program best_routes --events 10 \
  --strategies psn --spark-cap 900 --section engine-best_routes-americas \
  --out bench/out/engine_best_routes_americas.json --doc
# crossover on backbone/north_america, every registered strategy, median of 3 (about 20 minutes)
python bench/crossover.py --repeats 3 --cap 30 --out bench/out/crossover.json \
  --plot docs/img/crossover.png --doc
python bench/peers.py
# capture replay memory (about 45 minutes); docs/benchmarks.md's capture table is updated by hand
python bench/capture_memory.py --size-mb 1024
# views kept in Spark (--state spark), americas reachability (about 6 minutes)
python bench/resident.py --topology topohub:backbone/americas --events 5 \
  --out bench/out/resident_americas.json --doc
# views kept in Spark, best routes (recursion through a_MIN), TataNld (about 5 minutes)
python bench/resident.py --topology topohub:topozoo/TataNld --program best_routes --events 5 \
  --out bench/out/resident_best_routes_tatanld.json --doc
# suspects per changed tuple, small graphs and americas (about a minute)
python bench/overdeletion.py --doc
# a link event in the running pipeline, americas best routes (about 2 minutes)
python bench/pipeline.py --doc
