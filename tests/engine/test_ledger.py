"""Base facts as state (issue 21): one last-writer-wins register per fact or key, so any
permutation and any duplication of a stamped event stream gives the same links and views."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from netrules import programs
from netrules.engine.engine import Engine
from netrules.engine.ledger import BaseLedger
from netrules.engine.reference import evaluate_program
from netrules.facts import Fact
from netrules.lang.parse import parse_program
from netrules.plan import plan_program

REACH = plan_program(programs.load("reachability"))  # link keys(1,2): (src, dst)
UNKEYED = plan_program(parse_program("r(@X,Y) :- l(@X,Y,C).\nr(@X,Z) :- l(@X,Y,C), r(@Y,Z)."))


def link(a: str, b: str, c: int = 1) -> Fact:
    return Fact("link", (a, b, c))


def test_counting_insertions_is_gone() -> None:
    led = BaseLedger()
    led.apply([("+", link("a", "b")), ("+", link("a", "b"))])
    assert led.apply([("-", link("a", "b"))]) == (set(), {link("a", "b")})
    assert led.present() == set()
    # up, down, down, up: up
    for s in "+--+":
        led.apply([(s, link("x", "y"))])
    assert led.present() == {link("x", "y")}
    assert led.pending_deletions() == {}


def test_keys_replace_and_a_deletion_empties_the_key() -> None:
    led = BaseLedger.for_plan(REACH)
    assert led.keys == {"link": (0, 1)}
    led.apply([("+", link("a", "b", 1), 1.0, 0)])
    assert led.apply([("+", link("a", "b", 7), 2.0, 0)]) == ({link("a", "b", 7)},
                                                                {link("a", "b", 1)})
    assert led.apply([("-", link("a", "b", 1), 3.0, 0)]) == (set(), {link("a", "b", 7)})
    # an older insertion arriving late loses, and is counted
    assert led.apply([("+", link("a", "b", 9), 2.5, 0)]) == (set(), set())
    assert led.last == {"superseded": 1}
    assert led.apply([("-", link("a", "b", 1), 3.0, 0)]) == (set(), set())
    assert led.last == {"duplicates": 1}


def test_pending_is_a_deletion_no_insertion_has_reached() -> None:
    led = BaseLedger()
    led.apply([("-", link("a", "b"), 5.0, 1, "c1")])
    assert led.pending_deletions() == {link("a", "b"): 1}
    led.apply([("+", link("a", "b"), 4.0, 9, "c1")])  # older: superseded, but cancels it
    assert led.pending_deletions() == {} and led.present() == set()


def test_preview_leaves_the_ledger_alone() -> None:
    led = BaseLedger()
    led.apply([("+", link("a", "b"))])
    snap = led.snapshot()
    assert led.preview([("-", link("a", "b")), ("+", link("b", "c"))]) == (
        {link("b", "c")}, {link("a", "b")})
    assert led.snapshot() == snap


# streams -----------------------------------------------------------------------------

NODES = ["a", "b", "c", "d"]
events = st.lists(st.tuples(
    st.sampled_from("+-"), st.sampled_from(NODES), st.sampled_from(NODES),
    st.integers(1, 3), st.integers(0, 20), st.sampled_from(["c1", "c2"])),
    max_size=30).map(lambda evs: [
        (s, link(a, b, c), float(t), i, src) for i, (s, a, b, c, t, src) in enumerate(evs)
        if a != b])


def _final(stream: list[tuple], plan=REACH) -> tuple[set[Fact], dict]:
    eng = Engine(plan, "psn")
    eng.apply(stream)
    return eng.state.ledger.present(), {r: set(v) for r, v in eng.views().items() if v}


@settings(max_examples=80, deadline=None)
@given(stream=events, data=st.data())
def test_any_permutation_and_duplication_gives_the_same_state(stream, data) -> None:
    want_links, want_views = _final(stream)
    dup = data.draw(st.lists(st.sampled_from(stream), max_size=10)) if stream else []
    shuffled = data.draw(st.permutations(stream + dup))
    cut = data.draw(st.integers(0, len(shuffled)))
    eng = Engine(REACH, data.draw(st.sampled_from(["psn", "dred", "auto", "counting"])))
    eng.apply(shuffled[:cut])
    eng.apply(shuffled[cut:])
    assert eng.state.ledger.present() == want_links
    assert {r: set(v) for r, v in eng.views().items() if v} == want_views
    # and the views are those of the final links
    got = evaluate_program(REACH, want_links)
    assert {r: set(v) for r, v in got.items() if v} == want_views


@settings(max_examples=60, deadline=None)
@given(stream=events, cut=st.integers(0, 30))
def test_snapshot_round_trips_through_json(stream, cut) -> None:
    """A restart (snapshot, JSON, restore) then the rest of the stream ends where an
    uninterrupted ledger does, tombstones and late old events included."""
    a = BaseLedger.for_plan(REACH)
    a.apply(stream)
    b = BaseLedger.for_plan(REACH)
    b.apply(stream[:cut])
    c = BaseLedger.for_plan(REACH)
    c.restore(json.loads(json.dumps(b.snapshot())))
    assert c.snapshot() == b.snapshot()
    c.apply(stream[cut:])
    assert c.present() == a.present() and c.pending_deletions() == a.pending_deletions()


@settings(max_examples=60, deadline=None)
@given(stream=events, cuts=st.lists(st.integers(0, 30), max_size=4))
def test_snapshot_text_kept_per_register_is_the_snapshot_each_batch(stream, cuts) -> None:
    """``snapshot_json`` joins each register's text kept from its write: after every batch
    it is the JSON of a snapshot made afresh (no register's text left from an older write),
    and it restores the same ledger."""
    led = BaseLedger.for_plan(REACH)
    fresh = BaseLedger.for_plan(REACH)
    at = 0
    for cut in [*sorted(cuts), len(stream)]:
        led.apply(stream[at:cut])
        fresh.apply(stream[at:cut])
        at = max(at, cut)
        text = led.snapshot_json()
        made = fresh.__class__.for_plan(REACH)
        made.restore(fresh.snapshot())
        assert text == json.dumps(made.snapshot(), separators=(",", ":"))
        back = BaseLedger.for_plan(REACH)
        back.restore(json.loads(text))
        assert back.present() == led.present()
        assert back.pending_deletions() == led.pending_deletions()


def _scanned_pending(led: BaseLedger) -> dict[Fact, int]:
    """The definition, read off every register (what the ledger no longer scans per batch)."""
    return {w.fact: 1 for w in led.regs.values() if w.sign == "-" and not w.inserted}


@settings(max_examples=80, deadline=None)
@given(stream=events, data=st.data())
def test_pending_deletions_kept_per_write_equal_a_scan_of_the_registers(stream, data) -> None:
    """The ledger keeps its pending deletions up to date write by write; after any batching,
    preview, copy, restore or pickle they are what a scan of the registers finds."""
    import pickle

    led = BaseLedger.for_plan(data.draw(st.sampled_from([REACH, UNKEYED])))
    rest = list(stream)
    while rest:
        n = data.draw(st.integers(1, len(rest)))
        batch, rest = rest[:n], rest[n:]
        if data.draw(st.booleans()):
            led.preview(batch)
        led.apply(batch)
        assert led.pending_deletions() == _scanned_pending(led)
        # (a keyed ledger holds its key getters, closures: regions pickle unkeyed ones)
        how = data.draw(st.sampled_from(["keep", "copy", "restore"]
                                        + ([] if led.keys else ["pickle"])))
        if how == "copy":
            led = led.copy()
        elif how == "restore":
            fresh = BaseLedger(led.keys, led.lifetimes)
            fresh.restore(json.loads(json.dumps(led.snapshot())))
            led = fresh
        elif how == "pickle":
            led = pickle.loads(pickle.dumps(led))
        assert led.pending_deletions() == _scanned_pending(led)
    # a ledger pickled before it kept them rebuilds them once
    del led.__dict__["_orphans"]
    assert led.pending_deletions() == _scanned_pending(led)


def test_stale_updates_reach_the_batch_stats() -> None:
    eng = Engine(UNKEYED, "auto")
    f = Fact("l", ("a", "b", 1))
    eng.apply([("+", f, 1.0, 0, "s")])
    stats = eng.apply([("+", f, 1.0, 0, "s"), ("-", f, 0.5, 0, "s")]).stats
    assert (stats.ledger_duplicates, stats.ledger_superseded) == (1, 1)
    assert eng.contains(f)


# soft state ------------------------------------------------------------------------------

SOFT = plan_program(parse_program("""
materialize(link, 10, infinity, keys(1,2)).
materialize(reach, infinity, infinity, keys(1,2)).
r1 reach(@S,D) :- link(@S,D,C).
r2 reach(@S,D) :- link(@S,Z,C), reach(@Z,D).
""", "soft.ndlog"))


def test_a_link_whose_refreshes_stop_expires() -> None:
    eng = Engine(SOFT, "psn")
    eng.apply([("+", link("a", "b"), 0.0, 1, "c"), ("+", link("b", "c"), 0.0, 2, "c")])
    eng.apply([("+", link("a", "b"), 8.0, 3, "c")])  # a refresh; b-c is not refreshed
    assert {f.args for f in eng.view("reach")} == {("a", "b"), ("b", "c"), ("a", "c")}
    d = eng.apply([("+", link("c", "d"), 10.0, 4, "c")])  # the clock passes 0 + 10
    assert d.removed["link"] == {("b", "c", 1)}
    assert {f.args for f in eng.view("reach")} == {("a", "b"), ("c", "d")}
    eng.apply([("+", link("x", "y"), 18.0, 5, "c")])  # and 8 + 10
    assert {f.args for f in eng.view("reach")} == {("c", "d"), ("x", "y")}


def _soft_oracle(stream: list[tuple]) -> set[Fact]:
    regs: dict[tuple, tuple] = {}
    for s, f, t, seq, src in stream:
        reg = f.args[:2]
        key = (t, 0, src, seq, s == "-")
        if reg not in regs or key > regs[reg][0]:
            regs[reg] = (key, s, f)
    clock = max((u[2] for u in stream), default=0.0)
    return {f for (t, *_), s, f in regs.values() if s == "+" and t + 10 > clock}


@settings(max_examples=80, deadline=None)
@given(stream=events, data=st.data())
def test_soft_state_is_exact_and_order_free(stream, data) -> None:
    """Whatever the batching and order, the links are those whose latest event is an
    insertion younger than the lifetime at the last event's time, and the views follow."""
    shuffled = data.draw(st.permutations(stream))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=3)))
    eng = Engine(SOFT, data.draw(st.sampled_from(["psn", "dred", "auto", "counting"])))
    for i, j in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        eng.apply(shuffled[i:j])
        now = eng.state.ledger.present()
        assert {r: set(v) for r, v in eng.views().items() if v} == {
            r: set(v) for r, v in evaluate_program(SOFT, now).items() if v}
    assert eng.state.ledger.present() == _soft_oracle(stream)


def test_balance_view_for_counting_callers() -> None:
    led = BaseLedger()
    led.apply([("+", link("a", "b")), ("-", link("x", "y"))])
    assert led.balance == {link("a", "b"): 1, link("x", "y"): -1}


def test_a_tied_stamp_goes_to_the_deletion_then_the_larger_fact() -> None:
    """One event with two meanings: the same (time, seq, source) on one key. Either order
    of arrival gives the deletion, and between insertions the larger fact by sort_key."""
    for batch in ([("+", link("a", "b", 7), 5.0, 1), ("+", link("a", "b", 1), 5.0, 1)],
                  [("+", link("a", "b", 1), 5.0, 1), ("+", link("a", "b", 7), 5.0, 1)]):
        for split in (False, True):
            led = BaseLedger.for_plan(REACH)
            if split:
                led.apply(batch[:1])
                led.apply(batch[1:])
            else:
                led.apply(batch)
            assert led.present() == {link("a", "b", 7)}
            led.apply([("-", link("a", "b", 9), 5.0, 1)])
            assert led.present() == set()
            led.apply([("+", link("a", "b", 0), 5.0, 1)])  # the deletion still wins the tie
            assert led.present() == set()


def test_plain_writes_survive_pickle_and_keep_arrival_order() -> None:
    """A plain update's write has no fact order of its own (its arrival number is unique);
    a pickled ledger (as regions are) keeps that and later plain updates still win."""
    import pickle

    led = BaseLedger()
    led.apply([("+", link("a", "b")), ("+", link("a", "c"))])
    led.apply([("-", link("a", "b"))])
    again = pickle.loads(pickle.dumps(led))
    assert again.present() == {link("a", "c")}
    assert again.apply([("+", link("a", "b")), ("-", link("a", "b"))]) == (set(), set())
    assert again.apply([("-", link("a", "c")), ("+", link("a", "c"))]) == (set(), set())
    assert again.present() == {link("a", "c")} and again.pending_deletions() == {}


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_a_plain_batch_writes_what_the_general_loop_writes(data) -> None:
    """``BaseLedger._plain`` (a batch of plain updates, no comparisons) against the loop every
    other batch takes, on random batches of plain and timed updates over keyed and unkeyed
    relations: the same writes (stamps and arrival numbers included), stale counts, facts
    appeared and vanished, and pending deletions after every batch."""
    plain = st.tuples(st.sampled_from("+-"), st.builds(
        link, st.sampled_from("ab"), st.sampled_from("bc"), st.integers(0, 1)))
    timed = st.tuples(st.sampled_from("+-"), plain.map(lambda u: u[1]),
                      st.integers(0, 3).map(float), st.integers(0, 2))
    batches = data.draw(st.lists(st.lists(st.one_of(plain, plain, timed), max_size=6),
                                 max_size=6))
    keys = data.draw(st.sampled_from([{}, {"link": (0, 1)}]))
    fast, slow = BaseLedger(keys), BaseLedger(keys)
    slow._plain = lambda batch, write: None  # type: ignore[method-assign]
    for batch in batches:
        assert fast.apply(batch) == slow.apply(batch)
        assert fast.regs == slow.regs and fast.last == slow.last
        assert (fast.clock, fast.arrivals) == (slow.clock, slow.arrivals)
        assert fast.pending_deletions() == slow.pending_deletions()


def test_an_insertion_earlier_in_the_batch_keeps_a_deletion_from_pending() -> None:
    """The plain path looks for insertions only where the batch's last update of a register
    deletes what it did not hold: such a register has been inserted if an insertion of the
    batch reached it (also under another cost, for a keyed link), and is pending otherwise."""
    for keys in ({}, {"link": (0, 1)}):
        led = BaseLedger(keys)
        led.apply([("+", link("a", "b", 1)), ("-", link("a", "b", 1)),
                   ("-", link("c", "d"))])
        held = {reg: w.inserted for reg, w in led.regs.items()}
        assert sorted(held.values()) == [False, True]
        assert led.pending_deletions() == {link("c", "d"): 1}
        # a later batch inserts c->d and deletes it again: no longer pending
        led.apply([("+", link("c", "d", 2)), ("-", link("c", "d", 2))])
        assert led.pending_deletions() == ({} if keys else {link("c", "d"): 1})
