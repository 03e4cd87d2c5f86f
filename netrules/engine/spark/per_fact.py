"""The per-fact evaluator's rounds over the columns frame: the fallback for strata the
columnar engine does not run on Spark, and the rounds of small regions in a Python worker
that has not loaded the compiled kernels yet (``crossover``).

A region's rows are turned into the per-fact evaluator's ``(part, rel, args JSON, new)``
frame, its round runs unchanged (``fixpoint._round_fn``, ``iterated.iterated_round_fn``), and
what it returns comes back as columns; a region it hands back untouched stays the table it
was, so only regions that run pay the conversion.

Why a crossover: warm, the columnar round is faster than the per-fact one at every region
size measured (TataNld reachability, regions of 100-5,600 facts: 8-24 ms against 20-48 ms a
call; TataNld best routes, 170-17,000 facts: 21-205 ms against 35-1,750 ms). But the first
columnar round in a Python process initialises Numba's CPU target (its registries, and
``numba.np.arraymath`` imports SciPy's BLAS: 0.6 s) and loads the kernels from the cache:
1.2-1.3 s on a quiet machine, 1.3-2.0 s measured in Spark workers on a loaded one. Spark kills
Python workers idle for a minute (``PythonWorkerFactory``, not configurable), so a
from-scratch run after a minute of anything else starts on fresh workers and pays it again,
on each, while a small graph's whole run is 0.2-0.6 s of region work. So a worker runs its
regions per fact while it has not initialised the target, the region is small (at most
``SMALL_FACTS`` rows, and as many squared locations: a local closure of pairs, which a first
round computes, reaches that many facts), and its per-fact rounds so far took less than
``BUDGET_S`` (the price of the initialisation: past it, paying it is the cheaper bet, as in
ski rental); otherwise in columns. Both give the same facts and the same messages, so the
choice changes costs only.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from netrules.engine.spark.columns import table_of_tuples, tuples_of
from netrules.engine.spark.fixpoint import decode_many, encode_many

__all__ = ["in_columns", "crossover", "per_fact_now", "places_of", "SMALL_FACTS", "BUDGET_S"]

ArrowFn = Callable[[pa.Table], pa.Table]

SMALL_FACTS = 10_000
"""Rows (facts held and messages) up to which a cold worker runs a region per fact. Per-fact
calls measured at about that size: reachability 20-50 ms, best routes 1.0-1.7 s, so one
call past the budget costs at most about one more initialisation."""

BUDGET_S = 1.2
"""Per-fact round time a worker spends before it initialises the kernels anyway: their
measured cost on a quiet machine."""

_spent = [0.0]  # this process's per-fact round time so far (module state: one per worker)


def kernels_warm() -> bool:
    """Has this process initialised Numba's CPU target? It imports ``numba.np.arraymath``
    when the first compiled function is loaded or compiled, and not before."""
    return "numba.np.arraymath" in sys.modules


def per_fact_now(rows: int, places: int) -> bool:
    """Should this process run a region of ``rows`` rows at ``places`` distinct locations per
    fact (module docstring)?"""
    return max(rows, places * places) <= SMALL_FACTS and _spent[0] < BUDGET_S and \
        not kernels_warm()


def places_of(table: pa.Table) -> int:
    """Distinct first arguments of a region's rows: its nodes, for located relations."""
    return pc.count_distinct(table.column("s0")).as_py() if table.num_rows else 0


def charge(seconds: float) -> None:
    _spent[0] += seconds


def crossover(columnar: ArrowFn, per_fact: ArrowFn) -> ArrowFn:
    """``columnar`` or ``per_fact`` per region call, as ``per_fact_now`` says. The state it
    reads is this module's, looked up by name when the call runs, so each Spark worker
    decides by its own history, not by a copy pickled with the function."""
    def run(table: pa.Table) -> pa.Table:
        if not per_fact_now(table.num_rows, places_of(table)):
            return columnar(table)
        t = time.perf_counter()
        out = per_fact(table)
        charge(time.perf_counter() - t)
        return out

    return run


def in_columns(fn: Callable[[pd.DataFrame], pd.DataFrame], width: int
               ) -> Callable[[pa.Table], pa.Table]:
    def run(table: pa.Table) -> pa.Table:
        if not table.num_rows:
            return table
        pdf = pd.DataFrame({"part": table.column("part").to_numpy(),
                            "rel": table.column("rel").to_numpy(zero_copy_only=False),
                            "args": encode_many(tuples_of(table, width)),
                            "new": table.column("new").to_numpy()})
        out = fn(pdf)
        if out is pdf:
            return table
        # rows handed back as they came are taken from the table; only new text is decoded
        keys = pdf["rel"] + "\x00" + pdf["args"]
        once = np.flatnonzero(~keys.duplicated().to_numpy())
        got = pd.Index(keys.iloc[once]).get_indexer(out["rel"] + "\x00" + out["args"])
        pos = np.where(got >= 0, once[got], -1)
        part = out["part"].to_numpy(dtype=np.int32)
        new = out["new"].to_numpy(dtype=bool)
        old = np.flatnonzero(pos >= 0)
        same = table.take(pa.array(pos[old])).set_column(0, "part", pa.array(part[old]))
        fresh = np.flatnonzero(pos < 0)
        made = table_of_tuples(part[fresh], out["rel"].to_numpy(dtype=object)[fresh].tolist(),
                               decode_many(out["args"].to_numpy(dtype=object)[fresh].tolist()),
                               new[fresh], width)
        return pa.concat_tables([same.set_column(2, "new", pa.array(new[old])), made])

    return run
