"""The compiled closure of linear strata (``columnar/closure.py``): which strata it takes, and,
on random graphs and batches, views equal to the oracle's and to the same engine run without
the closure, with every kept support a real, well-founded derivation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules.engine.columnar import kernels
from netrules.engine.columnar.psn import ColumnarProgram
from netrules.engine.columnar.supports import split_gid
from netrules.engine.strategies import columnar
from netrules.facts import Fact
from netrules.lang import parse_program
from netrules.plan import plan_program
from tests.meaning import evaluate_program

LINEAR = {
    "forward": "p(X,Y) :- e(X,Y).\np(X,Y) :- e(X,Z), p(Z,Y).",
    "backward": "p(X,Y) :- e(X,Y).\np(X,Y) :- p(X,Z), e(Z,Y).",
    "both": "p(X,Y) :- e(X,Y).\np(X,Y) :- e(X,Z), p(Z,Y).\np(X,Y) :- p(X,Z), f(Z,Y).",
    "unary": "r(X) :- f(X,X).\nr(Y) :- r(X), e(X,Y).",
    "two keys": "q(X,Y) :- e(X,Y).\nq(X,Y) :- f(X,Y), q(Y,X).",
    "swapped": "p(Y,X) :- e(X,Y).\np(Y,X) :- e(X,Z), p(Y,Z).",
    "wide below": "p(X,Y) :- g(X,Y,W).\np(X,Y) :- g(X,Z,_), p(Z,Y).",
}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-5, 40), st.integers(-5, 40)), max_size=12),
       st.lists(st.tuples(st.integers(-5, 40), st.integers(-5, 40)), max_size=12),
       st.sampled_from([[0], [1], [0, 1]]))
def test_head_codes_are_the_sorted_values_index(bval: list, scols: list, used: list) -> None:
    """``kernels.head_codes`` against the sort it replaced: the distinct values of the used
    slots and the seeds, and each entry's index among them (0 in an unused slot)."""
    b = np.array(bval, dtype=np.int64).reshape(-1, 2)
    s = np.array(scols, dtype=np.int64).reshape(-1, 2)
    universe, bcode, scode = kernels.head_codes(b, np.array(used, np.int64), s,
                                                np.int64(1 << 20))
    want = np.unique(np.concatenate([b[:, used].ravel(), s.ravel()]))
    assert universe.tolist() == want.tolist()
    if not len(want):
        return
    expect_b = np.searchsorted(want, b)
    expect_b[:, [p for p in range(2) if p not in used]] = 0
    assert bcode.tolist() == expect_b.tolist()
    assert scode.tolist() == np.searchsorted(want, s).tolist()
    # past the span it gives nothing, and the caller sorts
    if want[-1] > want[0]:
        assert not len(kernels.head_codes(b, np.array(used, np.int64), s, np.int64(1))[0])


def _program(text: str) -> ColumnarProgram:
    return ColumnarProgram(plan_program(parse_program(text)))


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_strata_take_the_closure(name: str) -> None:
    prog = _program(LINEAR[name])
    assert len(prog.closures) == 1
    (lc,) = prog.closures.values()
    assert lc.rederives == {lin.rule_id for lin in lc.rules}  # solved from the head too


@pytest.mark.parametrize("text", [
    "p(X,Y) :- e(X,Y).\np(X,Y) :- p(X,Z), p(Z,Y).",  # non-linear
    "p(X,Y) :- e(X,Y).\np(X,Y) :- e(X,Z), p(Z,Y), Z != Y.",  # a condition
    "p(X,Y) :- e(X,Y).\np(X,Y) :- e(X,1), p(1,Y).",  # constants
    "p(X,Y) :- e(X,Y).\np(X,Y) :- e(Z,Z), p(Z,Y), e(X,Z).",  # three atoms
    "p(X,Y) :- e(X,Y).\np(X,Y) :- e(Z,Z), p(X,Y).",  # a repeated variable
    "p(X,Y,C) :- g(X,Y,C).\np(X,Y,C) :- g(X,Z,C), p(Z,Y,C).",  # arity 3
    "p(X,Y) :- e(X,Y).\np(X,Y) :- e(X,Z), q(Z,Y).\nq(X,Y) :- p(X,Y).",  # two relations
])
def test_other_strata_keep_the_rounds(text: str) -> None:
    assert not _program(text).closures


def _check_supports(prog: ColumnarProgram) -> None:
    """Every alive fact of a closed stratum has 1..K distinct alive supports, each a
    derivation by its rule of alive body facts, the stratum's body fact of lower rank than
    the head."""
    sup = prog.supports
    assert sup.count == np.count_nonzero(sup.alive[: sup.n])
    for srels, lc in prog.closures.items():
        rel = prog.rels[lc.name]
        code = prog.codes[lc.name]
        alive = rel.alive_rows()
        assert rel.count == len(alive)  # rounds skip a rule reading an empty relation
        sids = np.flatnonzero(sup.alive[: sup.n])
        head_code, head_row = split_gid(sup.heads(sids))
        mine = head_code == code
        sids, head_row = sids[mine], head_row[mine]
        count = np.bincount(head_row, minlength=rel.n)
        assert (count[alive] >= 1).all() and (count[alive] <= prog.k).all()
        assert not rel.alive[head_row].__invert__().any(), "a support of a dead fact"
        assert (rel.nsup[alive] == count[alive]).all()
        kinds = np.column_stack([head_row, sup.rule[sids], sup.bodies(sids)])
        assert len(np.unique(kinds, axis=0)) == len(kinds), "a support kept twice"
        for s, h in zip(sids.tolist(), head_row.tolist(), strict=True):
            r = prog.rule_list[int(sup.rule[s])].rule
            body = [split_gid(np.int64(g)) for g in sup.bodies(np.array([s]))[0] if g >= 0]
            binding: dict[str, int] = {}
            for atom, (bc, br) in zip(r.atoms(), body, strict=True):
                brel = prog.rels[prog.names[int(bc)]]
                assert brel.alive[br], f"{r}: a dead body fact"
                if atom.relation in srels:
                    assert rel.rank[br] < rel.rank[h], f"{r}: not well-founded"
                for t, v in zip(atom.args, brel.cols[br].tolist(), strict=True):
                    if t.name != "_":
                        assert binding.setdefault(t.name, v) == v, f"{r}: not a join"
            assert [binding[t.name] for t in r.head.args] == rel.cols[h].tolist()


def _facts(edges: list[tuple[str, int, int]]) -> list[Fact]:
    out = []
    for rel, a, b in edges:
        out.append(Fact(rel, (a, b, a + b) if rel == "g" else (a, b), None))
    return out


edge = st.tuples(st.sampled_from(["e", "f", "g"]), st.integers(0, 3), st.integers(0, 3))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(LINEAR)), st.lists(edge, min_size=8, max_size=30, unique=True),
       st.lists(st.lists(st.tuples(st.booleans(), edge, st.integers(0, 99)), max_size=6),
                min_size=1, max_size=5))
def test_closure_matches_the_oracle_and_the_rounds(name: str, initial: list, batches: list
                                                   ) -> None:
    """Four runs of the same stream: the closure with a dense table, new heads' rows read
    by value codes (``kernels.row_table``), and every stratum maintained (never derived
    afresh, so deletions rederive, by a prefilled table), with a hash table (rows probed
    in R's map), with a hash table that turns dense (its wide rounds vectorised, its
    rederivations probing the map, heads' values coded by a sort), and the rounds; each
    equal to the oracle after every batch, the closures' supports checked."""
    plan = plan_program(parse_program(LINEAR[name]))
    fast = columnar.materialize(plan, _facts(initial))
    fast.extra["program"].recompute = 2.0  # more than everything: always maintained
    for lc in fast.extra["program"].closures.values():
        lc.rows_share = 1 << 30  # rows by value codes whatever the seeds
    hashed = columnar.materialize(plan, _facts(initial))
    for lc in hashed.extra["program"].closures.values():
        lc.dense = lc.dense_max = 0  # heads told apart by the hash table only
    switched = columnar.materialize(plan, _facts(initial))
    for lc in switched.extra["program"].closures.values():
        lc.dense, lc.fill = 0, 2  # the hash table first, the dense one once it fills
        lc.max_work = 3  # and wide rounds handed back to the vectorised ones
        lc.prefill = False  # and rederivations probing the map and the sorted suspects
        lc.codes_span = 0  # and heads' values coded by a sort, not a table
    slow = columnar.materialize(plan, _facts(initial))
    slow.extra["program"].closures = {}  # the per-round path, as before the closure
    present = set(_facts(initial))
    for batch in batches:
        ups = []
        for up, e, pick in batch:
            if up or not present:
                f = _facts([e])[0]
            else:  # a deletion takes a present fact: the case that makes suspects
                f = sorted(present, key=Fact.key)[pick % len(present)]
            sign = "+" if up or not present else "-"
            ups.append((sign, f))
            (present.add if sign == "+" else present.discard)(f)
        for state in (fast, hashed, switched, slow):
            columnar.apply(state, ups)
        want = evaluate_program(plan.program, sorted(present, key=Fact.key))
        for rel in plan.derived:
            expect = {f.args for f in want.get(rel, [])}
            for state in (fast, hashed, switched, slow):
                assert {f.args for f in state.views().get(rel, [])} == expect
        _check_supports(fast.extra["program"])
        _check_supports(hashed.extra["program"])
        _check_supports(switched.extra["program"])


wide_edge = st.tuples(st.sampled_from(["e", "f", "g"]), st.integers(0, 6), st.integers(0, 6))


def _stream(initial: list, batches: list) -> tuple[list[Fact], list[list[tuple[str, Fact]]]]:
    """Deletions of present facts (several a batch: the suspects a rederivation revives)
    and insertions, as (start facts, batches)."""
    present = set(_facts(initial))
    out = []
    for batch in batches:
        ups = []
        for up, e, pick in batch:
            if up or not present:
                f, sign = _facts([e])[0], "+"
            else:
                f, sign = sorted(present, key=Fact.key)[pick % len(present)], "-"
            ups.append((sign, f))
            (present.add if sign == "+" else present.discard)(f)
        out.append(ups)
    return _facts(initial), out


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(sorted(LINEAR)), st.lists(wide_edge, min_size=15, max_size=45, unique=True),
       st.lists(st.lists(st.tuples(st.integers(0, 3).map(lambda x: x == 0), wide_edge,
                                   st.integers(0, 99)), min_size=1, max_size=8),
                min_size=1, max_size=4))
def test_prefilled_rederivation_matches_the_oracle(name: str, initial: list, batches: list
                                                   ) -> None:
    """Rederivations by the prefilled table (closure.Prefill: every round in the kernel,
    heads told apart by a table of the suspects' codes), made for the suspects only or for
    every row (its first step then finds standing facts in it), against the same stream
    rederived by the map and the sorted suspects, and all against the oracle, supports
    checked; on graphs of seven nodes, where deletions mostly raise ranks and
    rederivations run long."""
    plan = plan_program(parse_program(LINEAR[name]))
    start, stream = _stream(initial, batches)
    every = columnar.materialize(plan, start)
    pre = columnar.materialize(plan, start)
    probed = columnar.materialize(plan, start)
    for state in (every, pre, probed):
        state.extra["program"].recompute = 2.0  # always maintained: deletions rederive
    for lc in every.extra["program"].closures.values():
        lc.every_share = 1 << 30
    for lc in pre.extra["program"].closures.values():
        lc.every_share = 0
    for lc in probed.extra["program"].closures.values():
        lc.prefill = False
    present = set(start)
    for ups in stream:
        for sign, f in ups:
            (present.add if sign == "+" else present.discard)(f)
        for state in (every, pre, probed):
            columnar.apply(state, ups)
        want = evaluate_program(plan.program, sorted(present, key=Fact.key))
        for rel in plan.derived:
            expect = {f.args for f in want.get(rel, [])}
            for state in (every, pre, probed):
                assert {f.args for f in state.views().get(rel, [])} == expect
        for state in (every, pre, probed):
            _check_supports(state.extra["program"])


def test_rederivations_take_the_prefilled_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The paths the test above is about are the ones taken: a link down on a two-way ring
    lengthens routes, whose facts rederive by the prefilled table (of the suspects, or of
    every row: ``every_share``), and the view is the oracle's."""
    from netrules.engine.columnar.closure import LinearClosure

    real = LinearClosure.prefilled
    plan = plan_program(parse_program(LINEAR["forward"]))
    ring = [("e", i, (i + d) % 7) for i in range(7) for d in (1, 6)]
    gone = _facts([("e", 0, 1)])[0]
    want = evaluate_program(plan.program, sorted(set(_facts(ring)) - {gone}, key=Fact.key))
    made: list[tuple[bool, bool]] = []

    def spy(self: LinearClosure, prog: ColumnarProgram, allowed: np.ndarray,  # noqa: ANN202
            every: bool = False):
        out = real(self, prog, allowed, every)
        made.append((every, out is not None and out.every == every))
        return out

    monkeypatch.setattr(LinearClosure, "prefilled", spy)
    for share, kind in ((0, False), (1 << 30, True)):
        made.clear()
        state = columnar.materialize(plan, _facts(ring))
        state.extra["program"].recompute = 2.0
        for lc in state.extra["program"].closures.values():
            lc.every_share = share
        columnar.apply(state, [("-", gone)])
        assert (kind, True) in made
        assert {f.args for f in state.views()["p"]} == {f.args for f in want["p"]}
        _check_supports(state.extra["program"])


def test_the_coding_of_every_row_kept_across_batches_is_made_afresh(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A table of every row codes every row's values once and keeps the coding while the
    relation has the same rows: each table made so (links going down on a ring, then a new
    node's links adding rows, then more going down) equals one made from nothing, at least
    one was made from a kept coding, and the views are the oracle's."""
    from netrules.engine.columnar import kernels
    from netrules.engine.columnar.closure import LinearClosure

    real = LinearClosure.prefilled
    kept: list[bool] = []
    rows: list[tuple[int, object]] = []  # (rows, their columns' array) at each table

    def spy(self: LinearClosure, prog: ColumnarProgram, allowed: np.ndarray,  # noqa: ANN202
            every: bool = False):
        before = self._every_codes
        out = real(self, prog, allowed, every)
        if every and out is not None:
            kept.append(before is not None and self._every_codes is before)
            rel = prog.rels[self.name]
            rows.append((rel.n, rel.cols))
            lo, code, nv, table, room = kernels.prefill_table(
                rel.cols, allowed.astype(np.int64), rel.alive, np.int64(self.dense_max),
                np.int64(rel.n))
            assert (out.lo, out.nv, out.room) == (lo, nv, room)
            assert np.array_equal(out.code_of, code) and np.array_equal(out.table, table)
        return out

    monkeypatch.setattr(LinearClosure, "prefilled", spy)
    plan = plan_program(parse_program(LINEAR["forward"]))
    ring = _facts([("e", i, (i + d) % 7) for i in range(7) for d in (1, 6)])
    state = columnar.materialize(plan, ring)
    state.extra["program"].recompute = 2.0  # maintained: deletions rederive
    for lc in state.extra["program"].closures.values():
        lc.every_share = 1 << 30  # by a table of every row
    present = set(ring)
    spoke = _facts([("e", 3, 9)])[0]  # new pairs: rows added, the arrays not regrown
    steps = [[("-", ring[0])], [("+", ring[0])], [("-", ring[4])],
             [("+", spoke), ("+", ring[4])], [("-", ring[0])],
             [("-", spoke), ("-", ring[7])], [("+", ring[0])]]
    for ups in steps:
        columnar.apply(state, ups)
        for sign, f in ups:
            (present.add if sign == "+" else present.discard)(f)
        want = evaluate_program(plan.program, sorted(present, key=Fact.key))
        assert {f.args for f in state.views()["p"]} == {f.args for f in want["p"]}
        _check_supports(state.extra["program"])
    assert any(kept) and not all(kept)
    # a coding made again because rows were added to the same arrays
    assert any(n0 != n1 and c0 is c1 for (n0, c0), (n1, c1) in zip(rows, rows[1:], strict=False))


#: copies of three relations into one: a fact keeps two of its three rank-1 supports, so
#: deleting those two leaves it to be rederived by a copy, from the body side or the head's
COPIES = {**LINEAR, "copies": "p(X,Y) :- e(X,Y).\np(X,Y) :- f(X,Y).\np(X,Y) :- g(X,Y,_).\n"
                              "p(X,Y) :- e(X,Z), p(Z,Y)."}


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(["copies", "copies", "forward", "wide below", "swapped"]),
       st.lists(wide_edge, min_size=15, max_size=45, unique=True),
       st.lists(st.lists(st.tuples(st.integers(0, 3).map(lambda x: x == 0), wide_edge,
                                   st.integers(0, 99)), min_size=1, max_size=8),
                min_size=1, max_size=4))
def test_a_copy_rule_rederived_from_its_body_matches_the_oracle(
        name: str, initial: list, batches: list) -> None:
    """A rule of one atom (``p(X,Y) :- e(X,Y)``) rederives its suspects from the body side
    when they outnumber its relation's facts four to one (``_from_body``); the same stream
    with that path always and never taken, both against the oracle, supports checked."""
    plan = plan_program(parse_program(COPIES[name]))
    start, stream = _stream(initial, batches)
    always, never = columnar.materialize(plan, start), columnar.materialize(plan, start)
    for state, pick in ((always, lambda r, n: len(r.atoms) == 1),
                        (never, lambda r, n: False)):
        prog = state.extra["program"]
        prog.recompute = 2.0  # maintained: deletions rederive
        prog._from_body = pick
    present = set(start)
    for ups in stream:
        for sign, f in ups:
            (present.add if sign == "+" else present.discard)(f)
        want = evaluate_program(plan.program, sorted(present, key=Fact.key))
        for state in (always, never):
            columnar.apply(state, ups)
            for rel in plan.derived:
                assert {f.args for f in state.views().get(rel, [])} == {
                    f.args for f in want.get(rel, [])}
            _check_supports(state.extra["program"])


def test_a_ring_cut_rederives_its_copy_rule_from_the_body() -> None:
    """The path the test above forces is the one a ring's cut takes on its own: one link
    down leaves far more suspects than there are links."""
    plan = plan_program(parse_program(LINEAR["forward"]))
    ring = _facts([("e", i, (i + 1) % 12) for i in range(12)])
    state = columnar.materialize(plan, ring)
    prog = state.extra["program"]
    prog.recompute = 2.0
    real, taken = prog._from_body, []
    prog._from_body = lambda r, n: taken.append(real(r, n)) or taken[-1]
    columnar.apply(state, [("-", ring[0])])
    assert True in taken
    want = evaluate_program(plan.program, ring[1:])
    assert {f.args for f in state.views()["p"]} == {f.args for f in want["p"]}
    _check_supports(prog)


def test_a_rule_reading_an_empty_relation_is_skipped_only_then() -> None:
    """A round skips a (rule, delta atom) whose other atom reads a relation with no fact
    (``_round``); with one fact it must join: a relation of one fact, then none, then one."""
    plan = plan_program(parse_program("q(X,Y) :- e(X,Y), f(Y,Y).\np(X,Y) :- e(X,Y).\n"
                                      "p(X,Y) :- e(X,Z), p(Z,Y), f(Y,Y)."))
    state = columnar.materialize(plan, _facts([("e", 0, 1), ("e", 1, 2), ("f", 2, 2)]))
    present = set(_facts([("e", 0, 1), ("e", 1, 2), ("f", 2, 2)]))
    for sign, e in [("+", ("e", 2, 3)), ("-", ("f", 2, 2)), ("+", ("e", 3, 1)),
                    ("+", ("f", 1, 1)), ("+", ("f", 3, 3)), ("-", ("f", 1, 1))]:
        f = _facts([e])[0]
        columnar.apply(state, [(sign, f)])
        (present.add if sign == "+" else present.discard)(f)
        want = evaluate_program(plan.program, sorted(present, key=Fact.key))
        for rel in plan.derived:
            assert ({f.args for f in state.views().get(rel, [])}
                    == {f.args for f in want.get(rel, [])}), (sign, e, rel)


def test_derived_afresh_past_a_tenth_where_the_closure_serves(monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """``RECOMPUTE``: a stratum the compiled closure derives is derived afresh once a batch
    takes more than a tenth of its inputs (measured: cheaper there, docs/engine.md), any
    other only past half; either way the view is the oracle's."""
    afresh = []
    real = ColumnarProgram._recompute

    def spy(self: ColumnarProgram, srels, rules, below, ch) -> None:  # noqa: ANN001
        afresh.append(srels)
        real(self, srels, rules, below, ch)

    monkeypatch.setattr(ColumnarProgram, "_recompute", spy)
    plan = plan_program(parse_program(LINEAR["forward"]))
    ring = _facts([("e", i, (i + d) % 10) for i in range(10) for d in (1, 9)])
    for fits in (True, False):
        afresh.clear()
        state = columnar.materialize(plan, ring)
        if not fits:
            for lc in state.extra["program"].closures.values():
                lc.max_rows = 0
        gone = ring[:4]  # a fifth of the links
        columnar.apply(state, [("-", f) for f in gone])
        assert bool(afresh) == fits
        # counted, for bench/overdeletion.py's rows (a stratum derived afresh has no suspects)
        assert state.extra["program"].stats.get("afresh", 0) == len(afresh)
        want = evaluate_program(plan.program, sorted(set(ring) - set(gone), key=Fact.key))
        assert {f.args for f in state.views()["p"]} == {f.args for f in want["p"]}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(LINEAR)), st.lists(wide_edge, min_size=15, max_size=45, unique=True),
       st.lists(st.lists(st.tuples(st.integers(0, 3).map(lambda x: x == 0), wide_edge,
                                   st.integers(0, 99)), min_size=1, max_size=8),
                min_size=1, max_size=4))
def test_kills_through_offsets_match_the_oracle(name: str, initial: list, batches: list
                                                ) -> None:
    """A kill that reads the supports' index through offsets by key finds what the searches
    find: the same stream with every run's offsets kept (``Buckets.values_of``, on a
    backbone its large runs), with offsets made for each kill (``psn._Using``, once a kill
    asks an index often), with searches alone, with both kinds of run (large runs as
    offsets), each with the steps after the first in one compiled call
    (``kernels.kill_reach``), and stepped in Python (an index of more runs than that call
    takes), each against the oracle."""
    from netrules.engine.columnar import psn, relation
    from netrules.engine.columnar.relation import Buckets

    plan = plan_program(parse_program(LINEAR[name]))
    start, stream = _stream(initial, batches)
    modes = {"kept": (-1, 0, 4), "per kill": (1 << 40, 1 << 40, 4), "searched": (1 << 40, 0, 4),
             "mixed": (12, 0, 4), "stepped": (-1, 0, 0), "stepped, searched": (1 << 40, 0, 0)}
    states = {}
    for mode in modes:
        states[mode] = columnar.materialize(plan, start)
        states[mode].extra["program"].recompute = 2.0  # always maintained: deletions kill
    present = set(start)
    real = Buckets.dense_above, psn._Using.share, relation.KILL_RUNS
    try:
        for ups in stream:
            for sign, f in ups:
                (present.add if sign == "+" else present.discard)(f)
            for mode, state in states.items():
                Buckets.dense_above, psn._Using.share, relation.KILL_RUNS = modes[mode]
                columnar.apply(state, ups)
            want = evaluate_program(plan.program, sorted(present, key=Fact.key))
            for rel in plan.derived:
                expect = {f.args for f in want.get(rel, [])}
                for state in states.values():
                    assert {f.args for f in state.views().get(rel, [])} == expect
            for state in states.values():
                _check_supports(state.extra["program"])
    finally:
        Buckets.dense_above, psn._Using.share, relation.KILL_RUNS = real


def test_a_stratum_derived_afresh_joins_a_relation_of_one_fact() -> None:
    """The first round of a stratum derived afresh skips only rules joining an empty
    relation: here most inputs go (so the stratum is derived afresh) and what remains
    joins a relation left with one fact."""
    plan = plan_program(parse_program("q(X,Y) :- e(X,Y), f(Y,Y)."))
    start = _facts([("e", 0, 1), ("e", 1, 2), ("e", 2, 3), ("f", 1, 1), ("f", 3, 3)])
    state = columnar.materialize(plan, start)
    gone = _facts([("e", 0, 1), ("e", 1, 2), ("f", 1, 1)])
    columnar.apply(state, [("-", f) for f in gone])
    assert {f.args for f in state.views().get("q", [])} == {(2, 3)}


@pytest.mark.parametrize(("rule", "want"), [
    ("p(X,Y) :- e(X,Y).", [0, 1]),
    ("p(Y,X) :- e(X,Y).", [1, 0]),
    ("p(X,Y) :- g(X,Y,_).", [0, 1]),
    ("p(X,Y) :- g(X,Z,Y).", [0, 2]),
    ("p(X,X) :- e(X,Y).", [0, 0]),
    ("p(X,Y) :- e(X,X), f(X,Y).", None),  # two atoms
    ("p(X) :- e(X,X).", None),  # a repeated variable filters
    ("p(X,1) :- e(X,Y).", None),  # a constant in the head
    ("p(X,Y) :- e(X,1), f(X,Y).", None),
    ("p(X,Y) :- e(X,Y), X != Y.", None),  # a condition
])
def test_copy_rules_are_a_gather_of_body_columns(rule: str, want: list | None) -> None:
    """``psn._copy_columns``: a rule whose body is one atom of distinct plain variables and
    whose head is some of them takes its derivations as a gather of the body's columns;
    any constant, repeated variable, second literal or condition leaves it to the join."""
    from netrules.engine.columnar.psn import _copy_columns

    (r,) = parse_program(rule).rules
    got = _copy_columns(r)
    assert (None if got is None else got.tolist()) == want
