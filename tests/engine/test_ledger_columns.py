"""The columnar engine's ledger (``ColumnLedger``): its array path for plain batches against
``BaseLedger`` itself, batch by batch, through copies, restores and pickles."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.engine.columnar.base_ids import BaseIds
from netrules.engine.engine import Engine
from netrules.engine.ledger import BaseLedger
from netrules.engine.ledger_columns import ColumnLedger
from netrules.errors import EngineError
from netrules.facts import Fact
from netrules.plan import plan_program

REACH = plan_program(programs.load("reachability"))


def link(a: str, b: str, c: int = 1) -> Fact:
    return Fact("link", (a, b, c))


def _apply(led: ColumnLedger, batch: list[tuple]) -> tuple[set[Fact], set[Fact]]:
    """A batch as the columnar strategy applies it: the array path when every update is
    plain, numbering new facts first; the ledger's own path otherwise."""
    if any(len(u) > 2 for u in batch):
        return led.apply(batch)
    got = led.known(batch)
    if got is None:
        for _, f in batch:
            led.number(f)
        got = led.known(batch)
    assert got is not None
    came, went = led.plain(*got)
    facts = led.numbers.facts
    assert len(set(came.tolist())) == len(came) and len(set(went.tolist())) == len(went)
    return {facts[i] for i in came.tolist()}, {facts[i] for i in went.tolist()}


def _restored(led: BaseLedger, source: BaseLedger) -> BaseLedger:
    led.restore(json.loads(source.snapshot_json()))
    return led


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_array_path_writes_what_the_ledger_writes(data) -> None:
    """Random batches of plain and timed updates over keyed and unkeyed links (duplicates,
    replacements under a key, deletions of what was never inserted), with copies, JSON
    restores and pickles between them: after every batch the same facts appeared and
    vanished, and the same registers, stamps, pending deletions and snapshot text."""
    plain = st.tuples(st.sampled_from("+-"), st.builds(
        link, st.sampled_from("abc"), st.sampled_from("bcd"), st.integers(0, 1)))
    timed = st.tuples(st.sampled_from("+-"), plain.map(lambda u: u[1]),
                      st.integers(0, 3).map(float), st.integers(0, 2))
    batch = st.one_of(st.lists(plain, max_size=8), st.lists(st.one_of(plain, timed),
                                                            max_size=6))
    keys = data.draw(st.sampled_from([{}, {"link": (0, 1)}]))
    col, ref = ColumnLedger(keys), BaseLedger(keys)
    for b in data.draw(st.lists(batch, max_size=8)):
        assert _apply(col, b) == ref.apply(b)
        assert col.pending_count() == len(ref.pending_deletions())  # before any fold
        assert (col.clock, col.arrivals, col.last) == (ref.clock, ref.arrivals, ref.last)
        how = data.draw(st.sampled_from(["keep", "keep", "copy", "restore", "pickle"]))
        if how == "copy":
            col = col.copy()
        elif how == "restore":  # (a restored write's fact order is a ``_Tie``: both)
            col, ref = _restored(ColumnLedger(keys), col), _restored(BaseLedger(keys), ref)
        elif how == "pickle" and not keys:  # (key getters are closures)
            col = pickle.loads(pickle.dumps(col))
        if data.draw(st.booleans()):  # read the registers now, or leave them pending
            assert col.regs == ref.regs
            assert col.pending_deletions() == ref.pending_deletions()
            assert col.snapshot_json() == ref.snapshot_json()
    assert col.regs == ref.regs and col.present() == ref.present()
    assert col.pending_deletions() == ref.pending_deletions()


def test_a_copy_shares_the_numbering_and_not_the_registers() -> None:
    """A copy (an engine's rollback point) keeps the fact numbers an engine's id table was
    built for, and what either applies afterwards leaves the other as it was."""
    led = ColumnLedger()
    _apply(led, [("+", link("a", "b")), ("+", link("b", "c"))])
    saved = led.copy()
    assert saved.numbers is led.numbers
    assert _apply(led, [("-", link("a", "b"))]) == (set(), {link("a", "b")})
    assert saved.present() == {link("a", "b"), link("b", "c")}
    assert _apply(saved, [("-", link("b", "c"))]) == (set(), {link("b", "c")})
    assert led.present() == {link("b", "c")} and saved.present() == {link("a", "b")}


def test_only_plain_updates_of_numbered_facts_take_the_array_path() -> None:
    led = ColumnLedger()
    assert led.known([("+", link("a", "b"))]) is None  # not numbered yet
    led.number(link("a", "b"))
    assert led.known([("+", link("a", "b"))]) is not None
    assert led.known([("+", link("a", "b"), 1.0, 0)]) is None  # timed
    assert led.known([("up", link("a", "b"))]) is None  # a sign the check must name
    assert led.known([(None, link("a", "b"))]) is None


def test_a_bad_update_among_known_facts_is_named_and_changes_nothing() -> None:
    """A batch of facts the array path knows, one update with a bad sign: the batch check
    names that update, and the links and views stay as they were."""
    eng = Engine(REACH, "columnar")
    eng.apply([("+", link("a", "b")), ("+", link("b", "c"))])
    views = eng.views()
    with pytest.raises(EngineError, match="update 1: sign must be"):
        eng.apply([("-", link("a", "b")), ("x", link("b", "c"))])
    assert eng.state.ledger.present() == {link("a", "b"), link("b", "c")}
    assert eng.views() == views
    # and a timed batch of known facts still goes the ledger's own way
    eng.apply([("-", link("a", "b"), 5.0, 1)])
    assert eng.state.ledger.present() == {link("b", "c")}


@settings(max_examples=40, deadline=None)
@given(stream=st.lists(st.tuples(st.sampled_from("+-"), st.sampled_from("abc"),
                                 st.sampled_from("abc")), max_size=25),
       data=st.data())
def test_the_columnar_engine_on_plain_streams_is_the_per_fact_engine(stream, data) -> None:
    """Plain batches cut anywhere, duplicates and deletions of absent links included: the
    columnar engine (array path) ends with the links and views per-fact PSN ends with."""
    ups = [(s, link(a, b)) for s, a, b in stream if a != b]
    cuts = sorted(data.draw(st.lists(st.integers(0, len(ups)), max_size=4)))
    col, per = Engine(REACH, "columnar"), Engine(REACH, "psn")
    at = 0
    for cut in [*cuts, len(ups)]:
        for eng in (col, per):
            eng.apply(ups[at:cut])
        at = cut
        assert col.state.ledger.present() == per.state.ledger.present()
        assert col.views() == per.views()
        assert (col.state.ledger.pending_count()
                == len(per.state.ledger.pending_deletions()))


def test_fact_numbers_pickled_flat_load_by_relation() -> None:
    """A ledger pickled when its facts were numbered by a flat ``(relation, args)`` key (a
    snapshot written before the numbers were kept by relation) loads with every number, and
    goes on numbering from there."""
    led = ColumnLedger()  # (no keys: key getters are closures, not pickled)
    _apply(led, [("+", link("a", "b")), ("+", link("b", "c")), ("+", Fact("other", (1,)))])
    nums = led.numbers
    flat = {(rel, args): n for rel, by in nums.of.items() for args, n in by.items()}
    nums.of = flat  # as an older snapshot holds it
    back = pickle.loads(pickle.dumps(led))
    assert back.numbers.get(link("b", "c")) == flat[("link", ("b", "c", 1))]
    assert back.numbers.get(Fact("other", (1,))) == flat[("other", (1,))]
    assert back.numbers.get(link("c", "d")) is None
    assert back.numbers.add(link("c", "d"), ("link", ("c", "d", 1))) == len(flat)
    assert back.known([("-", link("a", "b")), ("+", link("c", "d"))]) is not None


def test_base_rows_are_kept_by_fact_number_and_found_again_when_lost() -> None:
    """The columnar strategy keeps each base fact's row in its relation (``BaseIds.row``),
    so a batch's rows are a gather: the rows kept are the relation's own; a table pickled
    before it kept rows, or whose relation is not the program's any more, finds them by
    their columns again; the views stay the per-fact engine's throughout."""
    col, per = Engine(REACH, "columnar"), Engine(REACH, "psn")
    first = [("+", link("a", "b")), ("+", link("b", "c")), ("+", link("c", "a"))]
    for eng in (col, per):
        eng.apply(first)
    ids = col.state.extra["base_ids"]
    prog = col.state.extra["program"]
    rel = prog.rels["link"]
    for _, f in first:
        n = col.state.ledger.numbers.get(f)
        assert ids.row[n] == rel.find(prog.encode([f.args], 3))[0]
    steps = [[("-", link("b", "c"))], [("+", link("b", "c")), ("-", link("c", "a"))]]
    for i, batch in enumerate(steps):
        if i == 0:  # as a snapshot from before rows were kept holds the table
            state = {k: v for k, v in ids.__dict__.items() if k not in ("row", "_rels")}
            back = BaseIds.__new__(BaseIds)
            back.__setstate__(state)
            assert (back.row[: back.n] == -1).all()
            col.state.extra["base_ids"] = back
        else:  # a relation the table's rows are not of: read again
            back._rels[prog.codes["link"]] = object()
        for eng in (col, per):
            eng.apply(batch)
        assert col.views() == per.views()
    assert col.views()["reachable"]


def test_a_ledger_pickled_before_it_counted_pending_deletions_counts_them() -> None:
    """A snapshot from before the kernel kept the count of pending deletions loads, mirrors
    its registers again, and counts what ``BaseLedger`` counts."""
    led, ref = ColumnLedger(), BaseLedger()
    first = [("-", link("a", "b")), ("+", link("b", "c")), ("-", link("c", "d"))]
    _apply(led, first)
    ref.apply(first)
    state = led.__getstate__()
    del state["_npend"]
    back = ColumnLedger.__new__(ColumnLedger)
    back.__setstate__(pickle.loads(pickle.dumps(state)))
    batch = [("+", link("a", "b")), ("-", link("b", "c"))]
    _apply(back, batch)
    ref.apply(batch)
    assert back.pending_count() == ref.pending_count() == 1
