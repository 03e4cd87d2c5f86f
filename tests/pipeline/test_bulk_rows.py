"""Store rows rendered from id columns (pipeline/texts.py, pipeline/bulk_rows.py) against the
per-fact forms they replace: ``args_json``, ``loc_text`` and the order by each column's text."""

from __future__ import annotations

import json
import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from netrules.engine.columnar.values import Values
from netrules.facts import Fact
from netrules.pipeline.bulk_rows import RANK_ALL, IdRows
from netrules.pipeline.decode import decode_rows
from netrules.pipeline.texts import value_texts
from netrules.store.base import args_json, loc_text

ODD = [1, 2**40, -3, 1.5, "a", 'q"u\\o', "ünï", "Infinity", 0, (), ("a",), ("a", "b"),
       (("x", 1), "y"), (1, (2, (3,)))]


def _rows(rng: random.Random, n: int) -> list[tuple]:
    names = ["a", "b", "ab", "Cumaná", 'q"u', "z"]
    out = set()
    while len(out) < n:
        path = tuple(rng.choice(names) for _ in range(rng.randint(0, 6)))
        out.add((rng.choice(names), rng.choice([*names, 7, 12]), path, rng.randint(0, 30)))
    return list(out)


def test_value_texts_are_the_canonical_json() -> None:
    rng = random.Random(4)
    vals = ODD + [tuple(rng.choice(["a", "b", 1, 2.5, ("q",)]) for _ in range(rng.randint(0, 9)))
                  for _ in range(500)]
    v = Values()
    ids = np.array([v.encode(x) for x in vals], dtype=np.int64)
    assert value_texts(v, ids).to_pylist() == [args_json((x,))[1:-1] for x in vals]
    assert value_texts(v, ids[::-1]).to_pylist() == [args_json((x,))[1:-1] for x in vals[::-1]]


def test_id_rows_are_the_sorted_store_rows() -> None:
    """Rows come ordered column by column by text, whatever order their ids were interned
    in (a column with many values ranked among the rows the columns before it tie); chunks
    join up; locations are the strings (or another value's JSON); ``first``
    agrees with the full order."""
    rows = _rows(random.Random(9), 400)
    rows += [(a, b, p, c + 100) for a, b, p, c in rows[:60]]  # equal but for the last column
    for loc, rank_all in ((0, RANK_ALL), (1, RANK_ALL), (0, 1)):  # 1: ranked among ties only
        v = Values()
        for r in random.Random(loc).sample(rows, len(rows)):  # interned in another order
            v.encode_rows([r], 4)
        ids = v.encode_rows(rows, 4)
        facts = [Fact("r", r, loc) for r in rows]
        want = sorted(facts, key=lambda f: [args_json((a,))[1:-1] for a in f.args])
        got_args: list[str] = []
        got_locs: list[str | None] = []
        for args, locs in IdRows(v, ids, loc, rank_all=rank_all).chunks(size=37):
            got_args += args
            got_locs += locs if locs is not None else [json.loads(a)[loc] for a in args]
        assert got_args == [args_json(f.args) for f in want]
        assert got_locs == [loc_text(f) for f in want]
        first = IdRows(v, ids, rank_all=rank_all).first(50)
        assert [args_json(rows[i]) for i in first] == got_args[:50]


def test_locations_a_store_cannot_read_out_of_the_args_are_given() -> None:
    """Strings are read out of the args by the store's JSON functions, which end a string
    at a NUL and know no ``Infinity``: such locations come as texts, one a row."""
    plain = Values()
    assert next(IdRows(plain, plain.encode_rows([("a", 1), ("b", 3)], 2), 0).chunks())[1] is None
    for odd in ("nul\x00x", float("inf")):
        v = Values()
        ids = v.encode_rows([("a", 1), (odd, 2), ("b", 3)], 2)
        args, locs = next(IdRows(v, ids, 0).chunks())
        assert locs is not None
        assert dict(zip(args, locs, strict=True))[args_json((odd, 2))] == loc_text(
            Fact("r", (odd, 2), 0))


def test_decoded_lists_are_the_engine_values() -> None:
    """``pipeline/decode.py`` builds each list from its tail's tuple: the same values as
    ``Values.decode_rows``, shared suffixes, nested lists and repeats included."""
    rng = random.Random(5)
    pick = ["a", "b", 1, 2.5, ("q", "a")]
    vals = ODD + [tuple(rng.choice(pick) for _ in range(rng.randint(0, 9))) for _ in range(500)]
    v = Values()
    ids = np.array([v.encode(x) for x in vals], dtype=np.int64).reshape(-1, 1)
    rows = np.hstack([ids, ids[::-1]])
    assert decode_rows(v, rows) == v.decode_rows(rows) == list(zip(vals, vals[::-1], strict=True))


@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 4)), unique_by=lambda t: t[0],
                max_size=60),
       st.integers(-1, 70))
def test_a_batchs_derivations_are_the_least_changed_facts_by_rank_then_gid(
        facts: list[tuple[int, int]], limit: int) -> None:
    """``bulk._least``, a partition of the ranks, keeps what sorting them all and taking the
    first ``limit`` keeps, in that order (ties of rank broken by gid)."""
    from netrules.pipeline.bulk import _least

    facts.sort()
    gids = np.array([g for g, _ in facts], dtype=np.int64)
    rank = np.array([r for _, r in facts], dtype=np.int64)
    want = [g for r, g in sorted((r, g) for g, r in facts)][:max(limit, 0)]
    assert _least(gids, rank, limit).tolist() == want


def test_args_texts_are_args_json_in_the_rows_order() -> None:
    from netrules.pipeline.bulk_rows import args_texts

    rows = _rows(random.Random(11), 300) + [(x, x) for x in ODD]
    rows = [r for r in rows if len(r) == 4] + [(*r, 0, 0) for r in rows if len(r) == 2]
    v = Values()
    ids = v.encode_rows(rows, 4)
    assert args_texts(v, ids).to_pylist() == [args_json(r) for r in rows]
    assert args_texts(v, ids[:0]).to_pylist() == []
    # values the dictionary takes after a first rendering are rendered too (the plain
    # values' texts are cached per dictionary and grow with it)
    more = [(f"new{i}", ("é", f"x{i}"), 1.5 + i, "é") for i in range(5)]
    ids = v.encode_rows(rows + more, 4)
    assert args_texts(v, ids).to_pylist() == [args_json(r) for r in rows + more]


def _per_fact_derivations(delta, plan, limit: int) -> tuple[list, set]:
    """What the store wrote when the pipeline handed it Facts (``bulk.derivations`` before
    it rendered texts and expanded bodies as arrays): the same choice of facts and supports,
    expanded and encoded one fact at a time."""
    from netrules.engine.columnar.sets import distinct
    from netrules.engine.columnar.supports import split_gid
    from netrules.pipeline.bulk import _least
    from netrules.store.base import _body_json

    prog = delta.prog
    visible = {prog.codes[r] for r in plan.visible if r in prog.codes}
    aux = {prog.codes[r] for r in plan.aux if r in prog.codes}
    changed = prog.supported_changes()
    changed = changed[np.isin(split_gid(changed)[0], list(visible))]
    changed = changed[prog.alive_gids(changed)]
    drop = []  # (a removed fact's derivations go with its view row, in the store)
    changed = _least(changed, prog.rank_of(changed), limit)
    sids = prog.supports.first_of(changed)
    changed, sids = changed[sids >= 0], sids[sids >= 0]
    bodies = [row[row >= 0] for row in prog.supports.bodies(sids)]
    for _ in range(8):  # each auxiliary fact replaced by its own kept support's body
        flat = np.concatenate(bodies) if bodies else np.empty(0, np.int64)
        is_aux = np.isin(flat >> np.int64(34), list(aux))
        if not is_aux.any():
            break
        sub = {}
        for g in distinct(flat[is_aux]).tolist():
            s = prog.supports.first_of(np.array([g]))[0]
            body = prog.supports.bodies(np.array([s]))[0] if s >= 0 else np.array([g])
            sub[g] = body[body >= 0].tolist()
        bodies = [np.array([x for g in row.tolist() for x in sub.get(g, (g,))], np.int64)
                  for row in bodies]
    need = distinct(np.concatenate([changed, *bodies])) if len(changed) else changed
    fact = _decode_gids(prog, plan, need)
    labels = [r.rule.label or str(r.rule.head) for r in prog.rule_list]
    added = []
    for g, s, body in zip(changed.tolist(), sids.tolist(), bodies, strict=True):
        head = fact[g]
        drop.append(head)
        added.append((head.relation, args_json(head.args), labels[int(prog.supports.rule[s])],
                      _body_json([fact[b] for b in dict.fromkeys(body.tolist())])))
    return added, {(f.relation, args_json(f.args)) for f in drop}


def _decode_gids(prog, plan, gids: np.ndarray) -> dict:
    """Each gid's Fact, decoded one relation at a time."""
    from netrules.engine.columnar.sets import distinct
    from netrules.engine.columnar.supports import split_gid
    from netrules.pipeline.bulk import _facts

    out: dict[int, Fact] = {}
    code, rows = split_gid(gids)
    for c in distinct(code).tolist():
        m = code == c
        rel = prog.names[c]
        facts = _facts(prog, plan, rel, prog.rels[rel].cols[rows[m]])
        out.update(zip(gids[m].tolist(), facts, strict=True))
    return out


def test_derivation_texts_are_what_the_per_fact_store_wrote() -> None:
    """``bulk.derivations`` renders each fact once from its ids; the rows it hands the store
    are the per-fact encoding's, byte for byte: localised bodies (``linkD`` replaced by its
    own body, one of two atoms too), path lists, quoted names, a relation located at its
    second argument, a body reading one fact twice (written once), and a ``limit`` that cuts
    the batch."""
    from netrules import programs
    from netrules.engine.strategies import get
    from netrules.pipeline import bulk
    from netrules.plan import plan_program

    names = ["a", 'q"u', "Cumaná", "d", "e"]
    links = [Fact("link", (s, d, 1 + (i % 3)), 0)
             for i, (s, d) in enumerate((s, d) for s in names for d in names if s != d)
             if i % 3 != 1]
    from netrules.lang.parse import parse_program

    col = get("columnar")
    located_second = ("materialize(link, infinity, infinity, keys(1,2)).\n"
                      "r1 reach(D,@S) :- link(@S,D,C).\n"
                      "r2 reach(D,@S) :- link(@S,Z,C), reach(D,@Z).\n")
    two_atom_aux = ("materialize(link, infinity, infinity, keys(1,2)).\n"
                    "materialize(tag, infinity, infinity, keys(1)).\n"
                    "t1 two(@S,D) :- link(@S,Z,C1), tag(@S,K), link(@Z,D,C2).\n")
    tags = [("+", Fact("tag", (n, i), 0)) for i, n in enumerate(names)]
    one_fact_twice = ("materialize(link, infinity, infinity, keys(1,2)).\n"
                      "s1 twice(@S,D) :- link(@S,D,C), link(@S,D,C2), C == C2.\n")
    for program in ("reachability", "path_vector", located_second, two_atom_aux,
                    one_fact_twice):
        plan = plan_program(parse_program(program) if "\n" in program
                            else programs.load(program))
        state = col.materialize(plan, [])
        rng = random.Random(program)
        up = set()
        for step in range(8):
            batch = ([("+", f) for f in links] + tags * ("tag" in program) if step == 0 else
                     [("-" if f in up and rng.random() < 0.5 else "+", f)
                      for f in rng.sample(links, 4)])
            for sign, f in batch:
                (up.add if sign == "+" else up.discard)(f)
            delta = col.apply(state, batch)
            for limit in (20_000, 3):
                texts, _ = bulk.derivations(delta, plan, limit)
                added, removed = _per_fact_derivations(delta, plan, limit)
                assert texts.added == added
                assert set(texts.removed) == removed and len(texts.removed) == len(removed)
                assert texts.relations >= {r for r, *_ in texts.added}
            assert step or len(texts.added) == 3  # the limit cut the load
