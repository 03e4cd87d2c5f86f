"""For tests that run two columnar programs side by side: random batches of base facts to
give both, and what to compare them by."""

from __future__ import annotations

import random
from collections.abc import Iterator

from netrules.facts import Fact
from netrules.plan import Plan


def keyed_batches(plan: Plan, seed: int, count: int, *, nodes: str = "abcdef",
                  retract: bool = False) -> Iterator[list[tuple[str, Fact]]]:
    """``count`` batches of 1-8 updates of the plan's base relations between ``nodes``,
    costs changing under a (relation, first two arguments) key among them: a key's fact
    goes, or comes with a new cost. With ``retract`` the old fact's deletion comes first
    (what the facts are is then the latest per key, keyed relation or not); without it the
    ledger replaces the fact of its key, if the relation is keyed so."""
    rng = random.Random(seed)
    base = sorted(plan.base)
    up: dict[tuple, Fact] = {}
    for _ in range(count):
        batch = []
        for _ in range(rng.randint(1, 8)):
            rel = rng.choice(base)
            arity = plan.arity[rel]
            key = (rel, rng.choice(nodes), rng.choice(nodes))
            if key in up and rng.random() < 0.5:
                batch.append(("-", up.pop(key)))
                continue
            args = (*key[1:], *[rng.randint(1, 3) for _ in range(arity - 2)])[:arity]
            f = Fact(rel, args, 0)
            if up.get(key) == f:
                continue
            if retract and key in up:
                batch.append(("-", up[key]))
            up[key] = f
            batch.append(("+", f))
        yield batch


def fact_ranks(prog, name: str) -> dict[tuple, int]:
    """A columnar program's facts of ``name`` with their ranks, to compare two programs."""
    rel = prog.rels[name]
    rows = rel.alive_rows()
    return dict(zip(prog.decode(name, rows), rel.rank_at(rows).tolist(), strict=True))
