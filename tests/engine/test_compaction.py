"""Compaction (``columnar/compaction.py``): a derived relation's dead rows dropped between
batches, and every row number that names them renamed (kept supports, their index by body
fact, a copy stratum's row map); and renewal (``strategies/columnar.renew``): the program
made again from the base facts it holds, its dictionaries with it. A program that does
either before every batch must keep what one that never does keeps: the views (and the
oracle's), the deltas and, compacted, the ranks; and its supports must be sound."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.engine.columnar.relation import Buckets
from netrules.engine.columnar.supports import gid, split_gid
from netrules.engine.strategies import columnar
from netrules.facts import Fact
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.engine.streams import fact_ranks, keyed_batches
from tests.engine.test_differential import (
    Present,
    assert_dense,
    assert_views_equal,
    expected_views,
    random_program,
    update_stream,
)


def _always(state) -> None:
    """Compact before every batch that follows one leaving a dead row."""
    prog = state.extra["program"]
    prog.compact_at, prog.compact_share = 0, 0.0


def _never(state) -> None:
    prog = state.extra["program"]
    prog.compact_at = prog.renew_at = 1 << 62


def _renewing(state) -> None:
    """Made again before every batch after the first."""
    prog = state.extra["program"]
    prog.renew_growth, prog.renew_at = 0.0, -(1 << 62)


def _same_state(a, b, plan, ranks: bool = True) -> None:
    """The same views and (``ranks``) ranks; and each program's kept supports sound
    (``_sound``): which of several equally good supports a fact keeps may differ, as a fact
    that comes back after its row was dropped takes a new row, later than its old one. A
    program made again ranks its facts afresh, where one maintained keeps a fact's rank
    while a support of it stands."""
    pa, pb = a.extra["program"], b.extra["program"]
    assert a.views() == b.views()
    for name in sorted(plan.derived) if ranks else []:
        assert fact_ranks(pa, name) == fact_ranks(pb, name), name
    _sound(pa)
    _sound(pb)


def _sound(prog) -> None:
    """Every fact of a stratum that keeps supports has one, and every kept support names its
    head's row and alive body rows, those of its own stratum of lower rank (well-founded)."""
    sup = prog.supports
    for (_, srels), rules in zip(prog.strata, prog.rules, strict=True):
        if not rules:  # (an iterated stratum's rules are its stage's: no supports)
            continue
        for name in srels:
            rel, code = prog.rels[name], prog.codes[name]
            rows = rel.alive_rows()
            qi, sids = sup.of_heads(gid(code, rows))
            assert set(qi.tolist()) == set(range(len(rows))), f"{name}: a fact without support"
            assert (sup.heads(sids) == gid(code, rows[qi])).all()
            head_rank = rel.rank_at(rows[qi])
            bodies = sup.bodies(sids)
            for j in range(bodies.shape[1]):
                g = bodies[:, j]
                at = np.flatnonzero(g >= 0)
                bcode, brow = split_gid(g[at])
                for c in set(bcode.tolist()):
                    bname = prog.names[c]
                    brel, mine = prog.rels[bname], at[bcode == c]
                    assert brel.alive[brow[bcode == c]].all(), f"{name} kept on dead {bname}"
                    if bname in srels:
                        assert (brel.rank_at(brow[bcode == c]) < head_rank[mine]).all()


@settings(max_examples=200)
@given(random_program(), update_stream(), st.data())
def _random_programs(tally: Counter, text: str, stream, data) -> None:
    plan = plan_program(parse_program(text))
    initial, batches = stream
    states = [columnar.materialize(plan, initial) for _ in range(2)]
    assume(columnar.owns(states[0]))  # (a program it does not serve runs per fact)
    _always(states[0])
    _never(states[1])
    present = Present(plan, initial)
    relations = plan.derived | plan.base
    for i, batch in enumerate(batches):
        before = {r: {f.args for f in fs} for r, fs in states[0].views().items()}
        delta = columnar.apply(states[0], batch)
        columnar.apply(states[1], batch)
        present.apply(batch)
        after = states[0].views()
        assert_views_equal(after, expected_views(plan, present), relations, f"batch {i}")
        for rel in relations:  # the delta, read after the compaction the next batch makes
            now = {f.args for f in after.get(rel, [])}
            assert delta.added.get(rel, set()) == now - before.get(rel, set()), rel
            assert delta.removed.get(rel, set()) == before.get(rel, set()) - now, rel
        _same_state(*states, plan)
    tally[states[0].extra["program"].stats.get("compactions", 0) > 0] += 1


def test_random_programs_compacted_before_every_batch_keep_what_they_kept() -> None:
    tally: Counter = Counter()
    _random_programs(tally)
    assert_dense(tally, 0.15, "a compaction")  # (27-50% seen)


@pytest.mark.parametrize("how", ["compacted", "renewed"])
@pytest.mark.parametrize("program", ["reachability", "best_routes", "routing_loop",
                                     "loops", "path_vector"])
def test_link_programs_compacted_keep_facts_ranks_supports_and_past_deltas(program: str,
                                                                            how: str) -> None:
    """Random link batches, costs changing under a key among them, with compaction (or
    renewal) before every batch against neither: the same facts and ranks after every
    batch, sound supports, the oracle's views, and every delta read at the end says what it
    said when it was new."""
    plan = plan_program(programs.load(program))
    states = [columnar.materialize(plan, []) for _ in range(2)]
    (_always if how == "compacted" else _renewing)(states[0])
    _never(states[1])
    present = Present(plan, [])  # the oracle's base facts, keys and all (hop's is its node)
    kept = []
    # (path_vector's views are every path: a shorter stream does)
    for batch in keyed_batches(plan, 5, 20 if program == "path_vector" else 40, retract=True):
        delta = columnar.apply(states[0], batch)
        columnar.apply(states[1], batch)
        kept.append((delta, {r: (delta.ids(r, 0).tolist(), delta.ids(r, 1).tolist())
                             for r in delta.columns}))
        present.apply(batch)
        assert_views_equal(states[0].views(), expected_views(plan, present), plan.visible,
                           f"{program}, batch {len(kept)}")
        _same_state(*states, plan, ranks=how == "compacted")
    for delta, ids in kept:
        assert {r: (delta.ids(r, 0).tolist(), delta.ids(r, 1).tolist())
                for r in delta.columns} == ids
    progs = [s.extra["program"] for s in states]
    if how == "renewed":
        assert progs[0].stats["renewals"] == len(kept) - 1
        assert progs[0].renew_at < 0  # its tuning made again with it
        aggregated = {r.head.relation for r in plan.rules if r.head.aggregate()}
        shown = [f for r in sorted(plan.derived - aggregated)
                 for f in states[0].views().get(r, [])]
        for f in shown[:20]:  # why: a tree of the new program's supports, down to base facts
            tree = columnar.explain(states[0], f)  # (or an aggregate's, which the store
            assert tree is not None  # explains by its witness)
            assert all(x.relation in plan.base | aggregated for x in tree.leaves())
        return
    assert progs[0].stats["compactions"] > 0
    rows = [sum(p.rels[n].n for n in plan.derived) for p in progs]
    assert rows[0] < rows[1]  # the compacted program holds fewer rows


def test_a_view_that_shrinks_and_heals_is_not_compacted_in_between() -> None:
    """A partition kills most of a reachability view and the heal brings it back: the
    dead rows are fewer than the view at its peak, so they stay to be revived, and the heal
    stores no fact again (a threshold on the living would compact them)."""
    plan = plan_program(programs.load("reachability"))
    ring = [Fact("link", (f"n{i}", f"n{(i + 1) % 12}", 1), 0) for i in range(12)]
    state = columnar.materialize(plan, ring)
    prog = state.extra["program"]
    prog.compact_at, prog.compact_share = 0, 1.0
    rows = prog.rels["reachable"].n
    columnar.apply(state, [("-", f) for f in ring[::2]])
    assert prog.rels["reachable"].count < rows - prog.rels["reachable"].count  # most dead
    columnar.apply(state, [("+", f) for f in ring[::2]])
    assert prog.stats.get("compactions", 0) == 0
    assert prog.rels["reachable"].n == rows
    columnar.apply(state, [("-", f) for f in ring[::2]])
    columnar.apply(state, [("+", ring[0])])  # a smaller peak would have compacted here
    assert prog.stats.get("compactions", 0) == 0


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 10**6)), max_size=400),
       st.integers(1, 4), st.integers(0, 2**16))
def test_buckets_rekeyed_find_what_they_held_under_the_new_keys(entries, parts: int,
                                                                  seed: int) -> None:
    """A multimap whose keys are rows renumbered by a compaction (kept rows in order, the
    rest dropped) finds each kept entry under its new key and nothing else, from sorted runs,
    runs kept as offsets and appends not sorted yet alike."""
    rng = random.Random(seed)
    b = Buckets()
    b.dense_above = 8  # large runs kept as offsets too
    chunks = np.array_split(np.array(entries, dtype=np.int64).reshape(-1, 2), parts)
    for i, chunk in enumerate(chunks):
        b.append(chunk[:, 0].astype(np.int32), chunk[:, 1])
        if i < len(chunks) - 1:
            b.settle()  # runs, and the last chunk left pending
    keep = np.array([rng.random() < 0.6 for _ in range(301)])
    new = np.full(301, -1, dtype=np.int64)
    new[keep] = np.arange(int(keep.sum()))
    b.rekey(new)
    want = Counter((int(new[k]), v) for k, v in entries if keep[k])
    assert b.n == sum(want.values())
    q = np.arange(int(keep.sum()), dtype=np.int64)
    qi, vals = b.probe(q.astype(np.int32))
    assert Counter(zip(q[qi].tolist(), vals.tolist(), strict=True)) == want


@pytest.mark.parametrize("way", ["compacting", "renewing"])
def test_a_run_that_reclaims_before_every_batch_writes_the_store_one_that_never_does(
        tmp_path, monkeypatch, way: str) -> None:
    """``netrules run`` compacting (or renewing) before every batch, its threshold at
    nothing, against the defaults, on flaps that change routes back and forth: the same
    views, change log, alerts and batches in the store, and every derivation written names
    facts the views hold."""
    import json
    import sqlite3

    from click.testing import CliRunner

    from netrules.cli import main
    from netrules.engine.columnar import compaction
    from netrules.engine.strategies import columnar as strategy

    flaps = tmp_path / "flaps.scenario"
    flaps.write_text("at 10 fail link Seattle Denver\n"
                     "at 20 recover link Seattle Denver\n"
                     "at 30 fail link Sunnyvale Denver\n"
                     "at 40 fail link Seattle Denver\n"
                     "at 50 fail link Seattle Sunnyvale\n"  # Seattle cut off: routes lost
                     "at 60 recover link Seattle Sunnyvale\n"
                     "at 70 recover link Seattle Denver\n"
                     "at 80 recover link Sunnyvale Denver\n", encoding="utf-8")
    done: Counter = Counter()

    def counted(name: str, f):
        def call(*args):
            done[name] += 1
            return f(*args)
        return call

    for run in ("default", way):
        if run == "compacting":
            monkeypatch.setattr(compaction, "COMPACT_AT", 0)
            monkeypatch.setattr(compaction, "COMPACT_SHARE", 0.0)
            monkeypatch.setattr(compaction, "_compact", counted(run, compaction._compact))
        elif run == "renewing":
            monkeypatch.setattr(strategy, "RENEW_GROWTH", 0.0)
            monkeypatch.setattr(strategy, "RENEW_AT", -(1 << 62))
            monkeypatch.setattr(strategy, "renew", counted(run, strategy.renew))
        r = CliRunner().invoke(main, [
            "run", "best_routes", "--simulate", "abilene", "--scenario", str(flaps), "--once",
            "-q", "--store", str(tmp_path / f"{run}.db"), "--events-dir",
            str(tmp_path / f"ev-{run}")])
        assert r.exit_code == 0, r.output
    a, b = (sqlite3.connect(tmp_path / f"{w}.db") for w in ("default", way))
    for q in ("SELECT relation, args, loc, loc_pos, batch_id FROM views ORDER BY 1, 2",
              "SELECT batch_id, relation, args, loc_pos, op FROM changes ORDER BY 1, 2, 3, 5",
              "SELECT dedup_key, kind, message, raised_batch, cleared_batch FROM alerts "
              "ORDER BY 1, 4",
              "SELECT batch_id, n_events, added, removed FROM batches ORDER BY 1"):
        assert a.execute(q).fetchall() == b.execute(q).fetchall(), q
    batches = b.execute("SELECT count(*) FROM batches").fetchone()[0]
    assert batches >= 5 and done[way] >= (batches - 1 if way == "renewing" else 2)
    assert b.execute("SELECT count(*) FROM alerts").fetchone()[0] > 0
    held = set(b.execute("SELECT relation, args FROM views").fetchall())
    for rel, args, body in b.execute("SELECT relation, args, body FROM derivations"):
        assert (rel, args) in held
        for brel, bargs, *_ in json.loads(body):
            assert (brel, json.dumps(bargs, separators=(",", ":"))) in held, (rel, args)
