"""The rounds of one resident batch, stage by stage: for a positive stage kill until no new
suspect, rederive, insert until quiet; for a counting stage overdelete, then iterate until
no count moves (``steps.py``, ``counting.py``).

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
from netrules.engine.iterated import MAX_ITERATIONS
from netrules.engine.regional.steps import Message, Outbox, Stage
from netrules.errors import EvalError

__all__ = ["Exchange", "Outcome", "run_rounds"]

# ((kind, stage), regions, common payload, per-region payload) -> outboxes of the regions
# that ran
Exchange = Callable[[tuple[str, int], list[int], Any, dict[int, Any]], dict[int, Outbox]]


@dataclass
class Outcome:
    """What a batch changed, as the regions that ran it saw it. Outcomes of the tasks of a
    gang job merge: each reports its own regions' flips and revivals."""

    revived: set[FactKey] = field(default_factory=set)
    suspects: set[FactKey] = field(default_factory=set)
    flips: dict[FactKey, int] = field(default_factory=dict)  # net +1/-1 per fact changed
    # facts whose supports changed -> first support after the batch (``report_supports``)
    supports: dict[FactKey, Any] = field(default_factory=dict)
    trace: list[tuple[str, int, int, float]] = field(default_factory=list)  # per round:
    # kind, regions run, messages sent, seconds
    n_suspects: int = 0  # columnar regions' suspects and revivals, counted where found
    n_revived: int = 0

    def merge(self, other: Outcome) -> None:
        self.revived |= other.revived
        self.suspects |= other.suspects
        self.n_suspects += other.n_suspects
        self.n_revived += other.n_revived
        for key, n in other.flips.items():
            self.flips[key] = self.flips.get(key, 0) + n
        self.supports.update(other.supports)  # each task reports its own regions' facts
        self.trace = self.trace or other.trace  # every task ran the same rounds


def run_rounds(exchange: Exchange, regions: int, stages: list[Stage], gone: list[FactKey],
               new: list[FactKey], part_of: Callable[..., int],
               shuffle: Callable[[int, list[Message]], None] | None = None) -> Outcome:
    """Run a batch whose base facts ``gone`` vanished and ``new`` appeared over ``regions``
    regions, stage by stage (``Program.stages``); ``shuffle``
    reorders each region's inbox (delivery order must not matter). The program's first
    stage applies the base facts; a later one starts, in every region, from what the
    stages below changed there."""
    result = Outcome()

    def round_(kind: str, stage: int, targets: Iterable[int], common: Any,
               per_region: dict[int, Any]) -> dict[int, Outbox]:
        t0 = time.perf_counter()
        ran = sorted(set(targets))
        outs = exchange((kind, stage), ran, common, per_region)
        sent = sum(len(m) for o in outs.values() for m in o.messages.values())
        result.trace.append((kind, len(ran), sent, time.perf_counter() - t0))
        for o in outs.values():  # a place's own outboxes are whole, others' shared only
            for key, n in o.flips.items():
                result.flips[key] = result.flips.get(key, 0) + n
            result.supports.update(o.supports)  # a later round's word is the last
            result.n_suspects += o.n_suspects
            result.n_revived += o.n_revived
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

    def by_region(keys: list[FactKey]) -> dict[int, list[FactKey]]:
        out: dict[int, list[FactKey]] = {}
        for key in keys:
            out.setdefault(part_of(*key), []).append(key)
        return out

    everyone = range(regions)

    def psn(s: int) -> None:
        inbox: dict[int, list[Message]] = {}
        suspects: set[FactKey] = set()
        if s == 0:
            dead: list[FactKey] = gone
            per_region: dict[int, Any] = by_region(gone)
        else:  # the first round finds, in each region, what died below; then as usual
            outs = round_("kill", s, everyone, None, {})
            dead = [h for g in sorted(outs) for h in (*outs[g].dead, *outs[g].suspects)]
            suspects.update(h for o in outs.values() for h in o.suspects)
            per_region = {}
        while dead:
            outs = round_("kill", s, everyone, dead, per_region)
            dead = [h for g in sorted(outs) for h in outs[g].suspects]
            suspects.update(dead)
            per_region = {}
        # a columnar region's suspects are blobs, counted as ``n_suspects`` where found
        result.suspects |= {h for h in suspects if not isinstance(h, bytes)}
        if suspects:
            outs = round_("rederive", s, everyone, sorted(suspects, key=repr), {})
            inbox = route(outs)
        seeds = by_region(new) if s == 0 else {}
        below = s > 0  # the first round: every region takes what appeared below it
        while inbox or seeds or below:
            targets = set(everyone) if below else set(inbox) | set(seeds)
            outs = round_("insert", s, targets, below,
                          {g: (inbox.get(g, []), seeds.get(g, [])) for g in targets})
            for o in outs.values():
                result.revived.update(o.revived)
            inbox, seeds, below = route(outs), {}, False

    def count(s: int) -> None:
        base = {g: (by_region(gone).get(g, []), by_region(new).get(g, []))
                for g in everyone} if s == 0 else {}
        inbox: dict[int, list[Message]] = {}
        first = True
        while first or inbox:  # overdelete
            targets = set(everyone) if first else set(inbox)
            outs = round_("over", s, targets, first,
                          {g: (inbox.get(g, []), base.get(g) if first else None)
                           for g in targets})
            inbox, first = route(outs), False
        busy: set[int] = set()
        first, rounds = True, 0
        while first or inbox or busy:  # iterate to the fixpoint
            rounds += 1
            if rounds > MAX_ITERATIONS:
                raise EvalError(f"relations {', '.join(sorted(stages[s].relations))} did not "
                                f"settle after {MAX_ITERATIONS} iterations (does a cycle of "
                                "zero or negative costs keep improving?)")
            targets = set(everyone) if first else set(inbox) | busy
            outs = round_("count", s, targets, first,
                          {g: inbox.get(g, []) for g in targets})
            busy = {g for g, o in outs.items() if o.busy}
            inbox, first = route(outs), False

    for s, stage in enumerate(stages):
        if stage.kind == "psn":
            psn(s)
        else:
            count(s)
    return result
