"""What a region does in one round of a positive stage of a resident batch: kill, rederive or
insert; and the program cut into stages.

A program runs stage by stage, in stratum order: maximal runs of positive strata are one *PSN
stage* (this module), each stratum with an aggregate or negation a *counting stage*
(``counting.py``). In a PSN stage, a batch that deletes runs *kill* rounds until no region
finds a new suspect, one *rederive* round, then *insert* rounds until no message is in flight;
a batch that only inserts runs the insert rounds. A stage above another starts from what the
stages below changed, which each region reads from its own ``flips``. Rules are localized, so
every rule body sits at one node and is matched in the region holding that node; only heads
located elsewhere travel, as messages ``(head, rank, support)`` to the head's region, which
decides what to keep. Kill messages are the facts that died, sent to every region (a region
cannot know who kept a support on them).

The algorithm is ``strategies/psn.py``'s, cut at region boundaries: ranks stay well-founded
because a support is built where its body is, from the body's ranks there, and a suspect is
hidden from every body it could join (it lives in the region the body is matched in).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from netrules.engine.aggregates import AggIndex
from netrules.engine.firing import FactKey, body_keys
from netrules.engine.joins import fire_rows, rows_for
from netrules.engine.reference import Database
from netrules.engine.regional.state import RegionState, Support
from netrules.engine.views import Patched
from netrules.errors import EngineError
from netrules.lang import ast
from netrules.plan import Plan

__all__ = ["Program", "Stage", "Outbox", "Message", "check_resident_plan", "kill", "rederive",
           "insert", "settle", "lower_changes"]

Message = tuple  # PSN: (head, rank, support); counting: tagged, see counting.py


@dataclass
class Outbox:
    """A region's answer to one round."""

    # by destination; a columnar region's are Arrow blobs (``columnar.py``), as are its
    # suspects and dead
    messages: dict[int, list[Message]] = field(default_factory=dict)
    suspects: list[FactKey] = field(default_factory=list)  # found this round (kill)
    dead: list[FactKey] = field(default_factory=list)  # lower facts gone, for every region
    busy: bool = False  # counts moved here that the next round must look at
    revived: list[FactKey] = field(default_factory=list)  # suspects that kept their place
    flips: dict[FactKey, int] = field(default_factory=dict)  # shown +1 / hidden -1, net
    # with ``Program.report_supports``: each fact whose supports changed -> its first one
    supports: dict[FactKey, Support | None] = field(default_factory=dict)
    # a columnar region's suspects found and revived this round (its blobs are not counted)
    n_suspects: int = 0
    n_revived: int = 0

    def shared(self) -> Outbox:
        """What other places need to steer the rounds: messages, suspects, dead, busy."""
        return Outbox(messages=self.messages, suspects=self.suspects, dead=self.dead,
                      busy=self.busy)

    def send(self, dest: int, msg: Message) -> None:
        self.messages.setdefault(dest, []).append(msg)


@dataclass(frozen=True)
class Stage:
    """Strata maintained together: ``psn`` (positive) or ``count`` (one stratum with an
    aggregate or negation); rules by their index in ``Program.rules``."""

    kind: str
    rules: tuple[tuple[int, ast.Rule], ...]
    relations: frozenset[str]
    reads: frozenset[str]  # relations below it that its bodies read, negated ones too


def check_resident_plan(plan: Plan) -> None:
    """Refuse what regional maintenance cannot keep exactly, naming the rule."""
    for s in plan.strata:
        if s.recursive and not s.iterated and (s.aggregates or s.negation):
            raise EngineError(f"views kept in Spark need recursion to be positive or to run "
                              f"through an aggregate; {', '.join(sorted(s.relations))} recurse "
                              "beside negation. Keep the state on the driver (--state driver) "
                              "for this program.")
    for r in plan.rules:
        atoms = r.atoms()
        if not atoms:
            raise EngineError(f"{r.loc}: a rule with no body atom has no region to run in; "
                              "write it as a fact.")
        locs = {str(a.location_term) if a.locspec is not None else None for a in atoms}
        for lit in r.body:
            if isinstance(lit, ast.Negation) and isinstance(lit.atom, ast.Atom):
                a = lit.atom
                locs.add(str(a.location_term) if a.locspec is not None else None)
        if len(locs) != 1:
            raise EngineError(f"{r.loc}: the body of {r.head.relation} is not at one node "
                              f"({', '.join(sorted(map(str, locs)))}); regional maintenance "
                              "needs localized rules.")
        agg = r.head.aggregate()
        if agg is not None and agg[0] == plan.locspec.get(r.head.relation):
            raise EngineError(f"{r.loc}: {r.head.relation} aggregates its location; a group "
                              "must sit at one node.")


def lower_changes(state: RegionState, stage: Stage) -> tuple[Database, Database]:
    """(gone, came): the net changes of this batch so far to facts here that ``stage``
    reads from below; what the stage starts from."""
    gone, came = Database(), Database()
    reads = stage.reads
    for key, n in state.flips.items():
        if key[0] in reads:
            (came if n > 0 else gone).add(*key)
    return gone, came


class Program:
    """A plan as a region runs it: rules, stages, the locator, K."""

    def __init__(self, plan: Plan, part_of: Callable[[str, tuple], int], k: int, *,
                 report_supports: bool = False, columnar: bool = True) -> None:
        """``report_supports``: every round reports the first support of each fact whose
        supports it changed (``Outbox.supports``), for a driver that explains facts (the
        pipeline writes derivations); off, rounds send nothing more than they need.
        ``columnar``: regions hold columns (``columnar.py``; counting stages stay per fact,
        ``fact_stages``) unless the columnar engine refuses the program's positive stages
        (``per_fact`` says why); False keeps every region per fact."""
        from netrules.engine.regional.columnar import counted, why_per_fact

        check_resident_plan(plan)
        self.plan, self.part_of, self.k = plan, part_of, k
        self.report_supports = report_supports
        self.per_fact: str | None = why_per_fact(plan) if columnar else "asked for"
        # relations of the counting stages a columnar region still keeps per fact
        self.fact_stages = () if self.per_fact else tuple(counted(plan))
        self.rules = list(plan.rules)
        # per aggregate rule, the rule with its aggregated variable in the head (None for
        # COUNT/SUM): its instances for a group's row are the row's witnesses
        self.plain: dict[int, ast.Rule | None] = {}
        for i, r in enumerate(self.rules):
            found = r.head.aggregate()
            if found is not None:
                pos, agg = found
                ok = agg.func in ("MIN", "MAX") and agg.var is not None
                args = tuple(agg.var if j == pos else t for j, t in enumerate(r.head.args))
                self.plain[i] = replace(r, head=replace(r.head, args=args)) if ok else None
        self.by_head: dict[str, list[tuple[int, ast.Rule]]] = {}
        for i, r in enumerate(self.rules):
            self.by_head.setdefault(r.head.relation, []).append((i, r))
        # per aggregate rule, what a body binding contributes: (group, value)
        self.pair_of = {i: AggIndex(r).pair_of for i, r in enumerate(self.rules)
                        if r.head.aggregate()}
        rid = {id(r): i for i, r in enumerate(self.rules)}
        self.stages: list[Stage] = []
        runs: list[tuple[str, list]] = []
        for s in plan.strata:
            kind = "count" if (s.aggregates or s.negation or s.iterated) else "psn"
            if kind == "psn" and runs and runs[-1][0] == "psn":
                runs[-1][1].append(s)
            else:
                runs.append((kind, [s]))
        for kind, strata in runs:
            rules = tuple((rid[id(r)], r) for st in strata for r in st.rules)
            rels = frozenset(x for st in strata for x in st.relations)
            reads = frozenset(
                (lit.atom if isinstance(lit, ast.Negation) else lit).relation
                for _i, r in rules for lit in r.body
                if isinstance(lit, ast.Atom | ast.Negation)) - rels
            self.stages.append(Stage(kind, rules, rels, reads))
        if not self.stages:  # facts only: a stage with no rules still applies them
            self.stages.append(Stage("psn", (), frozenset(), frozenset()))
        self.counted = frozenset(x for st in self.stages if st.kind == "count"
                                 for x in st.relations)

def _rank_of(state: RegionState, body: tuple[FactKey, ...]) -> int:
    rank = state.rank
    return 1 + max((rank.get(x, 0) for x in body), default=0)


def settle(state: RegionState, batch: int) -> list[FactKey]:
    """Start ``batch``: suspects the last batch left lost all support and go now (the views
    never showed them). Returns them."""
    if state.batch == batch:
        return []
    gone = [(rel, row) for rel, rows in state.susp.rel.items() for row in rows]
    for key in gone:
        state.remove(key)
    state.begin(batch)
    return gone


def kill(state: RegionState, prog: Program, stage: Stage, dead: list[FactKey] | None,
         gone_here: list[FactKey]) -> Outbox:
    """Drop base facts deleted here, then every kept support of the stage's facts that used a
    dead fact; a local fact left with none is suspect and kills in turn, inside the region
    until nothing more dies. The new suspects go to every region in the next round.
    ``dead`` None: the stage's first round above another, whose dead are the facts below
    that this region lost (``lower_changes``), sent on to every region as well."""
    out = Outbox()
    for key in gone_here:
        state.remove(key)
    if dead is None:
        gone, _came = lower_changes(state, stage)
        dead = out.dead = [(rel, row) for rel, rows in gone.rel.items() for row in rows]
    queue = list(dead)
    mine = stage.relations
    while queue:
        x = queue.pop()
        users = state.used_by.get(x)
        if not users:
            continue
        for h in list(users):
            if h[0] in mine and state.without(h, x) and h not in state.susp:
                state.suspect(h, True)
                out.suspects.append(h)
                queue.append(h)
    return out


def rederive(state: RegionState, prog: Program, suspects: list[FactKey]) -> Outbox:
    """Every derivation of a suspect whose body is here and standing (no suspect in it), sent
    with its rank to the suspect's region."""
    out = Outbox()
    standing = Patched(state.db, hide=(state.susp,))
    part_of = prog.part_of
    for h in suspects:
        for rid, rule in prog.by_head.get(h[0], ()):
            for rows in rows_for(rule, h[1], standing, standing):
                body = body_keys(rule, rows)
                out.send(part_of(*h), (h, _rank_of(state, body), (rid, body)))
    return out


def insert(state: RegionState, prog: Program, stage: Stage, inbox: list[Message],
           seeds: list[FactKey], below: bool = False) -> Outbox:
    """Take in derivations sent here and base facts inserted here (with ``below``, the
    stage's first round above another: also the facts below that appeared here), then run
    the stage's rules semi-naively inside the region; heads located elsewhere go out as
    messages."""
    out = Outbox()
    delta = Database()
    for key in seeds:
        if key not in state.db:
            state.add(key)
            delta.add(*key)
    if below:
        for rel, rows in lower_changes(state, stage)[1].rel.items():
            for row in rows:
                delta.add(rel, row)
    _accept(state, inbox, delta, out)
    me, part_of = state.region, prog.part_of
    while any(delta.rel.values()):
        cur = Patched(state.db, hide=(state.susp,))
        local: list[Message] = []
        sent: set[tuple[FactKey, Support]] = set()
        for rid, rule in stage.rules:
            atoms = rule.atoms()
            head_rel = rule.head.relation
            for i, atom in enumerate(atoms):
                if not delta.rel.get(atom.relation):
                    continue
                reads = {j: (delta if j == i else cur) for j in range(len(atoms))}
                for row, rows in fire_rows(rule, reads, cur, first=i):
                    h = (head_rel, row)
                    body = body_keys(rule, rows)
                    support = (rid, body)
                    if (h, support) in sent:
                        continue
                    sent.add((h, support))
                    msg = (h, _rank_of(state, body), support)
                    dest = part_of(head_rel, row)
                    if dest == me:
                        local.append(msg)
                    else:
                        out.send(dest, msg)
        delta = Database()
        _accept(state, local, delta, out)
    return out


def _accept(state: RegionState, msgs: list[Message], delta: Database, out: Outbox) -> None:
    """Keep what arrived: a present fact takes supports no higher than its rank, up to K; an
    absent or suspect fact takes the K lowest-ranked, at the highest of their ranks, and
    joins ``delta``."""
    by_head: dict[FactKey, list[tuple[int, Support]]] = {}
    for h, r, s in msgs:
        by_head.setdefault(h, []).append((r, s))
    k = state.k
    for h, cands in by_head.items():
        cands.sort(key=lambda c: c[0])
        if h in state.db and h not in state.susp:
            cur = state.sup.get(h, [])
            if len(cur) >= k:
                continue
            rank = state.rank.get(h, 0)
            more = list(cur)
            for r, s in cands:
                if r > rank or len(more) >= k:
                    break
                if s not in more:
                    more.append(s)
            if len(more) != len(cur):
                state.set_supports(h, more)
            continue
        best: list[Support] = []
        top = 0
        for r, s in cands:
            if s not in best:
                best.append(s)
                top = r
                if len(best) == k:
                    break
        if h in state.susp:
            state.suspect(h, False)
            out.revived.append(h)
        else:
            state.add(h)
        state.set_rank(h, top)
        state.set_supports(h, best)
        delta.add(*h)
