"""The columnar engine's own parts, each against a plain Python model, and the whole engine
where the shared engine suite does not reach: support compaction, why-trees after it, the
store a run writes, and the package's independence from the reference evaluator."""

from __future__ import annotations

import ast as pyast
import json
import random
import sqlite3
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.engine.columnar import kernels
from netrules.engine.columnar.hashmap import Int64Map
from netrules.engine.columnar.relation import Buckets
from netrules.engine.columnar.values import Values
from netrules.engine.engine import Engine
from netrules.facts import sort_key, value_to_json
from netrules.plan import plan_program
from tests.meaning import evaluate_program
from topologies import link_facts, load_topology

ROOT = Path(__file__).resolve().parents[2]

scalars = st.one_of(st.integers(-3, 40), st.sampled_from([2**40, 1.5, -0.5]),
                    st.text("abcd", max_size=3), st.text("abcd", max_size=3))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4).map(tuple),
                      max_leaves=10)


@settings(max_examples=150, deadline=None)
@given(st.lists(values, min_size=1, max_size=40))
def test_values_round_trip_order_and_json(vals: list) -> None:
    v = Values()
    # rank a first half before the rest is interned: the kept rank of atoms must follow
    first = np.array([v.encode(x) for x in vals[: len(vals) // 2]], dtype=np.int64)
    v.order_rank(first)
    ids = np.array([v.encode(x) for x in vals], dtype=np.int64)
    assert list(v.decode_column(ids)) == vals
    assert [v.lookup(x) for x in vals] == ids.tolist()
    assert v.json_column(ids) == [json.dumps(value_to_json(x), separators=(",", ":"))
                                  for x in vals]
    rank = v.order_rank(ids)
    for i in range(len(vals)):
        for j in range(len(vals)):
            if vals[i] != vals[j]:
                assert (rank[i] < rank[j]) == (sort_key(vals[i]) < sort_key(vals[j]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("pgd"), st.lists(st.integers(0, 300), max_size=40)),
                max_size=30))
def test_int64map_is_a_dict(ops: list) -> None:
    m, model = Int64Map(), {}
    for k, (op, keys) in enumerate(ops):
        keys = np.unique(np.array(keys, dtype=np.int64))
        if op == "p":
            m.put(keys, keys * 7 + k)
            model.update({x: x * 7 + k for x in keys.tolist()})
        elif op == "d":
            m.delete(keys)
            for x in keys.tolist():
                model.pop(x, None)
        q = np.arange(0, 301, dtype=np.int64)
        assert m.get(q).tolist() == [model.get(x, -1) for x in range(301)]
        assert len(m) == len(model)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 99)), max_size=30),
                max_size=12), st.lists(st.integers(0, 25), max_size=10), st.integers(-1, 40),
       st.booleans())
def test_buckets_are_a_multimap(appends: list, probes: list, dense_above: int,
                                scratch: bool) -> None:
    """Probes and ``values_of`` give the model's entries, whichever runs are read through
    offsets (kept, per call, or none) and after a renumbering drops and renames values:
    kept offsets must follow the runs they were made from."""
    b, model = Buckets(), {}
    real = Buckets.dense_above
    b.dense_above = dense_above  # runs of more entries than this keep offsets
    kill: dict | None = {} if scratch else None
    try:
        for i, chunk in enumerate(appends):
            if chunk:
                keys = np.array([k for k, _ in chunk], dtype=np.int64)
                vals = np.array([v for _, v in chunk], dtype=np.int64)
                b.append(keys, vals)
                for k, v in chunk:
                    model.setdefault(k, []).append(v)
            if i % 3 == 0:  # probes between appends settle runs of every size
                q = np.array(probes, dtype=np.int64)
                qi, vals = b.probe(q)
                got = sorted(zip(qi.tolist(), vals.tolist(), strict=True))
                want = sorted((j, v) for j, k in enumerate(probes) for v in model.get(k, []))
                assert got == want
            if i % 4 == 1:  # every third value dropped, the rest renamed
                b.renumber(np.array([-1 if v % 3 == 0 else v + 1 for v in range(200)]))
                model = {k: [v + 1 for v in vs if v % 3] for k, vs in model.items()}
            q = np.array(probes, dtype=np.int64)
            assert sorted(b.values_of(q, kill).tolist()) == sorted(
                v for k in probes for v in model.get(k, []))
    finally:
        assert Buckets.dense_above == real


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(-5, 300), max_size=400), st.lists(st.integers(0, 300), max_size=300),
       st.sampled_from([np.int32, np.int64]), st.integers(0, 2**40))
def test_stable_order_and_merge_runs_are_numpys(a: list, b: list, dtype: type, big: int) -> None:
    """The counting sort and the two-run merge behind ``Buckets.settle`` give exactly what a
    stable argsort gives (a multimap's values keep their order among equal keys)."""
    x = np.array(a, dtype=dtype)
    want = np.argsort(x, kind="stable")
    assert np.array_equal(kernels.stable_order(x), want)
    if len(x):
        assert np.array_equal(kernels.counting_order(x, np.int64(x.min()),
                                                     np.int64(int(x.max()) - int(x.min()) + 1)),
                              want)
    wide = np.array([*a, big], dtype=np.int64)  # a span past the counting sort's bound
    assert np.array_equal(kernels.stable_order(wide), np.argsort(wide, kind="stable"))
    k1, k2 = np.sort(x), np.sort(np.array(b, dtype=dtype))
    v1, v2 = np.arange(len(k1), dtype=np.int32), np.arange(len(k2), dtype=np.int32) + len(k1)
    keys, vals = kernels.merge_runs(k1, v1, k2, v2)
    both = np.concatenate([k1, k2])
    order = np.argsort(both, kind="stable")
    assert np.array_equal(keys, both[order])
    assert np.array_equal(vals, np.concatenate([v1, v2])[order])


def test_buckets_probed_by_more_than_they_hold_merge_their_runs() -> None:
    """A probe of more keys than entries merges the runs first: the answer is the same."""
    b = Buckets()
    b.append(np.arange(20, dtype=np.int64) % 7, np.arange(20, dtype=np.int64))
    b.probe(np.array([0]))  # one run of 20
    b.append(np.array([3, 9], dtype=np.int64), np.array([100, 101], dtype=np.int64))
    b.probe(np.array([0]))  # and one of 2 (20 > 4 * 2: kept apart)
    assert len(b.runs) == 2
    q = np.arange(30, dtype=np.int64) % 11
    qi, vals = b.probe(q)
    assert len(b.runs) == 1
    model = {k: [v for v in range(20) if v % 7 == k] for k in range(7)}
    model[3] = [*model[3], 100]
    model[9] = [101]
    want = sorted((i, v) for i, k in enumerate(q.tolist()) for v in model.get(k, []))
    assert sorted(zip(qi.tolist(), vals.tolist(), strict=True)) == want


def test_compaction_keeps_views_and_why_trees_exact() -> None:
    """Link flaps leave dead supports; once they outnumber the living they are compacted
    away, and every support lookup (why, the store's derivations) goes on working."""
    plan = plan_program(programs.load("reachability"))
    links = link_facts(load_topology("grid:5x5"))
    eng = Engine(plan, "columnar")
    eng.apply([("+", f) for f in links])
    present, rng, compactions = set(links), random.Random(3), 0
    for b in range(300):
        batch = []
        for _ in range(rng.randint(1, 5)):
            f = rng.choice(links)
            batch.append(("-" if f in present else "+", f))
            (present.discard if f in present else present.add)(f)
        prog = eng.state.extra["program"]
        before = prog.supports.n
        eng.apply(batch)
        if prog.supports.n < before:  # compacted: every fact still finds a kept support
            compactions += 1
            for args in prog.facts("reachable"):
                label, body = prog.support_of("reachable", args)
                assert all(prog.contains(r, a) for r, a in body)
        if b % 50 == 49:
            want = evaluate_program(plan, sorted(present, key=lambda f: f.key()))
            assert eng.views().get("reachable", []) == want.get("reachable", [])
            for f in eng.views().get("reachable", [])[::7]:
                tree = eng.explain(f)
                assert tree is not None and {x.relation for x in tree.leaves()} == {"link"}
    assert compactions >= 1


def test_a_columnar_run_writes_the_store_a_per_fact_run_writes(tmp_path) -> None:
    """Store rows from id columns (pipeline/bulk.py) against the per-fact pipeline: the same
    views, change log, alerts and derived facts with derivations, whose bodies hold."""
    cut = tmp_path / "cut.scenario"  # ends cut: a witness through Denver must be replaced
    cut.write_text("at 10 fail link Seattle Denver\n", encoding="utf-8")
    for scenario in (ROOT / "examples" / "abilene-failure.scenario", cut):
        _same_store(tmp_path / scenario.stem, scenario)


def _same_store(tmp_path: Path, scenario: Path) -> None:
    from click.testing import CliRunner

    from netrules.cli import main

    for strategy in ("psn", "columnar"):
        r = CliRunner().invoke(main, [
            "run", "path_vector", "--simulate", "abilene", "--scenario", str(scenario),
            "--once", "-q", "--strategy", strategy, "--store", str(tmp_path / f"{strategy}.db"),
            "--events-dir", str(tmp_path / f"ev-{strategy}")])
        assert r.exit_code == 0, r.output
    a, b = (sqlite3.connect(tmp_path / f"{s}.db") for s in ("psn", "columnar"))
    for q in ("SELECT relation, args, loc, loc_pos, batch_id FROM views ORDER BY 1, 2",
              "SELECT batch_id, relation, args, loc_pos, op FROM changes ORDER BY 1, 2, 3, 5",
              "SELECT dedup_key, kind, message, raised_batch, cleared_batch FROM alerts "
              "ORDER BY 1, 4",
              "SELECT relation, args FROM derivations ORDER BY 1, 2",
              "SELECT batch_id, n_events, added, removed FROM batches ORDER BY 1"):
        rows = a.execute(q).fetchall()
        assert rows == b.execute(q).fetchall(), q
    assert a.execute("SELECT count(*) FROM derivations").fetchone()[0] > 100
    # a derivation may name another equally good witness, but never a fact that is gone
    for db in (a, b):
        held = set(db.execute("SELECT relation, args FROM views").fetchall())
        for rel, args, body in db.execute("SELECT relation, args, body FROM derivations"):
            assert (rel, args) in held
            for brel, bargs, *_ in json.loads(body):
                assert (brel, json.dumps(bargs, separators=(",", ":"))) in held, (rel, args)


def test_the_columnar_package_imports_nothing_from_the_reference_evaluator() -> None:
    for path in sorted((ROOT / "netrules" / "engine" / "columnar").glob("*.py")):
        tree = pyast.parse(path.read_text(encoding="utf-8"))
        for node in pyast.walk(tree):
            if isinstance(node, pyast.ImportFrom) and node.module:
                assert node.module not in ("netrules.engine.reference", "netrules.engine.joins",
                                            "netrules.engine.firing"), (path.name, node.module)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 300), st.lists(st.integers(0, 299), max_size=60),
       st.lists(st.integers(0, 400), max_size=60))
def test_rowset_is_a_set(n: int, members: list[int], probes: list[int]) -> None:
    """Both forms (a mask for a sizeable set, a sorted array for a few rows of many) answer
    membership; rows made after the set (>= n) are never in it."""
    from netrules.engine.columnar.relation import RowSet

    members = [m for m in members if m < n]
    rs = RowSet(n, np.array(members, dtype=np.int64))
    got = rs.has(np.array(probes, dtype=np.int64)).tolist()
    assert got == [p in set(members) for p in probes]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 12), st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)),
                                    max_size=40),
       st.lists(st.integers(0, 11), max_size=3), st.lists(st.integers(0, 11), max_size=3))
def test_reach_is_a_search_that_stops_at_blocked_nodes(n: int, edges: list, roots: list,
                                                       stop: list) -> None:
    edges = [(a % n, b % n) for a, b in edges]
    roots, stop = [r % n for r in roots], {s % n for s in stop}
    src = np.array([a for a, _ in edges], dtype=np.int64)
    dst = np.array([b for _, b in edges], dtype=np.int64)
    got = kernels.reach(n, src, dst, np.array(roots, np.int64), np.array(sorted(stop), np.int64))
    want, todo = set(), [r for r in roots if r not in stop]
    while todo:
        v = todo.pop()
        if v in want:
            continue
        want.add(v)
        todo += [b for a, b in edges if a == v and b not in stop]
    assert sorted(got.tolist()) == sorted(want)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=12), st.lists(st.booleans(), min_size=12,
                                                                      max_size=12),
       st.lists(st.integers(0, 11), max_size=30))
def test_release_takes_a_support_per_entry_and_hides_the_unsupported(
        nsup: list[int], alive: list[bool], heads: list[int]) -> None:
    n = len(nsup)
    heads = [h % n for h in heads]
    ns, al = np.array(nsup, np.int8), np.array(alive[:n], bool)
    gone = kernels.release(ns, al, np.array(heads, np.int64)).tolist()
    want_n = list(nsup)
    for h in heads:
        want_n[h] -= 1
    want = sorted({h for h in heads if want_n[h] <= 0 and alive[h]})
    assert ns.tolist() == want_n and sorted(gone) == want and len(gone) == len(set(gone))
    assert al.tolist() == [a and i not in want for i, a in enumerate(alive[:n])]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), max_size=40), st.integers(1, 3))
def test_best_supports_keeps_k_of_each_rows_least_rank(cands: list, k: int) -> None:
    rows = np.array([r for r, _ in cands], np.int64)
    rank = np.array([q for _, q in cands], np.int32)
    order = np.argsort((rows << 31) | rank)
    idx, facts, frank, nsup = kernels.best_supports(rows, rank, order, k)
    assert facts.tolist() == sorted({r for r, _ in cands})
    for f, fr, ns in zip(facts.tolist(), frank.tolist(), nsup.tolist(), strict=True):
        least = min(q for r, q in cands if r == f)
        mine = [i for i in idx.tolist() if rows[i] == f]
        assert fr == least and ns == len(mine) == min(k, sum(
            1 for r, q in cands if r == f and q == least))
        assert all(rank[i] == least for i in mine)
    assert len(set(idx.tolist())) == len(idx)
    kept_rows = rows[idx].tolist()
    assert kept_rows == sorted(kept_rows)  # grouped by row, as Supports.add needs


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3), st.lists(st.lists(st.integers(0, 5), min_size=3, max_size=3),
                                   min_size=1, max_size=30),
       st.lists(st.integers(0, 29), max_size=10),
       st.lists(st.lists(st.integers(0, 6), min_size=3, max_size=3), max_size=20))
def test_keyed_rows_find_exactly_their_rows(arity: int, stored: list, some: list,
                                            probes: list) -> None:
    from netrules.engine.columnar.keys import Pairs
    from netrules.engine.columnar.relation import KeyedRows, Relation

    rel = Relation("r", arity, Pairs())
    cols = np.array([s[:arity] for s in stored], np.int64).reshape(len(stored), arity)
    rows = rel.rows_for(cols)
    mine = sorted({int(rows[i % len(rows)]) for i in some})
    kr = KeyedRows(rel, np.array(mine, np.int64))
    q = np.array([p[:arity] for p in probes] + [s[:arity] for s in stored],
                 np.int64).reshape(len(probes) + len(stored), arity)
    got = kr.find(q).tolist()
    want = rel.find(q).tolist()
    assert got == [w if w in mine else -1 for w in want]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 7), st.booleans()), min_size=1,
                max_size=20),
       st.lists(st.integers(0, 3), min_size=8, max_size=8),
       st.lists(st.booleans(), min_size=8, max_size=8), st.lists(st.booleans(), min_size=8,
                                                                 max_size=8),
       st.lists(st.integers(0, 19), max_size=30))
def test_kill_step_is_release_over_distinct_alive_supports_of_one_relation(
        sups: list, nsup: list[int], alive: list[bool], touched: list[bool],
        sids: list[int]) -> None:
    """Supports are (rule, head row, alive); rule 0 heads relation code 5, rule 1 code 6;
    a step kills the code-5 ones among ``sids`` once each and releases their heads."""
    sids = [i % len(sups) for i in sids]
    s_alive = np.array([a for _, _, a in sups], bool)
    s_rule = np.array([r for r, _, _ in sups], np.int16)
    s_head = np.array([h for _, h, _ in sups], np.int32)
    ns, al = np.array(nsup, np.int8), np.array(alive, bool)
    tc, tb = np.array(touched, bool), np.zeros(8, bool)
    gone, first, heads = kernels.kill_step(np.array(sids, np.int64), s_alive, s_rule, s_head,
                                           np.array([5, 6], np.int64), np.int64(5), ns, al,
                                           tc, tb)
    killed = [s for s in dict.fromkeys(sids) if sups[s][2] and sups[s][0] == 0]
    want_n = list(nsup)
    for s in killed:
        want_n[sups[s][1]] -= 1
    want_gone = sorted({sups[s][1] for s in killed
                        if want_n[sups[s][1]] <= 0 and alive[sups[s][1]]})
    assert sorted(heads.tolist()) == sorted(sups[s][1] for s in killed)
    assert s_alive.tolist() == [a and i not in killed for i, (_, _, a) in enumerate(sups)]
    assert ns.tolist() == want_n and sorted(gone.tolist()) == want_gone
    assert al.tolist() == [a and i not in want_gone for i, a in enumerate(alive)]
    assert sorted(first.tolist()) == [g for g in want_gone if not touched[g]]
    assert tc.tolist() == [t or i in want_gone for i, t in enumerate(touched)]
    assert tb.tolist() == [i in want_gone and not touched[i] for i in range(8)]


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 9), max_size=10), st.lists(st.booleans(), min_size=10,
                                                           max_size=10))
def test_revive_sets_rank_count_alive_and_first_touch(facts: set[int], touched: list[bool]
                                                      ) -> None:
    rows = np.array(sorted(facts), np.int64)
    frank = np.arange(len(rows), dtype=np.int32) + 3
    nsup = np.full(len(rows), 2, np.int8)
    rank, kept = np.zeros(10, np.int32), np.zeros(10, np.int8)
    alive, tc, tb = np.zeros(10, bool), np.array(touched, bool), np.ones(10, bool)
    first = kernels.revive(rows, frank, nsup, rank, kept, alive, tc, tb)
    assert rank[rows].tolist() == frank.tolist() and kept[rows].tolist() == [2] * len(rows)
    assert alive.tolist() == [i in facts for i in range(10)]
    assert sorted(first.tolist()) == sorted(f for f in facts if not touched[f])
    assert tc.tolist() == [t or i in facts for i, t in enumerate(touched)]
    assert tb.tolist() == [not (i in facts and not touched[i]) for i in range(10)]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5),
       st.lists(st.lists(st.integers(0, 4), min_size=5, max_size=5), min_size=1, max_size=25),
       st.lists(st.lists(st.integers(-1, 5), min_size=5, max_size=5), max_size=25))
def test_row_keys_are_exact_and_probes_miss_what_was_never_stored(
        width: int, stored: list, probes: list) -> None:
    """Interned keys are equal exactly when rows are; a lookup finds a stored row's key,
    never matches a row not stored, and gives -1 for a row with a negative id (a constant
    never interned), whichever path (compiled chain, two ids packed, one id) it takes."""
    from netrules.engine.columnar.keys import Pairs

    pairs = Pairs()
    rows = np.array([s[:width] for s in stored], np.int64).reshape(len(stored), width)
    cols = [rows[:, j] for j in range(width)]
    keys = pairs.key(cols, intern=True).tolist()
    first: dict[tuple, int] = {}
    for row, k in zip(map(tuple, rows.tolist()), keys, strict=True):
        assert first.setdefault(row, k) == k
    assert len(set(first.values())) == len(first)
    # interning again, as one 2-d array, gives the same keys
    if width >= 3:
        assert pairs.row_keys(rows, intern=True).tolist() == keys
    q = np.array([p[:width] for p in probes], np.int64).reshape(len(probes), width)
    got = pairs.key([q[:, j] for j in range(width)], intern=False).tolist()
    for row, k in zip(map(tuple, q.tolist()), got, strict=True):
        if row in first:
            assert k == first[row]
        elif min(row) < 0 and width > 1:
            assert k == -1
        else:  # pair ids are shared by every prefix length, so a miss may still pack
            assert k not in first.values()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 40), max_size=60), st.lists(st.integers(-3, 40), max_size=60),
       st.sampled_from([2, 10**9]), st.sampled_from([np.int64, np.int32]),
       st.sampled_from([0, 1 << 34, -(1 << 20)]))
def test_distinct_and_union_are_numpys(a: list[int], b: list[int], bitmap_min: int,
                                       dtype: type, shift: int) -> None:
    """By the bitmap (``bitmap_min`` 2: every array of two ids or more whose span allows it)
    and by the sort, on row ids and on gids far from zero."""
    from unittest import mock

    from netrules.engine.columnar import sets

    x = np.array(a, np.int64) + (shift if dtype is np.int64 else 0)
    y = np.array(b, np.int64) + (shift if dtype is np.int64 else 0)
    x, y = x.astype(dtype), y.astype(dtype)
    with mock.patch.object(sets, "BITMAP_MIN", bitmap_min):
        assert sets.distinct(x).tolist() == np.unique(x).tolist()
        assert sets.union(x, y).tolist() == np.union1d(x, y).tolist()
        assert sets.distinct(x).dtype == x.dtype


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 3)),
                         max_size=30), min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(-1, 6), st.integers(-1, 6)), max_size=30),
       st.sets(st.integers(0, 200)), st.booleans())
def test_relation_rows_and_index_probes_match_a_list_of_rows(
        batches: list, probes: list, kill: set, compact: bool) -> None:
    """``rows_for`` gives a row per distinct fact, new ones in order of first appearance;
    probes of one or two positions (``RowIndex``) return exactly the stored rows (alive or
    not) whose ids match, across appends, table growth and a compaction; ``find`` misses
    what was never stored."""
    from netrules.engine.columnar.keys import Pairs
    from netrules.engine.columnar.relation import Relation

    rel = Relation("r", 3, Pairs())
    model: list[tuple] = []
    for i, batch in enumerate(batches):
        cols = np.array(batch, dtype=np.int64).reshape(len(batch), 3)
        got = rel.rows_for(cols).tolist()
        for fact, row in zip(batch, got, strict=True):
            if fact not in model:
                model.append(fact)
            assert model.index(fact) == row
        if i == 0:  # indexes made after rows exist, then appended to
            rel.index((0,)), rel.index((0, 2))
    dead = [r for r in sorted(kill) if r < len(model)]
    rel.set_alive(np.arange(len(model)))
    rel.set_dead(np.array(dead, dtype=np.int64))
    if compact:
        new = rel.compact().tolist()
        model = [f for r, f in enumerate(model) if r not in dead]
        assert [n for n in new if n >= 0] == list(range(len(model)))
    assert [tuple(x) for x in rel.cols[: rel.n].tolist()] == model
    q = np.array(probes, dtype=np.int64).reshape(len(probes), 2)
    for positions in ((0,), (0, 2), (1, 2)):
        qcols = [q[:, k] for k in range(len(positions))]
        qi, rows = rel.probe(positions, qcols)
        got = sorted(zip(qi.tolist(), rows.tolist(), strict=True))
        want = sorted((i, r) for i, p in enumerate(probes) for r, f in enumerate(model)
                      if all(f[pos] == p[k] for k, pos in enumerate(positions)))
        assert got == want
    missing = [f for f in [(6, 6, 0), (0, 0, 9)] if f not in model]
    if missing:
        assert (rel.find(np.array(missing, dtype=np.int64)) == -1).all()
