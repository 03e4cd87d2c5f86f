"""Base facts as signed balances, so any split and any order of a batch give the same result.

An insertion adds one to a fact's balance and a deletion takes one away; the fact is present
while its balance is positive. A deletion that arrives before its insertion drives the balance
below zero: it is *pending*, never dropped (paper 000's deferred DEL), and the insertion that
follows cancels it. Because the balance is a sum, the net change of a batch depends only on the
multiset of updates in it, which is the order-independence the engines build on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from netrules.facts import Fact

__all__ = ["BaseLedger"]


class BaseLedger:
    def __init__(self) -> None:
        self.balance: Counter[Fact] = Counter()

    def present(self) -> set[Fact]:
        return {f for f, n in self.balance.items() if n > 0}

    def pending_deletions(self) -> dict[Fact, int]:
        """Deletions still waiting for the insertion they cancel (orphans stay here)."""
        return {f: -n for f, n in self.balance.items() if n < 0}

    def apply(self, batch: Iterable[tuple[str, Fact]]) -> tuple[set[Fact], set[Fact]]:
        """Apply signed updates; return the base facts that appeared and that disappeared."""
        before: dict[Fact, int] = {}
        for sign, fact in batch:
            if fact not in before:
                before[fact] = self.balance.get(fact, 0)
            self.balance[fact] += 1 if sign == "+" else -1
        appeared, vanished = set(), set()
        for fact, old in before.items():
            new = self.balance[fact]
            if new == 0:
                del self.balance[fact]
            if old <= 0 < new:
                appeared.add(fact)
            elif new <= 0 < old:
                vanished.add(fact)
        return appeared, vanished
