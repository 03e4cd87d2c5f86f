"""Drive an engine over an initial fact set and update batches; the CLI's ``eval`` loop.

The reference engine recomputes from scratch after every batch, which is the answer every
incremental engine must reproduce. Base facts follow the engines' one semantics
(``ledger.BaseLedger``, last writer wins): every update is stamped with its place in the
updates file as its event time, so ``--shuffle`` changes delivery order, never the answer.
"""

from __future__ import annotations

import random
from typing import Any

from netrules.errors import EngineError
from netrules.facts import Fact
from netrules.plan import Plan

__all__ = ["run_batches", "apply_signed", "views_after", "stamped"]


def apply_signed(base: set[Fact], batch: list[tuple[str, Fact]]) -> set[Fact]:
    """Apply signed updates to a set of base facts, in order; duplicates are no-ops."""
    out = set(base)
    for sign, fact in batch:
        if sign == "+":
            out.add(fact)
        else:
            out.discard(fact)
    return out


def stamped(batches: list[list[tuple[str, Fact]]]) -> list[list[tuple]]:
    """Each update with its place in the stream (1, 2, ...) as event time and sequence."""
    n = 0
    out = []
    for batch in batches:
        items = []
        for sign, fact in batch:
            n += 1
            items.append((sign, fact, float(n), n))
        out.append(items)
    return out


def views_after(engine: Any, batches: list[list[tuple[str, Fact]]],
                rng: random.Random | None = None) -> list[dict[str, list[Fact]]]:
    """Apply each batch to a maintaining engine (shuffled by ``rng``); the views after each."""
    out = []
    for batch in batches:
        if rng is not None:
            batch = list(batch)
            rng.shuffle(batch)
        engine.apply(batch)
        out.append(engine.views())
    return out


def run_batches(plan: Plan, facts: list[Fact], batches: list[list[tuple[str, Fact]]] | None,
                *, engine: str = "reference", strategy: str | None = None,
                shuffle: int | None = None, state: str = "driver"
                ) -> list[dict[str, list[Fact]]]:
    """Views after the initial facts, then after each batch (index 0 is the initial state);
    ``state``: where the Spark engine keeps what it maintains (``driver`` or ``spark``)."""
    rng = random.Random(shuffle) if shuffle is not None else None
    batches = stamped(batches) if batches else batches
    if engine == "reference":
        from netrules.engine.ledger import BaseLedger
        from netrules.engine.reference import evaluate_program

        ledger = BaseLedger.for_plan(plan)
        ledger.apply([("+", f) for f in facts])
        out = [evaluate_program(plan, ledger.present())]
        for batch in batches or []:
            if rng is not None:
                batch = list(batch)
                rng.shuffle(batch)
            ledger.apply(batch)
            out.append(evaluate_program(plan, ledger.present()))
        return out
    if engine == "spark" and state == "spark":
        from netrules.engine.spark.resident import run_resident_batches

        return run_resident_batches(plan, facts, batches or [], rng=rng)
    if engine == "spark":
        from netrules.engine.spark.engine import run_spark_batches

        return run_spark_batches(plan, facts, batches or [], strategy=strategy, rng=rng)
    raise EngineError(f"unknown engine {engine!r}")
