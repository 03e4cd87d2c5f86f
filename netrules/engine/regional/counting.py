"""What a region does in one round of a counting stage: a stratum with an aggregate or
negation, recursive through its aggregate (best routes) or not.

The stage means the fixpoint of applying all its rules at once, over and over
(``engine/iterated.py``), and is maintained the same way, cut at region boundaries. Each
counted fact located here has a derivation count (rule instances whose body holds now) and
each aggregate group located here its values, so ``T(S)`` is known wherever it lands: a fact
is in ``T(S)`` when its count is positive. A round takes in the count and group moves sent
to the region, compares ``T(S)`` with ``S`` where counts moved, makes ``S`` the new iterate
and sends the moves its change causes: rule bodies sit at one node, so a changed fact is
joined where it is held, and only heads located elsewhere travel. Counting is exact here
because every round applies the rules to the previous iterate: no derivation leans on
itself.

A batch first *overdeletes*: every fact of the old fixpoint with a derivation that leaned,
directly or through other such facts, on a lost fact below (or on one newly true under
``not``) leaves the first iterate, as ``iterated.maintain_iterated`` does, so a withdrawn
route is rebuilt rather than hunted along ever longer detours.

Messages: ``("c", head, n)`` moves a count, ``("g", rid, group, value, sign)`` a group's
values, ``("o", head)`` / ``("O", rid, group, value)`` overdelete a fact or a group's row (the
row goes only when a binding giving ``value`` may hold it up: ``AggIndex.leans_on``).
"""

from __future__ import annotations

from typing import Any

from netrules.engine.firing import (
    FactKey,
    body_keys,
    changed_bindings,
    changed_heads,
    distinct_bindings,
)
from netrules.engine.joins import rows_for
from netrules.engine.reference import Database, assemble_row, head_fact
from netrules.engine.regional.state import RegionState, Support
from netrules.engine.regional.steps import Outbox, Program, Stage, lower_changes
from netrules.engine.views import Minus, Patched, Union
from netrules.lang import ast

__all__ = ["overdelete", "count", "witness"]


def _group_part(prog: Program, rule: ast.Rule, group: tuple) -> int:
    """The region of a group's row (its location is among the group's values)."""
    g = rule.grouping
    assert g is not None
    return prog.part_of(rule.head.relation,
                        assemble_row(g, group, None, (None,) * len(g.payload)))


def _reads(state: RegionState, stage: Stage) -> tuple[Any, Any, Database, Database]:
    """(old, new, gone, came): what the stage's bodies read before the batch and now, and
    the net change below between them."""
    gone, came = lower_changes(state, stage)
    new = Patched(state.db, hide=(state.susp,))
    return Union(Minus(new, came), gone), new, gone, came


def overdelete(state: RegionState, prog: Program, stage: Stage, first: bool,
               mine: Any) -> Outbox:
    """One overdeletion round: the first starts from the changes below (applying base
    facts when this is the program's first stage); later ones from what was sent here."""
    out = Outbox()
    inbox, base = mine or ([], None)
    if base is not None:
        gone_here, new_here = base
        for key in gone_here:
            state.remove(key)
        for key in new_here:
            state.add(key)
    old, _new, gone, came = _reads(state, stage)
    pos, neg = (gone, came) if first else (Database(), Database())
    for msg in inbox:
        key = msg[1] if msg[0] == "o" else _group_row(state, msg[1], msg[2], msg[3])
        if key is not None and _newly_over(state, key):
            pos.add(*key)
    me = state.region
    while any(pos.rel.values()) or any(neg.rel.values()):
        newly = Database()
        for rid, rule in stage.rules:
            rel = rule.head.relation
            if rule.head.aggregate():
                pair_of = prog.pair_of[rid]
                pairs = {pair_of(b) for b in changed_bindings(rule, pos, neg, old, old)}
                for group, value in pairs:
                    dest = _group_part(prog, rule, group)
                    if dest != me:
                        out.send(dest, ("O", rid, group, value))
                    else:
                        key = _group_row(state, rid, group, value)
                        if key is not None and _newly_over(state, key):
                            newly.add(*key)
            else:
                for row in set(changed_heads(rule, pos, neg, old, old)):
                    key = (rel, row)
                    dest = prog.part_of(rel, row)
                    if dest != me:
                        out.send(dest, ("o", key))
                    elif _newly_over(state, key):
                        newly.add(*key)
        pos, neg = newly, Database()
    return out


def _group_row(state: RegionState, rid: int, group: tuple, value: Any) -> FactKey | None:
    """The group's row, when losing a binding that gives ``value`` may move it."""
    ix = state.aggs.get(rid)
    if ix is None or not ix.leans_on(group, value):
        return None
    row = ix.row(group)
    return None if row is None else (ix.rule.head.relation, row)


def _newly_over(state: RegionState, key: FactKey) -> bool:
    if key in state.over or not state.shown(key):
        return False
    state.mark_over(key)
    return True


def count(state: RegionState, prog: Program, stage: Stage, first: bool,
          inbox: list[tuple]) -> Outbox:
    """One iteration: take in count and group moves, make ``S`` the new iterate where
    counts moved (the first round also drops the overdeleted facts and starts from the
    changes below), and send the moves that causes."""
    out = Outbox()
    _take(state, prog, inbox)
    d_in, a_in = Database(), Database()
    if first:
        d_in, a_in = lower_changes(state, stage)  # fresh databases: the round adds to them
        for key in state.take_over():
            state.remove(key)
            d_in.add(*key)
            state.bump(key, 0)  # back next round if T(S) still holds it
    for key in state.take_touched():
        want, held = state.cnt.get(key, 0) > 0, state.shown(key)
        if want and not held:
            state.add(key)
            a_in.add(*key)
        elif held and not want:
            state.remove(key)
            d_in.add(*key)
    if any(d_in.rel.values()) or any(a_in.rel.values()):
        _fire(state, prog, stage, d_in, a_in, out)
    out.busy = bool(state.touched)
    return out


def _take(state: RegionState, prog: Program, inbox: list[tuple]) -> None:
    """Apply count and group moves sent here (group moves per rule, as one move each)."""
    moves: dict[int, tuple[list, list]] = {}
    for msg in inbox:
        if msg[0] == "c":
            state.bump(msg[1], msg[2])
        else:
            _tag, rid, group, value, sign = msg
            moves.setdefault(rid, ([], []))[sign > 0].append((group, value))
    for rid in sorted(moves):
        _move(state, prog, rid, *moves[rid])


def _move(state: RegionState, prog: Program, rid: int, removed: list, added: list) -> None:
    rule = prog.rules[rid]
    state.new_groups(rid, rule)
    went, came = state.move_groups(rid, removed, added)
    rel = rule.head.relation
    if prog.report_supports:  # a group's row may keep its value but lose its witness
        ix = state.aggs[rid]
        for group in {grp for grp, _v in (*removed, *added)}:
            row = ix.row(group)
            if row is not None:
                state.step_sup.add((rel, row))
    for row in went:
        state.bump((rel, row), -1)
    for row in came:
        state.bump((rel, row), 1)


def _fire(state: RegionState, prog: Program, stage: Stage, d_in: Database, a_in: Database,
          out: Outbox) -> None:
    """Count moves of the stage's rule instances that stopped holding (over the reads
    before this round's change) and started (over the reads after it)."""
    new = Patched(state.db, hide=(state.susp,))
    old = Union(Minus(new, a_in), d_in)
    me = state.region
    counts: dict[FactKey, int] = {}
    local: dict[int, tuple[list, list]] = {}
    for rid, rule in stage.rules:
        rel = rule.head.relation
        is_agg = rule.head.aggregate() is not None
        for sign, pos, neg, read in ((-1, d_in, a_in, old), (1, a_in, d_in, new)):
            for b in distinct_bindings(changed_bindings(rule, pos, neg, read, read)):
                if is_agg:
                    group, value = prog.pair_of[rid](b)
                    dest = _group_part(prog, rule, group)
                    if dest == me:
                        local.setdefault(rid, ([], []))[sign > 0].append((group, value))
                    else:
                        out.send(dest, ("g", rid, group, value, sign))
                else:
                    key = (rel, head_fact(rule, b))
                    counts[key] = counts.get(key, 0) + sign
    for key, n in counts.items():
        if not n:
            continue
        dest = prog.part_of(*key)
        if dest == me:
            state.bump(key, n)
        else:
            out.send(dest, ("c", key, n))
    for rid in sorted(local):
        _move(state, prog, rid, *local[rid])


def witness(state: RegionState, prog: Program, key: FactKey) -> Support | None:
    """One rule instance here deriving counted fact ``key`` (its count says one holds, not
    which): what ``explain`` shows for it. An aggregate row's instance binds the aggregated
    variable to the result (MIN/MAX); None when the body sits at another node or no single
    instance attains it (COUNT, SUM)."""
    standing = Patched(state.db, hide=(state.susp,))
    for rid, rule in prog.by_head.get(key[0], ()):
        plain = prog.plain.get(rid, rule)
        if plain is None:
            continue
        rows = rows_for(plain, key[1], standing, standing)
        if rows:
            return (rid, body_keys(plain, min(rows)))
    return None
