"""The rounds of one resident batch: kill until no new suspect, rederive, insert until quiet.

The loop is written once against an ``exchange``: run one round on the regions it names and
return every region's outbox. Where the loop runs decides what an exchange costs: on the
driver, one Spark job per round (``SparkRegions`` in round mode) or a call in this process
(``LocalRegions``); inside the tasks of one gang job, a swap of outboxes through the driver's
relay (``spark/relay.py``), where every task runs this same loop, sees the same outboxes and
so takes the same decisions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from netrules.engine.firing import FactKey
from netrules.engine.regional.steps import Message, Outbox

__all__ = ["Exchange", "Outcome", "run_rounds"]

# (kind, regions, common payload, per-region payload) -> outboxes of the regions that ran
Exchange = Callable[[str, list[int], Any, dict[int, Any]], dict[int, Outbox]]


@dataclass
class Outcome:
    """What a batch changed, as the regions that ran it saw it. Outcomes of the tasks of a
    gang job merge: each reports its own regions' additions and revivals."""

    added: list[FactKey] = field(default_factory=list)
    revived: set[FactKey] = field(default_factory=set)
    suspects: set[FactKey] = field(default_factory=set)
    trace: list[tuple[str, int, int, float]] = field(default_factory=list)  # per round:
    # kind, regions run, messages sent, seconds

    def merge(self, other: Outcome) -> None:
        self.added.extend(other.added)
        self.revived |= other.revived
        self.suspects |= other.suspects
        self.trace = self.trace or other.trace  # every task ran the same rounds


def run_rounds(exchange: Exchange, regions: int, gone: list[FactKey], new: list[FactKey],
               part_of: Callable[..., int],
               shuffle: Callable[[int, list[Message]], None] | None = None) -> Outcome:
    """Run a batch whose base facts ``gone`` vanished and ``new`` appeared over ``regions``
    regions; ``shuffle`` reorders each region's inbox (delivery order must not matter)."""
    result = Outcome()

    def round_(kind: str, targets: Iterable[int], common: Any, per_region: dict[int, Any]
               ) -> dict[int, Outbox]:
        t0 = time.perf_counter()
        ran = sorted(set(targets))
        outs = exchange(kind, ran, common, per_region)
        sent = sum(len(m) for o in outs.values() for m in o.messages.values())
        result.trace.append((kind, len(ran), sent, time.perf_counter() - t0))
        return outs

    def route(outs: dict[int, Outbox]) -> dict[int, list[Message]]:
        inbox: dict[int, list[Message]] = {}
        for g in sorted(outs):
            for dest, msgs in outs[g].messages.items():
                inbox.setdefault(dest, []).extend(msgs)
        if shuffle is not None:
            for dest in sorted(inbox):
                shuffle(dest, inbox[dest])
        return inbox

    everyone = range(regions)
    inbox: dict[int, list[Message]] = {}
    if gone:
        here: dict[int, list[FactKey]] = {}
        for key in gone:
            here.setdefault(part_of(*key), []).append(key)
        dead = gone
        per_region: dict[int, Any] = here
        while dead:
            outs = round_("kill", everyone, dead, per_region)
            dead = [h for g in sorted(outs) for h in outs[g].suspects]
            result.suspects.update(dead)
            per_region = {}
        if result.suspects:
            outs = round_("rederive", everyone, sorted(result.suspects, key=repr), {})
            inbox = route(outs)
    seeds: dict[int, list[FactKey]] = {}
    for key in new:
        seeds.setdefault(part_of(*key), []).append(key)
    while inbox or seeds:
        targets = set(inbox) | set(seeds)
        outs = round_("insert", targets, None,
                      {g: (inbox.get(g, []), seeds.get(g, [])) for g in targets})
        for o in outs.values():
            result.revived.update(o.revived)
            result.added.extend(o.added)
        inbox, seeds = route(outs), {}
    return result
